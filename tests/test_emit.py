"""`sidecar emit`: the real command, as a host's hook runs it."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import pytest

from conftest import SIDECAR, emit, fixture_payload, inbox_files, read_json, run_cli

CLAUDE = [
    "SessionStart.json",
    "UserPromptSubmit.json",
    "PostToolUse.json",
    "Stop.json",
    "SessionEnd.json",
]


@pytest.mark.parametrize("name", CLAUDE)
def test_claude_payload_is_dropped_as_it_came_plus_host_and_time(workspace, name):
    raw = fixture_payload(f"claude-code-2.1.328/{name}")
    result = emit(workspace.root, raw, "--source", "claude-code")
    assert result.returncode == 0
    assert orjson.loads(result.stdout) == {"continue": True}
    [dropped] = inbox_files(workspace)
    event = read_json(dropped)
    original = orjson.loads(raw)
    assert {k: v for k, v in event.items() if k not in ("host", "ts")} == original
    assert event["host"] == "claude-code"
    assert isinstance(event["ts"], float)
    assert not [p for p in workspace.inbox.iterdir() if p.name.startswith(".")]


def test_event_name_and_session_id_build_a_valid_event(workspace):
    tricky = 'a "quoted"\\ name\nwith newline'
    result = emit(workspace.root, None, tricky, "--session-id", "abc-1", "--source", "gemini")
    assert result.returncode == 0
    [dropped] = inbox_files(workspace)
    event = read_json(dropped)
    assert event["event"] == tricky
    assert event["session_id"] == "abc-1"
    assert event["host"] == "gemini"
    assert event["cwd"] == str(workspace.root)


def test_event_without_session_id_is_not_sent_but_does_not_block(workspace):
    result = emit(workspace.root, None, "session-start")
    assert result.returncode == 0
    assert orjson.loads(result.stdout) == {"continue": True}
    assert b"--session-id" in result.stderr
    assert inbox_files(workspace) == []


def test_no_workspace_is_reported_without_blocking_the_host(tmp_path, config_home):
    lonely = tmp_path / "nowhere"
    lonely.mkdir()
    result = run_cli("emit", "--source", "claude-code",
                     input=fixture_payload("claude-code-2.1.328/Stop.json"), cwd=lonely)
    assert result.returncode == 0
    assert orjson.loads(result.stdout) == {"continue": True}
    assert b"no workspace" in result.stderr


def test_workspace_is_found_from_payload_cwd_walking_up(workspace, tmp_path):
    sub = workspace.root / "src" / "deep"
    sub.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    payload = orjson.dumps({"hook_event_name": "Stop", "session_id": "s1", "cwd": str(sub)})
    result = emit(workspace.root, payload, cwd=elsewhere)
    assert result.returncode == 0
    assert len(inbox_files(workspace)) == 1


def test_root_option_wins_over_payload_cwd(workspace, tmp_path, config_home):
    other = tmp_path / "other"
    other.mkdir()
    assert run_cli("init", str(other)).returncode == 0
    payload = orjson.dumps({"hook_event_name": "Stop", "session_id": "s1", "cwd": str(other)})
    emit(workspace.root, payload, "--root", str(workspace.root), cwd=other)
    assert len(inbox_files(workspace)) == 1
    assert list((other / ".context/runtime/inbox").glob("*.json")) == []


def test_payload_fields_are_never_duplicated_and_its_own_win(workspace):
    payload = b'{"host": "hermes", "ts": "2026-11-29T07:00:00Z", "event": "x", "session_id": "s"}'
    emit(workspace.root, payload, "--source", "claude-code")
    [dropped] = inbox_files(workspace)
    raw = dropped.read_bytes()
    assert raw.count(b'"host"') == 1 and raw.count(b'"ts"') == 1
    assert read_json(dropped)["host"] == "hermes"


def test_codex_notify_json_argument_is_accepted(workspace):
    notify = fixture_payload("codex-0.169.0/notify.json").decode()
    result = emit(workspace.root, None, "--source", "codex", notify)
    assert result.returncode == 0
    [dropped] = inbox_files(workspace)
    event = read_json(dropped)
    assert event["thread-id"] == "01a22640-ba24-7903-a282-1f18f8e5c50d"
    assert event["host"] == "codex"


def test_runs_started_by_a_hook_are_tagged(workspace):
    emit(workspace.root, b'{"event":"x","session_id":"s"}', env={"SIDECAR_HOOK_ID": "post-task"})
    [dropped] = inbox_files(workspace)
    assert read_json(dropped)["sidecarHookId"] == "post-task"


def test_bom_and_empty_object_payloads(workspace):
    emit(workspace.root, b"\xef\xbb\xbf{}", "--source", "x")
    [dropped] = inbox_files(workspace)
    assert set(read_json(dropped)) == {"host", "ts"}


def test_empty_stdin_sends_nothing(workspace):
    result = emit(workspace.root, b"")
    assert result.returncode == 0
    assert b"empty payload" in result.stderr
    assert inbox_files(workspace) == []


def test_not_an_object_is_still_dropped_for_the_daemon_to_reject(workspace):
    emit(workspace.root, b"[1, 2]")
    [dropped] = inbox_files(workspace)
    assert dropped.read_bytes() == b"[1, 2]"


def test_names_sort_in_arrival_order(workspace):
    for i in range(5):
        emit(workspace.root, None, f"e{i}", "--session-id", "s")
    names = [read_json(p)["event"] for p in inbox_files(workspace)]
    assert names == [f"e{i}" for i in range(5)]


def test_inbox_is_created_private_when_missing(tmp_path, config_home):
    root = tmp_path / "dotcontext-only"
    (root / ".context").mkdir(parents=True)
    emit(root, None, "x", "--session-id", "s")
    inbox = root / ".context/runtime/inbox"
    assert len(list(inbox.glob("*.json"))) == 1
    assert oct(inbox.stat().st_mode & 0o777) == "0o700"


def test_hot_path_imports_nothing_heavy(workspace):
    """The launcher must not load typer, watchdog, a JSON library or `re` for emit."""
    code = subprocess.run(
        [sys.executable, "-X", "importtime", SIDECAR, "emit", "--source", "claude-code"],
        input=fixture_payload("claude-code-2.1.328/PostToolUse.json"),
        capture_output=True,
        cwd=workspace.root,
    )
    assert code.returncode == 0
    imported = {line.split("|")[-1].strip() for line in code.stderr.decode().splitlines()
                if line.startswith("import time:")}
    assert "sidecar.emit" in imported
    assert not imported & {"typer", "watchdog", "orjson", "json", "re", "portalocker"}


def test_python_m_sidecar_emit_works_like_the_command(workspace):
    result = subprocess.run(
        [sys.executable, "-m", "sidecar", "emit", "x", "--session-id", "s"],
        capture_output=True, cwd=workspace.root, env=os.environ,
    )
    assert result.returncode == 0
    assert len(inbox_files(workspace)) == 1
