"""The real daemon, fed by the real `sidecar emit`, as hosts drive it."""

from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor

import orjson
import pytest

from helpers import FIXTURES, emit, inbox_files, read_json, run_cli, session_record, wait_until
from sidecar.base.ids import harness_id
from sidecar.layout import Workspace

CLAUDE_SEQUENCE = ["SessionStart.json", "UserPromptSubmit.json", "PostToolUse.json",
                   "Stop.json", "SessionEnd.json"]


def claude_payload(name: str, session: str) -> bytes:
    payload = orjson.loads((FIXTURES / "claude-code-2.1.328" / name).read_bytes())
    payload["session_id"] = session
    return orjson.dumps(payload)


def bindings(ws: Workspace):
    return read_json(ws.bindings_file)["bindings"] if ws.bindings_file.exists() else {}


def inbox_empty(ws: Workspace) -> bool:
    return not inbox_files(ws)


def test_many_claude_sessions_at_once_are_tracked_and_completed(workspace, start_daemon):
    start_daemon(workspace.root)
    sessions = [f"sess-{i:03d}" for i in range(24)]

    def drive(session: str) -> None:
        for name in CLAUDE_SEQUENCE:
            result = emit(workspace.root, claude_payload(name, session), "--source", "claude-code")
            assert result.returncode == 0 and orjson.loads(result.stdout) == {"continue": True}

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(drive, sessions))
    wait_until(lambda: inbox_empty(workspace) and all(
        (session_record(workspace, s) or {}).get("status") == "completed" for s in sessions), 30)
    assert bindings(workspace) == {}
    for s in sessions:
        lines = (workspace.session_dir(harness_id("claude-code", s)) / "trace.jsonl").read_bytes().splitlines()
        events = [orjson.loads(line)["event"] for line in lines]
        assert events == ["session.created", "session.start", "turn.start", "tool.use",
                          "turn.end", "session.completed"]


def test_events_dropped_before_start_up_are_applied(workspace, start_daemon):
    for name in CLAUDE_SEQUENCE[:3]:
        emit(workspace.root, claude_payload(name, "early"), "--source", "claude-code")
    start_daemon(workspace.root)
    wait_until(lambda: inbox_empty(workspace) and session_record(workspace, "early"))
    assert session_record(workspace, "early")["status"] == "active"
    assert "early" in bindings(workspace)["claude-code"]  # written before the inbox is cleared


def test_backlog_is_applied_in_the_order_events_happened(workspace, start_daemon):
    # The end is dropped first but happened last: the session must end up completed.
    emit(workspace.root, b'{"event":"session-end","session_id":"s","host":"h","ts":2000000000}')
    emit(workspace.root, b'{"event":"session-start","session_id":"s","host":"h","ts":1900000000}')
    start_daemon(workspace.root)
    wait_until(lambda: inbox_empty(workspace))
    assert session_record(workspace, "s", "h")["status"] == "completed"
    assert bindings(workspace) == {}


def test_a_resumed_claude_session_is_tracked_again(workspace, start_daemon):
    start_daemon(workspace.root)
    for name in ("SessionStart.json", "SessionEnd.json"):
        emit(workspace.root, claude_payload(name, "r1"), "--source", "claude-code")
    wait_until(lambda: (session_record(workspace, "r1") or {}).get("status") == "completed")
    emit(workspace.root, claude_payload("SessionStart-resume.json", "r1"), "--source", "claude-code")
    wait_until(lambda: (session_record(workspace, "r1") or {}).get("status") == "active")
    # The binding is written just after the record, in the same batch.
    wait_until(lambda: "r1" in bindings(workspace).get("claude-code", {}))


@pytest.mark.slow
def test_a_workspace_registered_while_running_is_picked_up(tmp_path, config_home, start_daemon):
    first = tmp_path / "first"
    first.mkdir()
    run_cli("init", str(first))
    start_daemon()  # serves the registry
    wait_until(lambda: list(Workspace(first).instances.glob("*.json")))
    second = tmp_path / "second"
    second.mkdir()
    assert run_cli("init", str(second)).returncode == 0
    emit(second, None, "session-start", "--session-id", "late", "--source", "x")
    wait_until(lambda: session_record(Workspace(second), "late", "x"), 15)


def test_runtime_folders_are_private_and_sigterm_exits_cleanly_and_unregisters(workspace, start_daemon):
    daemon = start_daemon(workspace.root)
    for folder in workspace.private_dirs():
        assert oct(folder.stat().st_mode & 0o777) == "0o700", folder
    daemon.proc.send_signal(signal.SIGTERM)
    assert daemon.proc.wait(10) == 0
    assert list(workspace.instances.glob("*.json")) == []


def test_a_standby_instance_takes_over_when_the_leader_dies(workspace, start_daemon):
    first = start_daemon(workspace.root)
    second = start_daemon(workspace.root, wait_leader=False)
    wait_until(lambda: len(list(workspace.instances.glob("*.json"))) == 2)
    first.kill()
    started = time.monotonic()
    emit(workspace.root, None, "session-start", "--session-id", "after", "--source", "x")
    wait_until(lambda: session_record(workspace, "after", "x"), 10)
    assert time.monotonic() - started < 5
    assert second.proc.poll() is None


def test_the_daemon_survives_an_inbox_that_is_briefly_not_a_folder(workspace, start_daemon):
    daemon = start_daemon(workspace.root)
    aside = workspace.inbox.with_name("inbox-aside")
    workspace.inbox.rename(aside)
    workspace.inbox.write_text("not a folder")
    wait_until(lambda: "is not a folder" in daemon.output(), 10)  # set aside, said once
    workspace.inbox.unlink()
    aside.rename(workspace.inbox)
    emit(workspace.root, None, "session-start", "--session-id", "after-trouble", "--source", "x")
    wait_until(lambda: session_record(workspace, "after-trouble", "x"), 10)
    assert daemon.proc.poll() is None
