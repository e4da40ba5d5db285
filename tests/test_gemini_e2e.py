"""End to end with the real Gemini CLI 0.61.0, offline against a loopback stub of its API.

`sidecar integrate gemini` writes the user's hooks; a `gemini -p` session is tracked and
completed by its own SessionEnd; `post-task` resumes it once through `gemini --resume`, and
the resumed run's end queues nothing.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from hosts.gemini_stub import GeminiStub
from hosts.lifecycle import assert_whole_lifecycle, prepare_post_task, set_resume, settled

from conftest import emit, fixture_payload, npm_host, read_json, run_cli, wait_until
from sidecar.lifecycle import harness_id

pytestmark = pytest.mark.e2e

GEMINI_VERSION = "0.61.0"
MODEL = "gemini-2.5-flash"  # named, so no routing request is made


def gemini_env(tmp_path, root, stub_url):
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (tmp_path / "tmp").mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"sessionRetention": {"enabled": False}},
    }))
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(root): "TRUST_FOLDER"}))
    return {"HOME": str(home), "TMPDIR": str(tmp_path / "tmp"), "GEMINI_API_KEY": "x",
            "GOOGLE_GEMINI_BASE_URL": stub_url}


def test_a_gemini_session_is_completed_and_resumed_once(workspace, start_daemon, config_home,
                                                       tmp_path):
    gemini = npm_host("gemini-cli", GEMINI_VERSION, "gemini")
    prepare_post_task(workspace)
    set_resume(config_home, "gemini", [str(gemini), "--resume", "{session_id}", "-p", "{prompt}",
                                       "-m", MODEL])
    with GeminiStub() as stub:
        env = gemini_env(tmp_path, workspace.root, stub.url)
        result = run_cli("integrate", "gemini", env=env)
        assert result.returncode == 0, result.stderr
        settings = read_json(tmp_path / "home" / ".gemini" / "settings.json")
        assert settings["privacy"] == {"usageStatisticsEnabled": False}  # the user's, kept
        start_daemon(workspace.root, env=env)
        first = subprocess.run([str(gemini), "-p", "remember banana", "-m", MODEL, "-o", "json"],
                               cwd=workspace.root, env={**os.environ, **env}, capture_output=True,
                               text=True, stdin=subprocess.DEVNULL, timeout=180)
        assert first.returncode == 0, first.stderr[-3000:]
        session_id = json.loads(first.stdout)["session_id"]
        record = workspace.session_dir(harness_id("gemini", session_id)) / "session.json"
        wait_until(lambda: record.exists() and settled(workspace), 120, 0.2)
        requests = list(stub.requests)
    assert_whole_lifecycle(workspace, record, requests, "remember banana", end_reason="exit")
    trace = [json.loads(line)["event"] for line in
             record.with_name("trace.jsonl").read_bytes().splitlines()]
    assert trace[:4] == ["session.created", "session.start", "turn.start", "turn.end"]


def test_clear_ends_one_session_and_starts_the_next_and_a_triple_quit_is_harmless(
        workspace, start_daemon):
    """Gemini's own recorded payloads for /clear then /quit, through the real emit."""
    start_daemon(workspace.root)

    def fixture(name, **changes):
        payload = json.loads(fixture_payload(f"gemini-cli-{GEMINI_VERSION}/{name}"))
        return {**payload, "cwd": str(workspace.root), **changes}

    old = fixture("SessionEnd.clear.json")["session_id"]
    new = fixture("SessionStart.clear.json")["session_id"]
    quit_end = fixture("SessionEnd.json", session_id=new)  # /quit: SessionEnd(exit), three times
    for payload in (fixture("SessionStart.json", session_id=old), fixture("SessionEnd.clear.json"),
                    fixture("SessionStart.clear.json"), quit_end, quit_end, quit_end):
        assert emit(workspace.root, json.dumps(payload).encode(), "--source", "gemini").returncode == 0
    records = {sid: workspace.session_dir(harness_id("gemini", sid)) / "session.json"
               for sid in (old, new)}
    wait_until(lambda: all(p.exists() for p in records.values())
               and not list(workspace.inbox.glob("*.json")), 20)
    assert read_json(records[old])["metadata"]["sidecar"]["completionReason"] == "clear"
    assert read_json(records[new])["metadata"]["sidecar"]["completionReason"] == "exit"
    trace = [json.loads(line)["event"] for line in
             records[new].with_name("trace.jsonl").read_bytes().splitlines()]
    assert trace.count("session.completed") == 1  # the second and third /quit ends change nothing
    queued = sorted(e["sessionId"] for e in read_json(workspace.hooks_file)["pending"])
    assert queued == sorted([old, new])  # one post-task each
