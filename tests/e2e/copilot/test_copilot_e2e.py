"""End to end with the real GitHub Copilot CLI 1.0.102, fully offline (no GitHub account):
BYOK against a loopback chat-completions stub.

`sidecar integrate copilot` writes the user's hooks; a `copilot -p` session is tracked and
completed by its own sessionEnd; `post-task` resumes it once through the default resume
(`copilot --resume=<id> --allow-tool=write --prompt=<prompt>`), and the resumed run's end
queues nothing. Killed outright, its native binary (not the node loader) is what the process
watch saw and what ends the session. A turn refused for a rate limit ends the session with
that failure and queues no post-task.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from helpers import HOSTS_CACHE, npm_host, read_json, run_cli, wait_until
from sidecar.base.ids import harness_id
from sidecar.hosts.copilot import host as copilot_host
from stubs.chat_stub import ChatStub, LimitedChatStub
from stubs.host_exit import assert_ends_as_host_exit, running_host
from stubs.lifecycle import assert_whole_lifecycle, prepare_post_task, set_resume, settled, trace_events
from stubs.loopback import Refusal

COPILOT_VERSION = "1.0.102"
LIMIT_TEXT = "Rate limit reached for requests. Try again in an hour."
# Copilot puts the time before each prompt it sends the model: that block, and only that.
DATETIME = re.compile(r"<current_datetime>[^<\n]*</current_datetime>\n\n")


def copilot_binary() -> Path:
    return npm_host("copilot", COPILOT_VERSION, "copilot")


def copilot_env(tmp_path: Path, stub_url: str) -> dict[str, str]:
    """Offline BYOK, a home of its own, and the cache tests/install-hosts.sh unpacked the
    native binary's JavaScript into (else every start unpacks about 350 MB again)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    cache = HOSTS_CACHE / f"copilot-{COPILOT_VERSION}" / "xdg-cache"
    if not (cache / "copilot" / "pkg").is_dir():
        pytest.skip(f"copilot's package is not unpacked in {cache} (tests/install-hosts.sh)")
    return {"HOME": str(home), "XDG_CACHE_HOME": str(cache), "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": stub_url, "COPILOT_PROVIDER_API_KEY": "stub-key",
            "COPILOT_MODEL": "stub-model", "COPILOT_AUTO_UPDATE": "false"}


def run_copilot(copilot: Path, root: Path, env: dict[str, str], *args: str,
                ) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("COPILOT_")}
    return subprocess.run([str(copilot), *args], cwd=root, env={**clean, **env},
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=180)


def as_prompted(requests: list[dict]) -> list[dict]:
    """The requests with each user message as the user wrote it: Copilot's leading time block
    taken off (it must be there, exactly once, in front)."""
    out = json.loads(json.dumps(requests))
    for request in out:
        for message in request["body"].get("messages") or []:
            if message.get("role") == "user" and isinstance(message.get("content"), str):
                match = DATETIME.match(message["content"])
                assert match, message["content"][:200]
                message["content"] = message["content"][match.end():]
    return out


def test_a_copilot_session_is_completed_and_resumed_once(workspace, start_daemon, config_home,
                                                        tmp_path):
    copilot = copilot_binary()
    prepare_post_task(workspace)
    # The default resume, with this machine's copilot for the bare name.
    set_resume(config_home, "copilot", [str(copilot), *copilot_host.HOST.resume[1:]])
    session_id = str(uuid.uuid4())
    with ChatStub() as stub:
        env = copilot_env(tmp_path, stub.url)
        result = run_cli("integrate", "copilot", env=env)
        assert result.returncode == 0, result.stderr
        start_daemon(workspace.root, env=env)
        first = run_copilot(copilot, workspace.root, env, f"--session-id={session_id}",
                            "-p", "remember banana")
        assert first.returncode == 0, first.stderr[-3000:]
        assert f"--resume={session_id}" in first.stderr  # it names the id it was given
        record = workspace.session_dir(harness_id("copilot", session_id)) / "session.json"
        wait_until(lambda: record.exists() and settled(workspace), 120, 0.2)
        requests = list(stub.requests)
    done = assert_whole_lifecycle(workspace, record, as_prompted(requests), "remember banana",
                                  end_reason="complete")
    trace = trace_events(record)
    assert trace[:4] == ["session.created", "session.start", "turn.start", "turn.end"]
    assert done["metadata"]["sidecar"]["tokens"]["input"] > 0  # both runs' usage records
    log = Path(read_json(workspace.hooks_file)["hooks"]["post-task"]["history"][0]["log"])
    assert "--allow-tool=write" in log.read_text()  # the permission the resume was given
    home = Path(env["HOME"])
    config = home / ".copilot" / "config.json"  # Copilot's own, beside the settings: untouched
    assert config.exists() and "sidecar" not in config.read_text()
    assert not (home / ".cache").exists()  # the unpacked package came from XDG_CACHE_HOME


def test_a_copilot_whose_native_binary_is_killed_is_completed_by_the_process_watch(
        workspace, start_daemon, tmp_path):
    copilot = copilot_binary()
    with ChatStub() as stub:
        stub.hold()  # the turn is still running when the binary dies
        env = copilot_env(tmp_path, stub.url)
        assert run_cli("integrate", "copilot", env=env).returncode == 0
        daemon = start_daemon(workspace.root, env=env)
        clean = {k: v for k, v in os.environ.items() if not k.startswith("COPILOT_")}
        watched = []

        def kill(pid: int) -> None:
            # The hooks' host is the native binary the node loader spawned: that one dies.
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            watched.append((pid, cmdline[0]))
            os.kill(pid, signal.SIGKILL)

        with running_host([copilot, "-p", "a long task"], workspace.root, env, clean) as run:
            assert_ends_as_host_exit(workspace, start_daemon, daemon, "copilot", kill)
            assert run.wait(10) != 0  # the loader saw its child die
    [(pid, program)] = watched
    assert pid != run.pid and program.endswith(b"copilot-linux-x64/copilot"), program


class RefusingChatStub(LimitedChatStub):
    """Refuses the first `refusals` requests (all: None) with a 429, as an OpenAI-compatible
    API does, saying when to try again: `retry_after` seconds (Copilot gives up at once when
    that is long) or, with None, 50 ms (Copilot retries, five times)."""

    def __init__(self, refusals: int | None, retry_after: str | None) -> None:
        super().__init__(LIMIT_TEXT)
        self.refusals = refusals
        self.retry_after = retry_after

    def reply(self, path, body):
        if body and self.refusals is not None and self.refused >= self.refusals:
            self.refusing = False
        answer = super().reply(path, body)
        if isinstance(answer, Refusal) and self.retry_after is not None:
            status, _headers, data = answer
            return tuple.__new__(Refusal, (status, {"retry-after": self.retry_after}, data))
        return answer


def refused_run(workspace, start_daemon, tmp_path, stub):
    """One `copilot -p` against `stub`, its session record once everything is applied."""
    copilot = copilot_binary()
    session_id = str(uuid.uuid4())
    env = copilot_env(tmp_path, stub.url)
    assert run_cli("integrate", "copilot", env=env).returncode == 0
    start_daemon(workspace.root, env=env)
    run = run_copilot(copilot, workspace.root, env, f"--session-id={session_id}", "-p", "go on")
    record = workspace.session_dir(harness_id("copilot", session_id)) / "session.json"
    wait_until(lambda: record.exists() and read_json(record)["status"] == "completed"
               and not list(workspace.inbox.glob("*.json")), 60, 0.2)
    return run, record


@pytest.mark.parametrize("retry_after, requests", [("3600", 1), (None, 6)])
def test_a_turn_refused_for_a_rate_limit_ends_the_session_with_that_failure(
        workspace, start_daemon, tmp_path, retry_after, requests):
    """Refused for an hour, Copilot gives up at once; refused briefly, it retries five times,
    firing errorOccurred each time: either way the turn failed once, on a rate limit."""
    with RefusingChatStub(None, retry_after) as stub:
        run, record = refused_run(workspace, start_daemon, tmp_path, stub)
        assert run.returncode == 1 and "429" in run.stdout + run.stderr
        assert stub.refused == requests
    meta = read_json(record)["metadata"]["sidecar"]
    assert meta["completionReason"] == "error"  # sessionEnd's own reason
    assert meta["limit"]["error"] == "rate_limit" and meta["limit"]["failures"] == 1
    assert LIMIT_TEXT in meta["limit"]["message"]
    assert trace_events(record).count("turn.failed") == requests  # each attempt, traced
    hooks = read_json(workspace.hooks_file)
    assert hooks["pending"] == [] and not hooks["hooks"]["post-task"].get("history")


def test_a_refusal_that_copilots_retry_got_past_is_no_limit(workspace, start_daemon, tmp_path):
    with RefusingChatStub(1, None) as stub:
        run, record = refused_run(workspace, start_daemon, tmp_path, stub)
        assert run.returncode == 0, run.stderr[-2000:]
        assert stub.refused == 1
    meta = read_json(record)["metadata"]["sidecar"]
    assert meta["completionReason"] == "complete" and "limit" not in meta
    assert trace_events(record)[-3:-1] == ["turn.failed", "turn.end"]
    assert [e["hookId"] for e in read_json(workspace.hooks_file)["pending"]] == ["post-task"]
