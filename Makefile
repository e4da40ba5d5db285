# Two commands do all the set-up: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test check bench docs cov install clean

# A virtual environment with sidecar and its test tools. The compat editable mode puts the
# source folder on sys.path with a plain .pth line (no import hook), so the installed
# `sidecar` command starts as fast as a normal install and always runs this checkout.
# The launcher pip writes starts Python with `site`; sidecar's own rewrite of it (the same as
# `sidecar integrate` does) starts hooks without it, as an installed sidecar's hooks start.
$(STAMP): pyproject.toml bin/sidecar
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
		--config-settings editable_mode=compat -e '.[test,check,notify,redis,cost,otel,web]'
	$(BIN)/python -m sidecar.install.launcher $(BIN)/sidecar
	touch $(STAMP)

install: $(STAMP)

run: install
	@echo "make run: serving this checkout ($(CURDIR)) as a workspace, for development."
	@echo "To use sidecar in your own project, see the README's 'Quick start'."
	$(BIN)/sidecar init .
	$(BIN)/sidecar run --root .

test: install
	tests/install-hosts.sh
	tests/install-phoenix.sh
	VENV=$(VENV) tests/install-browser.sh
	$(BIN)/python -m pytest

# The gates: lint the whole repository, type-check the package strictly, and hold every module
# of the package to 400 lines (the complexity cap of 12 is ruff's C901, set in pyproject.toml),
# and build the documentation site with every warning an error (into the git-ignored site/).
check: install
	$(BIN)/ruff check .
	$(BIN)/mypy
	@awk 'FNR == 401 { print FILENAME " is over 400 lines"; bad = 1 } END { exit bad }' $$(find sidecar -name '*.py')
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The documentation site, served with live reload at http://127.0.0.1:8000.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

# How much of the command line the in-process tests cover (no process is started by them).
cov: install
	$(BIN)/python -m pytest tests/unit -q --cov=sidecar --cov-report=term

bench: install
	VENV=$(VENV) tests/install-browser.sh
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build site *.egg-info
