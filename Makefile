# rootcause — developer commands. `make run` and `make test` are the whole quick start.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
UV_VERSION := 0.13.9
PORT ?= 8000
SHARED ?= ../shared
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
# The release /downloads/ serves (DOWNLOADS_DIR of the settings is this directory by default).
DIST ?= dist
WHEEL := $(DIST)/rootcause-$(VERSION)-py3-none-any.whl
VSIX := editors/vscode/rootcause-vscode.vsix
VSCODE_VERSION := $(shell sed -n 's/^  "version": "\(.*\)",/\1/p' editors/vscode/package.json)

.PHONY: install lock check-client downloads run worker beat test test-fast lint format eval bench loadtest clean vscode realruns

# The marker file is rebuilt whenever the lock file changes, so `make run` installs only when needed.
$(VENV)/.installed: requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"
	$(BIN)/uv pip sync --quiet --python $(BIN)/python requirements.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e .
	touch $@

# The dependencies' bytecode, as `pip install` writes it for a user: `uv pip sync` writes none,
# and with PYTHONDONTWRITEBYTECODE set every command would compile typer, pydantic, yaml and
# msgspec again (half a second of CPU in each `rootcause` run: issue 33's `diagnose --offline`
# measured 2.8x the naive grep here against 5.2x in the light install). Once after each sync.
$(VENV)/.bytecode: $(VENV)/.installed
	$(BIN)/python -m compileall -q -j 0 "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
	touch $@

# The package's bytecode, as `pip install` writes it for a user: an editable install has none,
# and with PYTHONDONTWRITEBYTECODE set every command would compile its imports (a twentieth of a
# second of `rootcause mask`). Only the sources changed since the last run are compiled.
install: $(VENV)/.bytecode
	$(BIN)/python -m compileall -q rootcause

# After changing the dependencies in pyproject.toml. requirements.lock (server and dev extras) is
# what `make install` syncs; the client's lock (`.ci/check-client`) and the server's (the Docker
# image) are compiled under it, so all three pin the same versions.
lock: install
	$(BIN)/uv pip compile --quiet --python-version 3.11 --extra server --extra dev pyproject.toml \
		-o requirements.lock --generate-hashes
	$(BIN)/uv pip compile --quiet --python-version 3.11 pyproject.toml -c requirements.lock \
		--generate-hashes -o requirements-client.lock
	$(BIN)/uv pip compile --quiet --python-version 3.11 --extra server pyproject.toml \
		-c requirements.lock --generate-hashes -o requirements-server.lock

# `pip install .` in a fresh virtualenv gives the client alone, light enough, and it works.
check-client: install
	.ci/check-client

# The client wheel and, once `make vscode` has built it, the VS Code extension, into $(DIST) for
# the service's /downloads/ page (docs/editors.md, README). The wheel is rebuilt when the library
# changes; with the project's setuptools, no build environment to fetch.
downloads: $(WHEEL)
	@if [ -f $(VSIX) ]; then cp $(VSIX) $(DIST)/rootcause-vscode-$(VSCODE_VERSION).vsix; fi

$(WHEEL): $(VENV)/.installed pyproject.toml $(shell find rootcause -type f -not -path '*/__pycache__/*' 2>/dev/null)
	mkdir -p $(DIST)
	rm -f $(DIST)/rootcause-*.whl
	$(BIN)/python -m pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation \
		--wheel-dir $(DIST) .
	rm -rf build  # setuptools' in-tree build: a second copy of the library for tools to trip on

# PORT goes to the settings too: without SITE_URL, the links in e-mails and alerts point at it.
run: install downloads
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py load_catalogue
	PORT=$(PORT) $(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

worker: install
	$(BIN)/celery -A config worker --loglevel=INFO

beat: install
	$(BIN)/celery -A config beat --loglevel=INFO

# PostgreSQL and Redis from DATABASE_URL / REDIS_URL or the default ports, or else throwaway ones
# started (and stopped) by tests/with_services.py. Extra pytest arguments: make test PYTEST_ARGS=...
# On TEST_PROCESSES processes (pytest-xdist): the end-to-end and timing tests together in one of
# them, in order (tests/conftest.py); TEST_PROCESSES=0 runs everything in this one.
TEST_PROCESSES ?= 2
# .venv-realruns (below): tests/live runs real torchrun jobs from it, and skips without it.
# tests/editors drive the built VS Code extension: `make vscode` runs them, after building it.
test: install .venv-realruns/.installed
	$(BIN)/python -m tests.with_services -- $(BIN)/pytest -n $(TEST_PROCESSES) --dist loadgroup \
		--ignore=tests/editors $(PYTEST_ARGS)

# The tests that need no service (no PostgreSQL, Redis, worker, browser or server: the rule is
# tests/conftest.py's needs_services), less the slow fuzz and timing ones, on TEST_PROCESSES.
# PostgreSQL and Redis point at a closed port, so a test on the wrong side of the rule fails
# instead of using a service of this machine; slow (timing) and heavy (seconds of CPU) tests are
# left to `make test`. A skip fails the run, and so does collecting
# nothing (pytest's exit status 5). PYTHONDONTWRITEBYTECODE is emptied: the environment may set it,
# and then every process the tests start (the CLI, manage.py, each xdist worker) compiles every
# module it imports again instead of reading the __pycache__ the first one wrote.
test-fast: install
	PYTHONDONTWRITEBYTECODE= \
	DATABASE_URL=postgres://postgres@127.0.0.1:9/none REDIS_URL=redis://127.0.0.1:9/0 \
		$(BIN)/pytest -n $(TEST_PROCESSES) -q --without-services -m "not slow and not heavy" -p no:cacheprovider \
		$(PYTEST_ARGS)

# The VS Code extension (editors/vscode, docs/editors.md): dev dependencies from its lock, type check,
# tests against the real client of .venv, and the .vsix; then tests/editors: the extension and the
# real client against a live service (bundles, "Was this right?", the install lines of /downloads/).
# Needs Node.js 20 and npm.
vscode: install
	cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error \
		&& ROOTCAUSE_CLIENT=$(CURDIR)/$(BIN)/rootcause npm test \
		&& npm run package
	$(MAKE) --no-print-directory downloads
	$(BIN)/python -m tests.with_services -- $(BIN)/pytest tests/editors -n 0 -q -p no:cacheprovider

lint: install
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy .
	$(BIN)/lint-imports --no-cache
	$(BIN)/python manage.py makemigrations --check --dry-run

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Every corpus of $(SHARED)/corpus and bench/realruns/corpus (dev and sealed apart), written to
# docs/accuracy.md with the date and commit. Without $(SHARED), the in-repo corpora alone. Then the
# hang bundles of bench/hangruns, with PyTorch's fr_trace beside them when .venv-realruns exists.
eval: install
	$(BIN)/python -m bench.eval --shared $(SHARED) --write-docs

# The run-produced corpus (bench/realruns/README.md): real PyTorch programs on CPU, in a virtualenv
# of their own so torch never enters .venv. pip, not uv: it takes the CPU wheel of /opt/wheels.
REALRUNS_VENV := .venv-realruns
$(REALRUNS_VENV)/.installed: bench/realruns/requirements.txt
	test -x $(REALRUNS_VENV)/bin/python || $(PYTHON) -m venv $(REALRUNS_VENV)
	$(REALRUNS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		$(if $(wildcard /opt/wheels),--find-links /opt/wheels) -r bench/realruns/requirements.txt
	touch $@

realruns: $(REALRUNS_VENV)/.installed
	$(REALRUNS_VENV)/bin/python bench/realruns/generate.py

bench: install
	$(BIN)/python -m bench.run

# A live real-mode stack on this machine under locust (bench/loadtest/): its own redis-server on a
# free port, a fresh PostgreSQL database on LOADTEST_POSTGRES (default 127.0.0.1:5432), gunicorn,
# 4 Celery worker processes and beat; all stopped, and the database dropped, at the end or on
# Ctrl-C. Two to three minutes; exits 1 if a submission was lost or left unfinished or a 5xx came.
loadtest: install
	$(BIN)/python -m bench.loadtest

clean:
	rm -rf $(VENV) build *.egg-info $(DIST)
