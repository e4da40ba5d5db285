"""`sidecar emit`: the real command, as a host's hook runs it."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import pytest
from test_daemon import CLAUDE_SEQUENCE

from helpers import SIDECAR, emit, fixture_payload, inbox_files, read_json, run_cli
from sidecar.inbox import events


def unpacked(path):
    """The host's payload and the fields emit put beside it, as the daemon reads them."""
    return events.unwrap(read_json(path))


def parsed(path):
    return events.parse(path.read_bytes(), path.name, 0.0)


@pytest.mark.parametrize("name", CLAUDE_SEQUENCE)
def test_claude_payload_is_dropped_as_it_came_beside_host_and_time(workspace, name):
    raw = fixture_payload(f"claude-code-2.1.328/{name}")
    result = emit(workspace.root, raw, "--source", "claude-code")
    assert result.returncode == 0
    assert orjson.loads(result.stdout) == {"continue": True}
    [dropped] = inbox_files(workspace)
    assert raw.strip() in dropped.read_bytes()  # the payload's bytes, unchanged
    payload, meta = unpacked(dropped)
    assert payload == orjson.loads(raw)
    assert meta["host"] == "claude-code" and isinstance(meta["ts"], float)
    event = parsed(dropped)
    assert (event.host, event.session_id) == ("claude-code", payload["session_id"])
    assert not [p for p in workspace.inbox.iterdir() if p.name.startswith(".")]


def test_event_name_and_session_id_build_a_valid_event(workspace):
    tricky = 'a "quoted"\\ name\nwith newline'
    result = emit(workspace.root, None, tricky, "--session-id", "abc-1", "--source", "gemini")
    assert result.returncode == 0
    [dropped] = inbox_files(workspace)
    payload, meta = unpacked(dropped)
    assert payload == {"event": tricky, "session_id": "abc-1", "cwd": str(workspace.root)}
    assert meta["host"] == "gemini"


def test_event_without_session_id_is_not_sent_but_does_not_block(workspace):
    result = emit(workspace.root, None, "session-start")
    assert result.returncode == 0
    assert orjson.loads(result.stdout) == {"continue": True}
    assert b"--session-id" in result.stderr
    assert inbox_files(workspace) == []


def test_outside_a_workspace_a_hook_does_nothing_quietly(tmp_path, config_home):
    lonely = tmp_path / "nowhere"
    lonely.mkdir()
    payload = orjson.dumps({"hook_event_name": "Stop", "session_id": "s", "cwd": str(lonely)})
    result = run_cli("emit", "--source", "claude-code", input=payload, cwd=lonely)
    assert result.returncode == 0
    assert orjson.loads(result.stdout) == {"continue": True}
    assert result.stderr == b""  # a host may show a hook's stderr: nothing to show here
    assert not (lonely / ".context").exists()


def test_outside_a_workspace_a_person_at_a_terminal_is_told(tmp_path, config_home):
    import pty

    lonely = tmp_path / "nowhere"
    lonely.mkdir()
    leader, follower = pty.openpty()
    try:
        result = subprocess.run([SIDECAR, "emit", "x", "--session-id", "s"], cwd=lonely,
                                stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL,
                                timeout=30)
        os.close(follower)
        said = os.read(leader, 4096)
    finally:
        os.close(leader)
    assert result.returncode == 0 and b"no workspace" in said


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


def test_a_payloads_own_top_level_fields_win_over_the_envelope(workspace):
    payload = b'{"host": "hermes", "ts": "2026-11-29T07:00:00Z", "event": "x", "session_id": "s"}'
    emit(workspace.root, payload, "--source", "claude-code", "--session-id", "other")
    [dropped] = inbox_files(workspace)
    event = parsed(dropped)
    assert (event.host, event.session_id, event.ts) == ("hermes", "s", 1795935600.0)


def test_nested_look_alike_keys_never_route_or_rename_an_event(workspace, tmp_path, config_home):
    other = tmp_path / "other"
    other.mkdir()
    assert run_cli("init", str(other)).returncode == 0
    nested = {"host": "db.example", "ts": 1, "session_id": "evil", "sidecarHookId": "post-task",
              "cwd": str(other), "hook_event_name": "SessionEnd"}
    payload = orjson.dumps({"tool_input": nested, "hook_event_name": "PostToolUse",
                            "cwd": str(workspace.root), "tool_response": [nested]})
    emit(workspace.root, payload, "--source", "claude-code", "--session-id", "real", cwd=tmp_path)
    assert list((other / ".context/runtime/inbox").glob("*.json")) == []
    [dropped] = inbox_files(workspace)
    event = parsed(dropped)
    assert (event.name, event.host, event.session_id, event.hook_id) == (
        "PostToolUse", "claude-code", "real", None)


def test_runs_started_by_a_hook_are_tagged(workspace):
    emit(workspace.root, b'{"event":"x","session_id":"s"}', env={"SIDECAR_HOOK_ID": "post-task"})
    [dropped] = inbox_files(workspace)
    assert parsed(dropped).hook_id == "post-task"


def test_bom_and_empty_object_payloads(workspace):
    emit(workspace.root, b"\xef\xbb\xbf{}", "--source", "x")
    [dropped] = inbox_files(workspace)
    payload, meta = unpacked(dropped)
    assert payload == {} and meta["host"] == "x"


def test_empty_stdin_sends_nothing(workspace):
    result = emit(workspace.root, b"")
    assert result.returncode == 0
    assert b"empty payload" in result.stderr
    assert inbox_files(workspace) == []


def test_not_an_object_is_still_dropped_for_the_daemon_to_reject(workspace):
    emit(workspace.root, b"[1, 2]")
    [dropped] = inbox_files(workspace)
    assert unpacked(dropped)[0] == [1, 2]
    with pytest.raises(events.BadEvent, match="not a JSON object but a list"):
        parsed(dropped)


def test_names_sort_in_arrival_order(workspace):
    for i in range(5):
        emit(workspace.root, None, f"e{i}", "--session-id", "s")
    names = [parsed(p).name for p in inbox_files(workspace)]
    assert names == [f"e{i}" for i in range(5)]


def test_inbox_is_created_private_when_missing(tmp_path, config_home):
    from sidecar.config import register

    root = tmp_path / "dotcontext-only"
    (root / ".context").mkdir(parents=True)
    register(root)  # initialised here once; its runtime was removed since
    emit(root, None, "x", "--session-id", "s")
    inbox = root / ".context/runtime/inbox"
    assert len(list(inbox.glob("*.json"))) == 1
    assert oct(inbox.stat().st_mode & 0o777) == "0o700"


def test_a_context_folder_never_initialised_here_gets_nothing(tmp_path, config_home):
    """A clone that ships `.context/` (even a runtime) is not a workspace of this machine: a
    user-level hook (Codex's, Gemini's) runs in every folder, and drops nothing there."""
    root = tmp_path / "clone"
    (root / ".context/runtime/inbox").mkdir(parents=True)
    result = emit(root, orjson.dumps({"hook_event_name": "SessionStart", "session_id": "s",
                                      "cwd": str(root)}), "--source", "codex")
    assert result.returncode == 0 and result.stdout == b'{"continue": true}\n'
    assert list((root / ".context/runtime/inbox").iterdir()) == []
    assert run_cli("init", str(root)).returncode == 0
    emit(root, None, "x", "--session-id", "s")
    assert len(list((root / ".context/runtime/inbox").glob("*.json"))) == 1


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
    assert not imported & {"typer", "watchdog", "orjson", "json", "re", "portalocker", "sidecar.base.version",
                            "subprocess"}


def test_python_m_sidecar_emit_works_like_the_command(workspace):
    result = subprocess.run(
        [sys.executable, "-m", "sidecar", "emit", "x", "--session-id", "s"],
        capture_output=True, cwd=workspace.root, env=os.environ,
    )
    assert result.returncode == 0
    assert len(inbox_files(workspace)) == 1


def test_help_prints_usage_only_and_a_bad_option_never_waits_for_input(workspace):
    shown = run_cli("emit", "--help", cwd=workspace.root)
    assert shown.returncode == 0 and shown.stdout.startswith(b"usage: sidecar emit")
    assert not shown.stdout.endswith(b"{\"continue\": true}\n")
    bogus = subprocess.run([SIDECAR, "emit", "--bogus"], cwd=workspace.root, capture_output=True,
                           stdin=subprocess.PIPE, timeout=30)  # stdin left open: it must not wait
    assert bogus.returncode == 0 and b"unknown option --bogus" in bogus.stderr
    assert inbox_files(workspace) == []
