# ctxlab — two commands: `make run` (serve the dashboard) and `make test` (the whole suite).
# Both create .venv on first use; pip runs again only when pyproject.toml changes.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
ADDR   ?= 127.0.0.1:8000

.PHONY: run test test-fast lint typecheck test-unit test-browser test-distributed conformance env clean help

help:
	@echo "make run               serve http://$(ADDR) (SQLite, in-process Celery worker, in-memory channels)"
	@echo "                       another address: make run ADDR=0.0.0.0:8000 (then DJANGO_ALLOWED_HOSTS=<name>)"
	@echo "make test              lint (ruff, vulture) + mypy + unit/db tests + browser tests"
	@echo "make test-fast         the inner loop: unit/db tests not marked slow (under a minute)"
	@echo "make test-distributed  db-backed tests against DATABASE_URL / CELERY_BROKER_URL / CHANNEL_LAYER_URL"
	@echo "make conformance       the originals (tests/conformance/requirements.txt) against our strategies"

env: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing ctxlab and its dependencies into $(VENV)/ (about a minute, once)"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[scale,dev]'
	@touch $(STAMP)

# `make run` serves with DEBUG off (friendly error pages, no technical details); set
# DJANGO_DEBUG=1 for Django's debug pages. Without DJANGO_SECRET_KEY a random key is made
# once and kept in $(SECRET_FILE) (git-ignored, readable by you only).
DATA_DIR    ?= $(or $(CTXLAB_DATA_DIR),var)
SECRET_FILE := $(DATA_DIR)/secret_key
RUN_ENV      = DJANGO_DEBUG=$${DJANGO_DEBUG:-0} \
               DJANGO_SECRET_KEY="$${DJANGO_SECRET_KEY:-$$(cat $(SECRET_FILE))}"

run: $(STAMP)
	@mkdir -p $(DATA_DIR)
	@test -s $(SECRET_FILE) || (umask 077; $(BIN)/python -c \
		"import secrets; print(secrets.token_urlsafe(50))" > $(SECRET_FILE))
	@$(RUN_ENV) $(BIN)/python manage.py migrate --noinput -v 0
	@$(RUN_ENV) $(BIN)/python manage.py ensure_local_user >/dev/null
	@if $(RUN_ENV) $(BIN)/python manage.py help load_demo >/dev/null 2>&1; then \
		$(RUN_ENV) $(BIN)/python manage.py load_demo >/dev/null; \
	else echo "(no load_demo command yet: skipping demo data)"; fi
	@echo "ctxlab on http://$(ADDR)/ · $$($(RUN_ENV) $(BIN)/python manage.py ensure_local_user \
		| sed 's/^Local account exists\. //')"
	@$(RUN_ENV) $(BIN)/python manage.py serve $(ADDR)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/vulture

typecheck: $(STAMP)
	$(BIN)/mypy

test-unit: $(STAMP)
	$(BIN)/pytest -q -p no:playwright --ignore=tests/browser

# The inner loop: everything but the tests marked slow (tests/conftest.py: browser,
# distributed, perf goldens, corpus-wide checks, subprocess servers, and every test measured
# at 0.5 s or more in tests/slow_tests.txt). `make test` runs them all.
test-fast: $(STAMP)
	$(BIN)/pytest -q -p no:playwright --ignore=tests/browser -m "not slow"

# Playwright's sync API keeps an event loop in the main thread: browser tests get their own
# pytest process.
test-browser: $(STAMP)
	DJANGO_ALLOW_ASYNC_UNSAFE=true $(BIN)/pytest -q tests/browser

test: lint typecheck test-unit test-browser

# The distributed CI leg: same code, services chosen by environment (see .ci/run).
# First a comparison of the five presets on a separate `celery worker` process with
# progress over the Redis channel layer (its own pytest process: no embedded worker there
# to steal its tasks), then the database-backed suite on the same services.
DISTRIBUTED_TEST := tests/replay_app/test_replay_distributed.py
test-distributed: $(STAMP)
	@test -n "$$DATABASE_URL" || { echo "set DATABASE_URL (postgres://...)"; exit 2; }
	$(BIN)/pytest -q -p no:playwright -rs $(DISTRIBUTED_TEST)
	$(BIN)/pytest -q -p no:playwright --ignore=tests/browser --ignore=tests/engine \
		--ignore=$(DISTRIBUTED_TEST) -m "not browser"

# Conformance (development time, not in `make test`): the originals that are installable
# (tests/conformance/requirements.txt, pinned) in a venv of their own, .venv-conformance
# (git-ignored), with ctxlab's engine installed from this tree; each test runs an original
# and our strategy on the same messages and compares what they keep. Only tests/conformance/
# runs there (its own pytest.ini: none of the Django suite's configuration or conftests).
CONFORMANCE_VENV := .venv-conformance
CONFORMANCE_REQS := tests/conformance/requirements.txt
CONFORMANCE_STAMP := $(CONFORMANCE_VENV)/.installed-stamp
$(CONFORMANCE_STAMP): $(CONFORMANCE_REQS) pyproject.toml
	@test -x $(CONFORMANCE_VENV)/bin/python || $(PYTHON) -m venv $(CONFORMANCE_VENV)
	@echo "Installing the originals and ctxlab into $(CONFORMANCE_VENV)/ (once per requirements change)"
	@$(CONFORMANCE_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		-e . -r $(CONFORMANCE_REQS) pytest
	@touch $(CONFORMANCE_STAMP)

conformance: $(CONFORMANCE_STAMP)
	$(CONFORMANCE_VENV)/bin/python -m pytest -c tests/conformance/pytest.ini \
		--rootdir tests/conformance -q -rs tests/conformance

clean:
	rm -rf var/test_db_* .pytest_cache .mypy_cache .ruff_cache artifacts
