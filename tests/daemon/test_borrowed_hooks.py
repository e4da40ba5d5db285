"""Borrowed hooks, with a real daemon: another host that runs Claude Code's hooks (Cursor's CLI
runs `.claude/settings*.json`, Devin's CLI loads `.claude/`) sends its events through sidecar's
Claude Code hook, `sidecar emit --source claude-code`. Its session is recorded as that host's,
and its follow-up is skipped with the reason: `claude` is never run on it."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from helpers import SIDECAR, emit, read_json, run_cli, session_record, wait_until

SESSION = "6c1f0a52-3b8e-4d7a-9f21-0e5d4c3b2a19"  # a UUID: Claude Code's shape of id
EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")

# The resume command config.toml gives Claude Code: it only writes down that it ran.
CLAUDE = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text(' '.join(sys.argv[2:]))"

# Devin's CLI, as far as a hook can tell: a program of that name that runs each hook through
# `sh -c`, with the payload on standard input; told `exits-first`, it exits before the hook runs
# (as Claude Code 2.1.332 does before its SessionEnd hook), which then has another parent.
DEVIN = '#!/bin/sh\nif [ -n "$3" ]; then (sleep 0.2; sh -c "$1" < "$2") & exit 0; fi\nsh -c "$1" < "$2"\n'


def follow_ups_resume_with_a_recording_claude(ws, config_home: Path, tmp_path: Path) -> Path:
    """post-task enabled and trusted, due a second after an end; `claude` stands in for the
    real one and leaves a file if it ever runs. Returns that file."""
    ran = tmp_path / "claude-ran"
    argv = [sys.executable, "-c", CLAUDE, str(ran), "--resume", "{session_id}", "-p", "{prompt}"]
    with open(config_home / "config.toml", "a") as config:
        config.write(f'[resume]\n"claude-code" = {orjson.dumps(argv).decode()}\n')
    doc = read_json(ws.hooks_file)
    doc["hooks"]["post-task"]["delaySeconds"] = 1
    ws.hooks_file.write_bytes(orjson.dumps(doc))
    assert run_cli("hooks", "trust", "--yes", "--root", str(ws.root)).returncode == 0
    return ran


def through_cursor(ws, tmp_path: Path, event: str) -> None:
    """A payload as Cursor's CLI hands it to a Claude Code hook: Claude Code's fields beside
    its own (`conversation_id`, `generation_id`, `cursor_version`, `workspace_roots`)."""
    body = {"session_id": SESSION, "hook_event_name": event, "cwd": str(ws.root),
            "conversation_id": SESSION, "generation_id": "0f3e9d2c-5b1a-4c8e-b7d6-1a2b3c4d5e6f",
            "model": "gpt-5", "cursor_version": "1.7.52", "workspace_roots": [str(ws.root)]}
    done = emit(ws.root, orjson.dumps(body), "--source", "claude-code")
    assert done.returncode == 0, done.stderr


def through_devin(ws, tmp_path: Path, event: str, *how: str) -> None:
    """A payload of Claude Code's own shape, from a hook that a program called `devin` ran."""
    devin = tmp_path / "bin" / "devin"
    if not devin.exists():
        devin.parent.mkdir()
        devin.write_text(DEVIN)
        devin.chmod(0o755)
    payload = tmp_path / f"{event}.json"
    payload.write_bytes(orjson.dumps({"session_id": SESSION, "hook_event_name": event,
                                      "cwd": str(ws.root)}))
    subprocess.run([str(devin), f"{shlex.quote(SIDECAR)} emit --source claude-code", str(payload), *how],
                   cwd=ws.root, check=True, capture_output=True, timeout=30)


@pytest.mark.parametrize(("host", "send"), [("cursor", through_cursor), ("devin", through_devin)])
def test_a_session_through_the_claude_code_hook_from_another_host_is_never_resumed_with_claude(
        workspace, config_home, start_daemon, tmp_path, host, send):
    ran = follow_ups_resume_with_a_recording_claude(workspace, config_home, tmp_path)
    start_daemon(workspace.root)
    for event in EVENTS:
        send(workspace, tmp_path, event)

    history = wait_until(lambda: read_json(workspace.hooks_file)["hooks"]["post-task"]["history"], 20)
    assert history[0]["status"].startswith("skipped: ") and "never resumes it with `claude`" \
        in history[0]["status"], history
    assert not ran.exists()  # `claude` never ran
    record = session_record(workspace, SESSION, host)
    assert record is not None and record["metadata"]["host"] == host
    assert record["status"] == "completed"
    assert session_record(workspace, SESSION, "claude-code") is None
    shown = run_cli("sessions", "--root", str(workspace.root)).stdout.decode()
    assert host in shown and "claude-code" not in shown


def test_a_borrowed_session_stays_its_hosts_when_an_event_cannot_tell_who_ran_its_hook(
        workspace, config_home, start_daemon, tmp_path):
    """Devin exits before its SessionEnd hook runs: that event's hook has no `devin` above it,
    yet it ends Devin's session; no Claude Code record of the id appears, `claude` never runs."""
    ran = follow_ups_resume_with_a_recording_claude(workspace, config_home, tmp_path)
    start_daemon(workspace.root)
    for event in EVENTS[:-1]:
        through_devin(workspace, tmp_path, event)
    through_devin(workspace, tmp_path, "SessionEnd", "exits-first")

    def ended() -> dict | None:
        record = session_record(workspace, SESSION, "devin")
        return record if record and record["status"] == "completed" else None

    record = wait_until(ended, 20)
    assert record["metadata"]["sidecar"]["completionReason"] != "host-exited"  # its own end
    history = wait_until(lambda: read_json(workspace.hooks_file)["hooks"]["post-task"]["history"], 20)
    assert [h["status"].startswith("skipped: ") for h in history] == [True]
    assert session_record(workspace, SESSION, "claude-code") is None
    assert not ran.exists()
