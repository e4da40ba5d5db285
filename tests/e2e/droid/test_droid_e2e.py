"""End to end with the real Factory Droid 0.215.0, offline against a loopback chat completions
stub (its custom model in `~/.factory/settings.json`, no login).

`droid exec -s <id>` first asks Factory's servers for the session, and continues the local one
only when they answer 404. So the whole promise, resume included, is proven with
`FACTORY_API_BASE_URL` at a loopback stub that answers 404 to everything; with nothing there
or unavailable, the resume fails before it asks the model anything, which the second test
shows: the firing is recorded failed, once, and nothing is queued again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from helpers import npm_host, read_json, run_cli, wait_until
from sidecar.hosts import registry
from stubs.chat_stub import ChatStub
from stubs.host_exit import assert_ends_as_host_exit, running_host
from stubs.lifecycle import (
    MARKER,
    PROMPT,
    assert_whole_lifecycle,
    post_task,
    prepare_post_task,
    set_resume,
    settled,
    settled_record,
    trace_lines,
)
from stubs.loopback import LoopbackStub, Refusal

DROID_VERSION = "0.215.0"
MODEL = "custom:stub-model"


class FactoryApiStub(LoopbackStub):
    """Factory's API answering `status` to everything: 404, a server that has none of this
    machine's sessions; 503, one that is unavailable."""

    def __init__(self, status: int = 404) -> None:
        super().__init__()
        self.status = status

    def reply(self, path: str, body: dict[str, Any]) -> Refusal:
        return Refusal(self.status, {}, {"error": "stub"})


def droid_binary() -> Path:
    return npm_host("droid", DROID_VERSION, "droid")


def user_settings(home: Path, stub_url: str) -> Path:
    """The user's own settings: a custom model at the stub, as a user of Droid writes them."""
    path = home / ".factory" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"customModels": [{
        "model": "stub-model", "baseUrl": stub_url, "apiKey": "x",
        "provider": "generic-chat-completion-api", "maxOutputTokens": 1024}]}, indent=2) + "\n")
    path.chmod(0o600)
    return path


def droid_env(tmp_path: Path, api_url: str) -> dict[str, str]:
    (tmp_path / "tmp").mkdir()
    return {"HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"),
            "FACTORY_API_BASE_URL": api_url}


def exec_turn(droid: Path, prompt: str, cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """One `droid exec` turn; its JSON result."""
    done = subprocess.run([str(droid), "exec", "-m", MODEL, "-o", "json", prompt], cwd=cwd,
                          env={**os.environ, **env}, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def resume_argv(droid: Path, session_id: str) -> list[str]:
    """The default resume command as the follow-up runs it, its prompt filled in."""
    return [str(droid), "exec", "--auto", "low", "-s", session_id, "--", PROMPT]


def test_a_droid_session_ends_and_is_resumed_once_with_the_earlier_turn(
        workspace, start_daemon, config_home, tmp_path):
    droid = droid_binary()
    prepare_post_task(workspace)
    set_resume(config_home, "droid", [str(droid), *registry.get("droid").resume[1:]])
    with ChatStub() as stub, FactoryApiStub() as factory:
        env = droid_env(tmp_path, factory.url)
        settings = user_settings(tmp_path / "home", stub.url)
        before = settings.read_bytes()
        result = run_cli("integrate", "droid", env=env)
        assert result.returncode == 0, result.stderr
        start_daemon(workspace.root, env=env)
        session_id = exec_turn(droid, "remember banana", workspace.root, env)["session_id"]
        record = settled_record(workspace, "droid", session_id)
        requests = list(stub.requests)
        # Droid's own end (SessionEnd) ended both runs: the first, then the resumed one.
        assert [line["data"]["reason"] for line in trace_lines(record)
                if line["event"] == "session.completed"] == ["other", "other"]
        assert_whole_lifecycle(workspace, record, requests, "remember banana")
        log = Path(post_task(workspace)["history"][0]["log"]).read_text()
        assert log.splitlines()[0] == f"$ {resume_argv(droid, session_id)!r}"
        # The session's settings file: the stub's 10 in and 3 out, for each of the two turns.
        tokens = read_json(record)["metadata"]["sidecar"]["tokens"]
        assert tokens == {"input": 20, "output": 6, "cacheRead": 0, "cacheWrite": 0}

        assert run_cli("integrate", "droid", "--uninstall", env=env).returncode == 0
        assert settings.read_bytes() == before and settings.stat().st_mode & 0o777 == 0o600
        # Droid still runs on the user's file as it was, and sidecar hears nothing more.
        sessions = set(workspace.sessions.iterdir())
        exec_turn(droid, "one more", workspace.root, env)
        assert any("one more" in json.dumps(r["body"]) for r in stub.requests)
        time.sleep(1)
        assert set(workspace.sessions.iterdir()) == sessions and not list(workspace.inbox.glob("*.json"))


def test_a_killed_droid_ends_by_the_process_watch_and_its_resume_fails_once_without_factory(
        workspace, start_daemon, config_home, tmp_path, monkeypatch):
    """Factory's servers unavailable (503): droid cannot fetch the session, so the resume
    exits 1 before asking the model anything (it says why only in its own log, not always
    flushed before it exits); the firing is recorded failed, once, and nothing is queued."""
    droid = droid_binary()
    prepare_post_task(workspace)
    set_resume(config_home, "droid", [str(droid), *registry.get("droid").resume[1:]])
    with ChatStub() as stub, FactoryApiStub(503) as factory:
        env = droid_env(tmp_path, factory.url)
        for name, value in env.items():  # the restarted daemon's follow-ups get them too
            monkeypatch.setenv(name, value)
        stub.hold()  # the answer never comes: the turn is still running when droid is killed
        user_settings(tmp_path / "home", stub.url)
        assert run_cli("integrate", "droid", env=env).returncode == 0
        daemon = start_daemon(workspace.root)

        def kill(pid: int) -> None:
            # The hooks' host is the droid binary itself (a native program, no launcher).
            assert Path(f"/proc/{pid}/exe").resolve().name == "droid"
            os.kill(pid, signal.SIGKILL)

        with running_host([droid, "exec", "-m", MODEL, "a long task"], workspace.root, env) as run:
            assert_ends_as_host_exit(workspace, start_daemon, daemon, "droid", kill)
            assert run.wait(10) == -signal.SIGKILL
        stub.release()
        wait_until(lambda: settled(workspace), 60, 0.2)
        time.sleep(4)  # a wrong second firing (3 s delay) would be queued and fire now
        [firing] = post_task(workspace)["history"]
        assert firing["status"] == "error: exit status 1", firing
        assert read_json(workspace.hooks_file)["pending"] == []
        log = Path(firing["log"]).read_text()
        assert log.splitlines()[0] == f"$ {resume_argv(droid, firing['sessionId'])!r}"
        asked = [r["path"] for r in factory.requests]
        assert f"/api/sessions/{firing['sessionId']}" in asked  # it asked Factory for the session
        assert not any(MARKER in json.dumps(r["body"]) for r in stub.requests)  # and went no further
