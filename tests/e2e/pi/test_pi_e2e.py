"""End to end with the real Pi 0.73.1, offline against a loopback chat-completions stub.

`sidecar integrate pi` installs the extension into the project; a `pi -p` session is tracked
and completed by Pi's own session_shutdown; `post-task` resumes it once through
`pi --session <id> -p` (the prompt on standard input), and the resumed run's end queues
nothing (a Pi killed mid-turn, which sends nothing, is in test_host_exit_e2e.py). A prompt
refused with HTTP 429 (Pi retries it itself, then gives up) is a usage limit: no
post-task, and resume-after-limit carries the session on once the limit resets.
"""

from __future__ import annotations

import json
import os
import subprocess

from helpers import FIXTURES, npm_host, read_json, run_cli, wait_until
from sidecar.base.ids import harness_id
from stubs.chat_stub import ChatStub, LimitedChatStub
from stubs.lifecycle import (
    assert_resumed_after_limit,
    assert_whole_lifecycle,
    enable_limit_resume,
    prepare_post_task,
    set_resume,
    settled_record,
    trace_events,
    wait_for_the_limit_resume,
)

PI_VERSION = "0.73.1"
# Pi's own retries of a refused prompt, kept short (2, 4 and 8 s by default); the provider SDK's
# retries off, since they would sleep as long as retry-after says.
QUICK_RETRIES = {"retry": {"maxRetries": 2, "baseDelayMs": 50, "provider": {"maxRetries": 0}}}


def pi_env(tmp_path, stub_url, settings=None):
    """A home whose Pi talks to the stub; PI_OFFLINE keeps a resumed run offline too."""
    agent = tmp_path / "home" / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    models = json.loads((FIXTURES / "pi-0.73.1" / "models.json").read_bytes())
    models["providers"]["stub"]["baseUrl"] = stub_url
    (agent / "models.json").write_text(json.dumps(models))
    if settings is not None:
        (agent / "settings.json").write_text(json.dumps(settings))
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {"HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"), "TERM": "dumb",
            "PI_OFFLINE": "1"}


def run_pi(pi, root, env, prompt) -> subprocess.CompletedProcess:
    return subprocess.run([str(pi), "--provider", "stub", "--model", "stub-model", "--mode",
                           "json", prompt], cwd=root, env={**os.environ, **env},
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)


def session_id_of(run: subprocess.CompletedProcess) -> str:
    """`--mode json` prints the session header first: {"type": "session", "id", ...}."""
    header = json.loads(run.stdout.splitlines()[0])
    assert header["type"] == "session", header
    return str(header["id"])


def resume_argv(pi):
    return [str(pi), "--session", "{session_id}", "-p", "<{prompt}"]


def test_a_pi_session_is_completed_by_its_own_end_and_resumed_once(workspace, start_daemon,
                                                                   config_home, tmp_path):
    pi = npm_host("pi", PI_VERSION, "pi")
    prepare_post_task(workspace)
    set_resume(config_home, "pi", resume_argv(pi))
    result = run_cli("integrate", "pi", cwd=workspace.root)
    assert result.returncode == 0, result.stderr
    extension = workspace.root / ".pi" / "extensions" / "sidecar.ts"
    assert str(tmp_path) not in extension.read_text()  # nothing machine-specific: a project may commit it
    with ChatStub() as stub:
        env = pi_env(tmp_path, stub.url)
        start_daemon(workspace.root, env=env)
        first = run_pi(pi, workspace.root, env, "remember banana")
        assert first.returncode == 0, first.stderr[-3000:]
        session_id = session_id_of(first)
        record = settled_record(workspace, "pi", session_id)
        requests = list(stub.requests)
    done = assert_whole_lifecycle(workspace, record, requests, "remember banana",
                                  end_reason="quit")
    meta = done["metadata"]["sidecar"]
    assert meta["cwd"] == str(workspace.root)
    assert meta["transcriptPath"].endswith(f"_{session_id}.jsonl")  # Pi's session file
    assert meta["tokens"]["input"] > 0 and meta["tokens"]["output"] > 0  # both runs, summed


def test_a_pi_prompt_refused_by_a_rate_limit_is_resumed_once_it_resets(
        workspace, start_daemon, config_home, tmp_path):
    """Pi tries the prompt three times (its own retries), sends an error-ended agent_end for
    each, and shuts down: its session file says rate_limit, so the end queues no post-task and
    resume-after-limit resumes the same session once the stated reset has come."""
    pi = npm_host("pi", PI_VERSION, "pi")
    enable_limit_resume(workspace, config_home, "pi", resume_argv(pi))
    assert run_cli("integrate", "pi", cwd=workspace.root).returncode == 0
    with LimitedChatStub("Rate limit reached for requests. Please try again in 3s.") as stub:
        env = pi_env(tmp_path, stub.url, QUICK_RETRIES)
        start_daemon(workspace.root, env=env)
        first = run_pi(pi, workspace.root, env, "remember banana")
        # Three tries, then Pi gives up (in --mode json it still exits 0, saying so on stdout).
        assert stub.refused == 3 and '"success":false' in first.stdout, first.stdout[-2000:]
        session_id = session_id_of(first)
        record_path = workspace.session_dir(harness_id("pi", session_id)) / "session.json"
        wait_until(lambda: record_path.exists() and read_json(record_path)["status"] == "completed"
                   and not list(workspace.inbox.glob("*.json")), 60, 0.1)
        limited = read_json(record_path)
        stub.refusing = False  # the limit resets

        wait_for_the_limit_resume(workspace)
        answered = [r for r in stub.requests[stub.refused:] if r["body"]]
    limit = limited["metadata"]["sidecar"]["limit"]
    assert limit["error"] == "rate_limit" and limit["failures"] == 1  # one prompt, one failure
    assert "try again in 3s" in limit["message"]
    assert trace_events(record_path).count("turn.failed") == 1  # from the session file, once, at the end
    assert_resumed_after_limit(workspace, "pi", session_id, answered)
