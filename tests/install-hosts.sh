#!/usr/bin/env bash
# Installs the real agent hosts the end-to-end tests drive, once, into a cache folder.
# Without npm it says so and the tests that need a host skip with that reason.
set -euo pipefail
CACHE="${SIDECAR_TEST_HOSTS:-${XDG_CACHE_HOME:-$HOME/.cache}/sidecar-test-hosts}"
CLAUDE_VERSION=2.1.328

if ! command -v npm >/dev/null 2>&1; then
    echo "install-hosts: npm not found; end-to-end tests with Claude Code will skip" >&2
    exit 0
fi
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
