"""config.toml's `hostResume` reaches a running daemon: heeded (the default), a session left open
after Claude Code 2.1.332 refused its turn with a reset named is recorded as Claude Code's own to
resume, and `status` says so; off, nothing of it is kept or said."""

from __future__ import annotations

import orjson
import pytest

from helpers import emit, fixture_payload, run_cli, session_record, wait_until

RECORDED = "claude-code-2.1.332/StopFailure.usage_limit.json"


@pytest.mark.parametrize("heeded", [True, False], ids=["hostResume-default", "hostResume-false"])
def test_host_resume_in_config_toml_decides_whether_claude_codes_own_resume_is_kept(
        tmp_path, workspace, config_home, start_daemon, heeded):
    ws = workspace
    if not heeded:
        with (config_home / "config.toml").open("a") as config:
            config.write("hostResume = false\n")
    home = tmp_path / "home"  # no ~/.claude/settings.json: Claude Code's own resume is on
    home.mkdir()
    start_daemon(ws.root, env={"HOME": str(home)})
    body = orjson.loads(fixture_payload(RECORDED))
    body.pop("transcript_path")  # the recording's: not on this machine
    session = body["session_id"]
    body["cwd"] = str(ws.root)
    start = {"session_id": session, "cwd": str(ws.root), "hook_event_name": "SessionStart",
             "source": "startup"}
    for payload in (start, body):
        assert emit(ws.root, orjson.dumps(payload), "--source", "claude-code").returncode == 0

    def limited() -> dict | None:
        record = session_record(ws, session)
        return record if record and record["metadata"]["sidecar"].get("limit") else None

    record = wait_until(limited, 10)
    kept = record["metadata"]["sidecar"].get("hostResume")
    status = run_cli("status", "--session", session, "--root", str(ws.root))
    said = status.stdout.decode()
    assert status.returncode == 0, status.stderr
    if heeded:
        assert kept is not None and kept["state"] == "expected"
        assert "Claude Code resumes this session itself at" in said
    else:
        assert kept is None
        assert "resumes this session itself" not in said
        assert "usage limit" in said.lower()
