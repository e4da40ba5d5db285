#!/usr/bin/env bash
# Installs, once, the real programs the end-to-end tests drive: Claude Code, Codex, Gemini CLI,
# opencode, Pi, GitHub Copilot CLI, Cline, Qwen Code, Factory Droid and Kilo Code (npm) and hermes-agent (its own virtual
# environment) into a cache folder, and tmux, systemd-analyze and libfaketime (the clock tests
# step a daemon's wall clock). Where a package manager is missing or an install fails it says
# so, and the tests that need that host skip saying why.
set -euo pipefail
CACHE="${SIDECAR_TEST_HOSTS:-${XDG_CACHE_HOME:-$HOME/.cache}/sidecar-test-hosts}"
CLAUDE_VERSION=2.1.332
CODEX_VERSION=0.171.0
GEMINI_VERSION=0.61.0
OPENCODE_VERSION=1.18.33
PI_VERSION=0.73.1
HERMES_VERSION=0.19.0
QWEN_VERSION=0.24.4
CLINE_VERSION=3.0.65
COPILOT_VERSION=1.0.102
# The newest releases whose Linux packages this registry has: droid's 0.225.1 and Kilo Code's
# 7.8.1 name native packages that are missing from it.
DROID_VERSION=0.215.0
KILO_VERSION=7.7.7
PYTHON="${PYTHON:-python3}"
mkdir -p "$CACHE"

# npm_host NAME PACKAGE VERSION BINARY: install a host CLI from npm into the cache, once.
npm_host() {
    local prefix="$CACHE/$1-$3"
    if [ ! -x "$prefix/node_modules/.bin/$4" ]; then
        echo "install-hosts: installing $2@$3 into $prefix" >&2
        mkdir -p "$prefix/home" "$prefix/tmp"
        # npm may warn (Claude Code wants a newer Node and its postinstall script is skipped);
        # the bundled native binary works all the same, so its presence is what is checked.
        # HOME and TMPDIR point into the cache: opencode's postinstall runs the binary, which
        # writes its folders there, and nothing of an install may land in the user's home.
        HOME="$prefix/home" TMPDIR="$prefix/tmp" npm install --no-audit --no-fund \
            --cache "$prefix/home/.npm" --prefix "$prefix" "$2@$3" >"$prefix/npm-install.log" 2>&1 || true
    fi
    if [ ! -x "$prefix/node_modules/.bin/$4" ]; then
        # A host that cannot be installed here makes its tests skip, saying why; not fail.
        echo "install-hosts: $2 did not install; see $prefix/npm-install.log" >&2
    fi
}

# Copilot CLI's native binary unpacks its JavaScript (about 350 MB) into
# $XDG_CACHE_HOME/copilot/pkg/ on its first start: done once here, into the cache, so that the
# tests (which point XDG_CACHE_HOME there) never pay it again.
copilot_unpack() {
    local prefix="$CACHE/copilot-$COPILOT_VERSION"
    if [ -x "$prefix/node_modules/.bin/copilot" ] && [ ! -d "$prefix/xdg-cache/copilot/pkg" ]; then
        echo "install-hosts: unpacking copilot into $prefix/xdg-cache" >&2
        HOME="$prefix/home" XDG_CACHE_HOME="$prefix/xdg-cache" COPILOT_OFFLINE=true \
            COPILOT_AUTO_UPDATE=false "$prefix/node_modules/.bin/copilot" --version \
            </dev/null >>"$prefix/npm-install.log" 2>&1 || true
    fi
}

if command -v npm >/dev/null 2>&1; then
    npm_host claude-code @anthropic-ai/claude-code "$CLAUDE_VERSION" claude
    npm_host codex @openai/codex "$CODEX_VERSION" codex
    npm_host gemini-cli @google/gemini-cli "$GEMINI_VERSION" gemini
    npm_host opencode opencode-ai "$OPENCODE_VERSION" opencode
    npm_host pi @mariozechner/pi-coding-agent "$PI_VERSION" pi
    npm_host qwen @qwen-code/qwen-code "$QWEN_VERSION" qwen
    npm_host cline cline "$CLINE_VERSION" cline  # a 434 MB native binary
    npm_host copilot @github/copilot "$COPILOT_VERSION" copilot
    npm_host droid droid "$DROID_VERSION" droid
    npm_host kilo @kilocode/cli "$KILO_VERSION" kilo
    copilot_unpack
else
    echo "install-hosts: npm not found; end-to-end tests with the npm hosts will skip" >&2
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

if ! ls /usr/lib/*/faketime/libfaketimeMT.so.1 /usr/lib/faketime/libfaketimeMT.so.1 >/dev/null 2>&1 \
        && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "install-hosts: installing libfaketime (for tests/daemon/test_clocks.py and test_redis_clock_daemon.py)" >&2
    apt-get update -qq >/dev/null && apt-get install -y -qq faketime libfaketime >/dev/null || true
fi

# The shared-workspace tests run each "machine" in a network namespace of its own, linked by a
# veth pair (`ip`, iproute2), and fake one machine's wall clock with libfaketime and a small
# shim compiled with the C compiler (tests/support/netmachines.py, fakeclock.py).
if ! command -v ip >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "install-hosts: installing iproute2 (for the network machines' veths)" >&2
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends iproute2 >/dev/null || true
fi
if ! command -v cc >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "install-hosts: installing gcc (for the faked clock's monotonic-sleep shim)" >&2
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null || true
fi

# Qwen Code's end-to-end test drives its interactive UI in a terminal multiplexer (only there
# does /quit fire its SessionEnd).
if ! command -v tmux >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "install-hosts: installing tmux (for Qwen Code's interactive end-to-end test)" >&2
    apt-get update -qq >/dev/null && apt-get install -y -qq tmux >/dev/null || true
fi

# The coordination tests run a real Redis, one `redis-server` per test on a loopback port or
# a socket in its tmp folder (tests/support/redis_server.py); the system's service is never
# started: `policy-rc.d` refusing every start keeps the package's postinstall from doing so.
if ! command -v redis-server >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "install-hosts: installing redis-server (for the Redis coordination tests)" >&2
    policy=/usr/sbin/policy-rc.d
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy"
        trap 'rm -f "$policy"' EXIT
    fi
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends redis-server >/dev/null || true
fi

# doctor's shared-filesystem note is tested on a real FUSE mount (bindfs, in a private mount
# namespace: tests/daemon/test_doctor_mounts_daemon.py).
if ! command -v bindfs >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "install-hosts: installing bindfs (for doctor's shared-filesystem test)" >&2
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends bindfs >/dev/null || true
fi
