#!/usr/bin/env bash
# Installs, once, the real programs the end-to-end tests drive: Claude Code and Codex (npm)
# and hermes-agent (its own virtual environment) into a cache folder, and systemd-analyze.
# Where a package manager is missing it says so, and the tests that need it skip saying why.
set -euo pipefail
CACHE="${SIDECAR_TEST_HOSTS:-${XDG_CACHE_HOME:-$HOME/.cache}/sidecar-test-hosts}"
CLAUDE_VERSION=2.1.328
CODEX_VERSION=0.169.0
HERMES_VERSION=0.19.0
PYTHON="${PYTHON:-python3}"
mkdir -p "$CACHE"

if command -v npm >/dev/null 2>&1; then
    prefix="$CACHE/claude-code-$CLAUDE_VERSION"
    if [ ! -x "$prefix/node_modules/.bin/claude" ]; then
        echo "install-hosts: installing Claude Code $CLAUDE_VERSION into $prefix" >&2
        mkdir -p "$prefix"
        # npm warns that the package wants a newer Node and skips its postinstall script; the
        # bundled native binary works all the same, so its presence is what is checked.
        npm install --no-audit --no-fund --prefix "$prefix" "@anthropic-ai/claude-code@$CLAUDE_VERSION" \
            >"$prefix/npm-install.log" 2>&1 || true
    fi
    if [ ! -x "$prefix/node_modules/.bin/claude" ]; then
        echo "install-hosts: Claude Code did not install; see $prefix/npm-install.log" >&2
        exit 1
    fi
    prefix="$CACHE/codex-$CODEX_VERSION"
    if [ ! -x "$prefix/node_modules/.bin/codex" ]; then
        echo "install-hosts: installing Codex $CODEX_VERSION into $prefix" >&2
        mkdir -p "$prefix"
        npm install --no-audit --no-fund --prefix "$prefix" "@openai/codex@$CODEX_VERSION" \
            >"$prefix/npm-install.log" 2>&1 || true
    fi
    if [ ! -x "$prefix/node_modules/.bin/codex" ]; then
        echo "install-hosts: Codex did not install; see $prefix/npm-install.log" >&2
        exit 1
    fi
else
    echo "install-hosts: npm not found; end-to-end tests with Claude Code and Codex will skip" >&2
fi

venv="$CACHE/hermes-agent-$HERMES_VERSION"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import hermes_cli.plugins, orjson" 2>/dev/null; then
    echo "install-hosts: installing hermes-agent $HERMES_VERSION into $venv" >&2
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "hermes-agent==$HERMES_VERSION" orjson
fi

if ! command -v systemd-analyze >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "install-hosts: installing systemd (for systemd-analyze verify)" >&2
    apt-get update -qq >/dev/null && apt-get install -y -qq systemd >/dev/null || true
fi
