"""`sidecar sessions` over sessions a real daemon recorded from real `sidecar emit` calls, and
its colour on a real terminal (a pty): painted there, plain with NO_COLOR."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess

import orjson

from helpers import SIDECAR, emit, end_session, run_cli, wait_until

ANSI = re.compile(rb"\x1b\[[0-9;]*m")


def on_a_terminal(*args: str, env: dict[str, str] | None = None) -> bytes:
    """What the command prints with a pty as its stdout, as a user's terminal would show."""
    main, child = pty.openpty()
    clean = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    proc = subprocess.Popen([SIDECAR, *args], stdout=child, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, env={**clean, "TERM": "xterm", **(env or {})})
    os.close(child)
    said = b""
    try:
        while select.select([main], [], [], 20)[0]:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            said += chunk
    finally:
        proc.wait(20)
        os.close(main)
    return said


def test_sessions_lists_what_a_daemon_recorded_and_paints_it_on_a_terminal(
        workspace, start_daemon):
    start_daemon(workspace.root)
    end_session(workspace.root, "s-old", "codex")
    emit(workspace.root, None, "session-start", "--session-id", "s-new", "--source",
         "claude-code")
    emit(workspace.root, None, "turn-start", "--session-id", "s-new", "--source", "claude-code")

    def listed():
        doc = orjson.loads(run_cli("sessions", "--json").stdout)
        states = {s["sessionId"]: s["state"] for s in doc["sessions"]}
        return doc if states == {"s-new": "working", "s-old": "ended"} else None

    doc = wait_until(listed, 15)
    assert [s["sessionId"] for s in doc["sessions"]] == ["s-new", "s-old"]  # newest first
    assert doc["sessions"][1]["endedWhy"] == "the host ended it"
    text = run_cli("sessions").stdout.decode()
    # One workspace: no WORKSPACE column, the session's id second.
    assert [line.split()[1] for line in text.splitlines()[1:]] == ["s-new", "s-old"]
    assert not ANSI.search(text.encode())  # piped: plain

    painted = on_a_terminal("sessions")
    assert b"\x1b[1mHOST" in painted and b"\x1b[32mworking" in painted, painted
    assert b"s-new" in painted and b"s-old" in painted
    plain = on_a_terminal("sessions", env={"NO_COLOR": "1"})
    assert b"s-new" in plain and not ANSI.search(plain), plain
    status = on_a_terminal("status", "--root", str(workspace.root), "--session", "s-n")
    assert b"\x1b[1msession    claude-code s-new" in status, status
    # Its state as `sessions` says it, from the one rule (views/activity.py).
    story = run_cli("status", "--root", str(workspace.root), "--session", "s-new").stdout.decode()
    assert "\nstate      working" in story, story
    assert orjson.loads(run_cli("status", "--root", str(workspace.root), "--session", "s-old",
                                "--json").stdout)["state"] == "ended"
