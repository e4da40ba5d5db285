"""End to end with the real Gemini CLI 0.61.0, offline against a loopback stub of its API.

`sidecar integrate gemini` writes the user's hooks; a `gemini -p` session is tracked and
completed by its own SessionEnd; `post-task` resumes it once through `gemini --resume`, and
the resumed run's end queues nothing.
"""

from __future__ import annotations

import json
import os
import subprocess

from helpers import npm_host, read_json, run_cli
from stubs.gemini_stub import GeminiStub
from stubs.lifecycle import (
    assert_whole_lifecycle,
    prepare_post_task,
    set_resume,
    settled_record,
    trace_events,
)

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
        record = settled_record(workspace, "gemini", session_id)
        requests = list(stub.requests)
    assert_whole_lifecycle(workspace, record, requests, "remember banana", end_reason="exit")
    assert trace_events(record)[:4] == ["session.created", "session.start", "turn.start", "turn.end"]
