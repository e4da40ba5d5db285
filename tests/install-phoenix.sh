#!/usr/bin/env bash
# Installs, once, Arize Phoenix: the real OpenTelemetry backend the export tests send spans to
# and read them back from (tests/support/phoenix.py). It gets a virtual environment of its own
# in the hosts' cache folder, so none of its many dependencies meet the project's. A Phoenix
# that cannot be installed here is said so; the tests that need it then skip saying why.
set -euo pipefail
CACHE="${SIDECAR_TEST_HOSTS:-${XDG_CACHE_HOME:-$HOME/.cache}/sidecar-test-hosts}"
PHOENIX_VERSION=20.26.1
PYTHON="${PYTHON:-python3}"
venv="$CACHE/arize-phoenix-$PHOENIX_VERSION"
mkdir -p "$CACHE"

# The stamp is written only after a whole install, so a venv cut short is made again (importing
# Phoenix's server to check would cost seconds on every `make test`).
if [ ! -x "$venv/bin/phoenix" ] || [ ! -e "$venv/.installed" ]; then
    echo "install-phoenix: installing arize-phoenix $PHOENIX_VERSION into $venv" >&2
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "arize-phoenix==$PHOENIX_VERSION" \
        >"$CACHE/arize-phoenix-$PHOENIX_VERSION.log" 2>&1 \
        && touch "$venv/.installed" \
        || echo "install-phoenix: arize-phoenix did not install; see $CACHE/arize-phoenix-$PHOENIX_VERSION.log" >&2
fi
