#!/usr/bin/env bash
# Installs, once, what the web view's browser tests drive (tests/web/test_web_browser.py,
# tests/support/browser.py): Debian's `chromium`, and Playwright for Python in the project's
# virtual environment, which then drives that chromium (`executable_path`). No browser is
# downloaded: Playwright's own `playwright install` is never run. A chromium that cannot be
# installed here is said so; the browser tests then fail saying what to install.
set -euo pipefail
VENV="${VENV:-.venv}"
PLAYWRIGHT_VERSION=1.65.2

if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "install-browser: installing chromium (for the web view's browser tests)" >&2
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends chromium >/dev/null || true
fi
command -v chromium >/dev/null 2>&1 || echo "install-browser: chromium did not install (apt-get install chromium)" >&2

# The installed version is asked of pip's metadata, not by importing Playwright (which costs
# a second on every `make test`).
if ! "$VENV/bin/python" -m pip show playwright 2>/dev/null | grep -qx "Version: $PLAYWRIGHT_VERSION"; then
    echo "install-browser: installing playwright $PLAYWRIGHT_VERSION into $VENV" >&2
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "playwright==$PLAYWRIGHT_VERSION" \
        || echo "install-browser: playwright did not install" >&2
fi
