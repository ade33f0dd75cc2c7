# rootcause — developer commands. `make run` and `make test` are the whole quick start.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
UV_VERSION := 0.13.9
PORT ?= 8000
SHARED ?= ../shared

.PHONY: install run worker beat test test-fast lint format eval bench clean

# The marker file is rebuilt whenever the lock file changes, so `make run` installs only when needed.
$(VENV)/.installed: requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"
	$(BIN)/uv pip sync --quiet --python $(BIN)/python requirements.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e .
	touch $@

install: $(VENV)/.installed

run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py load_catalogue
	$(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

worker: install
	$(BIN)/celery -A config worker --loglevel=INFO

beat: install
	$(BIN)/celery -A config beat --loglevel=INFO

test: install
	$(BIN)/python -m tests.services_check
	$(BIN)/pytest

lint: install
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy .
	$(BIN)/lint-imports --no-cache
	$(BIN)/python manage.py makemigrations --check --dry-run

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

eval: install
	$(BIN)/python -m bench.eval --corpus $(SHARED)/corpus/dev

bench: install
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) build *.egg-info
