# Two commands do all the set-up: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench install clean

# A virtual environment with sidecar and its test tools. The compat editable mode puts the
# source folder on sys.path with a plain .pth line (no import hook), so the installed
# `sidecar` command starts as fast as a normal install and always runs this checkout.
$(STAMP): pyproject.toml bin/sidecar
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
		--config-settings editable_mode=compat -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/sidecar init .
	$(BIN)/sidecar run --root .

test: install
	tests/install-hosts.sh
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info
