FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
# The [server] extra at the versions of requirements.lock, without the dev tools (`make lock`).
COPY requirements-server.lock ./
RUN pip install --no-cache-dir "uv==0.13.9" \
    && uv pip install --system --no-cache --require-hashes -r requirements-server.lock
COPY . .
# The wheel holds only the library and the `rootcause` command; the apps run from /app. The same
# wheel goes to /app/dist, which /downloads/ serves (`make downloads` outside the image).
RUN uv pip install --system --no-cache --no-deps . \
    && pip wheel --no-cache-dir --quiet --no-deps --wheel-dir dist . \
    && DEBUG=1 python manage.py collectstatic --noinput
EXPOSE 8000
# Threads, bounded headers and the upload deadline are gunicorn.conf.py's (docs/operations.md).
CMD ["gunicorn", "-c", "gunicorn.conf.py", "config.wsgi:application"]
