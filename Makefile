# Switchboard developer commands. `make run` starts the app, `make test` runs the test suite.
# Both create .venv first (Python 3.12 or newer) and install the pinned dependencies from constraints.txt.

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

# Exit status 0 when the given Python is 3.12 or newer.
PY_OK := -c 'import sys; sys.exit(sys.version_info < (3, 12))'

# A .venv whose python is missing, broken or too old is rebuilt whatever the stamp says.
ifneq ($(shell $(PY) $(PY_OK) >/dev/null 2>&1 && echo ok),ok)
$(STAMP): FORCE
endif

.PHONY: help venv run test lint constraints clean FORCE

help:
	@echo "make run          start the web server, a Celery worker, beat and the demo MCP server (http://127.0.0.1:8000/)"
	@echo "make test         run the test suite (PYTEST_ARGS='...' passes arguments to pytest)"
	@echo "make lint         ruff check ."
	@echo "make constraints  regenerate constraints.txt from .venv"
	@echo "make clean        remove .venv and var/"

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@set -euo pipefail; \
	ok() { "$$1" $(PY_OK) >/dev/null 2>&1; }; \
	if ! ok "$(PY)"; then \
	  candidates="python3.13 python3.12 python3"; \
	  if command -v pyenv >/dev/null 2>&1; then \
	    root="$$(pyenv root)"; \
	    candidates="$$candidates $$(ls -d "$$root"/versions/3.13*/bin/python3.13 2>/dev/null | sort -rV || true)"; \
	    candidates="$$candidates $$(ls -d "$$root"/versions/3.12*/bin/python3.12 2>/dev/null | sort -rV || true)"; \
	  fi; \
	  found=""; \
	  for candidate in $$candidates; do \
	    if ok "$$candidate"; then found="$$candidate"; break; fi; \
	  done; \
	  if [ -z "$$found" ]; then \
	    echo "make: Switchboard needs Python 3.12 or newer; tried: $$candidates" >&2; \
	    echo "make: install python3.12 or python3.13 (or put one in PATH) and run make again." >&2; \
	    exit 1; \
	  fi; \
	  echo "Creating $(VENV) with $$found ($$("$$found" -c 'import sys; print(sys.version.split()[0])'))"; \
	  rm -rf "$(VENV)"; \
	  "$$found" -m venv "$(VENV)"; \
	fi; \
	"$(PY)" -m pip install --quiet --upgrade pip; \
	"$(PY)" -m pip install --quiet -c constraints.txt -e ".[dev]"; \
	touch "$(STAMP)"

run: venv
	$(PY) scripts/run.py

test: venv
	$(VENV)/bin/pytest $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .

constraints: venv
	@set -euo pipefail; \
	tmp="$$(mktemp)"; \
	{ \
	  echo "# Pinned versions of every dependency of switchboard[dev], installed by \`make venv\` with"; \
	  echo "#   pip install -c constraints.txt -e \".[dev]\""; \
	  echo "# Made on Python $$($(PY) -c 'import sys; print(sys.version.split()[0])') by \`make constraints\`:"; \
	  echo "#   pip freeze --exclude-editable  (of .venv)"; \
	  echo "# Keep pins that install on every supported Python (3.12 and 3.13)."; \
	  $(VENV)/bin/pip freeze --exclude-editable; \
	} > "$$tmp"; \
	chmod 644 "$$tmp"; \
	mv "$$tmp" constraints.txt; \
	touch "$(STAMP)"; \
	echo "Wrote constraints.txt"

clean:
	rm -rf $(VENV) var

FORCE:
