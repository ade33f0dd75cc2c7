FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
# The [server] extra at the versions of requirements.lock, without the dev tools (`make lock`).
COPY requirements-server.lock ./
RUN pip install --no-cache-dir "uv==0.13.9" \
    && uv pip install --system --no-cache --require-hashes -r requirements-server.lock
COPY . .
# The wheel holds only the library and the `rootcause` command; the apps run from /app.
RUN uv pip install --system --no-cache --no-deps . \
    && DEBUG=1 python manage.py collectstatic --noinput
EXPOSE 8000
CMD ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]
