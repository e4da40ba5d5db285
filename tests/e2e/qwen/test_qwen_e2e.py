"""End to end with the real Qwen Code 0.24.4, offline against a loopback chat completions stub.

`sidecar integrate qwen` writes the user's hooks. The first run is Qwen Code's interactive UI,
driven in tmux, whose `/quit` fires its own SessionEnd; `post-task` then resumes the session
once with the default resume command, a one-shot run, which never fires SessionEnd: its end is
the process watch (the CLI's exit). A one-shot run refused with 429s is stopped by its user
and resumed once the limit resets. tests/e2e/test_host_exit_e2e.py SIGKILLs a one-shot run
mid-turn.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from helpers import npm_host, read_json, run_cli, wait_until
from sidecar.hosts import registry
from stubs.chat_stub import ChatStub, LimitedChatStub
from stubs.host_exit import active_session, running_host
from stubs.lifecycle import (
    MARKER,
    assert_resumed_after_limit,
    assert_whole_lifecycle,
    carries_marker,
    enable_limit_resume,
    prepare_post_task,
    set_resume,
    settled,
    trace_events,
    trace_lines,
    wait_for_the_limit_resume,
)
from support.tmux import Tmux

QWEN_VERSION = "0.24.4"
SETTINGS = {  # as recorded offline: no auth dialog, no telemetry, no update check
    "security": {"auth": {"selectedType": "openai"}},
    "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "ide": {"enabled": False}, "model": {"name": "stub-model"},
}


def qwen_env(tmp_path: Path, stub_url: str) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".qwen").mkdir(parents=True)
    (tmp_path / "tmp").mkdir()
    (home / ".qwen" / "settings.json").write_text(json.dumps(SETTINGS, indent=2) + "\n")
    return {"HOME": str(home), "TMPDIR": str(tmp_path / "tmp"), "OPENAI_BASE_URL": stub_url,
            "OPENAI_API_KEY": "x", "OPENAI_MODEL": "stub-model"}


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def assert_is_the_real_cli(pid: int) -> None:
    """The hooks' host is the innermost `cli.js` (the process that spawns them), not the
    `.bin/qwen` launcher nor the node between them."""
    assert any(word.endswith("/cli.js") for word in cmdline(pid)), cmdline(pid)
    assert any(word.endswith("/cli.js") for word in cmdline(parent(pid)))  # the middle node


def test_a_qwen_session_ends_on_quit_and_is_resumed_once(workspace, start_daemon, config_home,
                                                        tmp_path):
    qwen = npm_host("qwen", QWEN_VERSION, "qwen")
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (tests/install-hosts.sh installs it)")
    prepare_post_task(workspace)
    # The default resume command, with the program found where the tests installed it.
    set_resume(config_home, "qwen", [str(qwen), *registry.get("qwen").resume[1:]])
    tmux = Tmux(tmp_path / "tmux.sock")
    with ChatStub() as stub:
        env = qwen_env(tmp_path, stub.url)
        settings = Path(env["HOME"]) / ".qwen" / "settings.json"
        result = run_cli("integrate", "qwen", env=env)
        assert result.returncode == 0, result.stderr
        assert read_json(settings)["model"] == {"name": "stub-model"}  # the user's, kept
        start_daemon(workspace.root, env=env)
        try:
            tmux.start([str(qwen)], env, workspace.root)
            record = wait_until(lambda: active_session(workspace, "qwen"), 60, 0.2)
            assert_is_the_real_cli(read_json(record)["metadata"]["sidecar"]["hostPid"])
            wait_until(lambda: "Type your message" in tmux.screen(), 60, 0.2)
            tmux.type("remember banana")
            wait_until(lambda: "turn.end" in trace_events(record), 60, 0.2)
            tmux.type("/quit")
            wait_until(lambda: "session.completed" in trace_events(record), 30, 0.1)
        finally:
            tmux.stop()
        wait_until(lambda: settled(workspace), 120, 0.2)
        requests = list(stub.requests)
    # The interactive run ended by its own SessionEnd; the resumed one-shot run by its
    # process's exit.
    assert [line["data"]["reason"] for line in trace_lines(record)
            if line["event"] == "session.completed"] == ["prompt_input_exit", "host-exited"]
    # Qwen Code's memory extraction after each turn sends the whole conversation again (the
    # follow-up's prompt too), under an instruction of its own as the latest user message.
    assert_whole_lifecycle(workspace, record, requests, "remember banana",
                           end_reason="host-exited", latest_user_only=True)
    # Its chat file's token figures: the stub's 10 in and 3 out, for each of the two turns.
    tokens = read_json(record)["metadata"]["sidecar"]["tokens"]
    assert tokens == {"input": 20, "output": 6, "cacheRead": 0, "cacheWrite": 0}
    others = [r for r in requests if MARKER in json.dumps(r["body"]) and not carries_marker(r, True)]
    assert others and all("memory" in json.dumps(r["body"]).lower() for r in others)
    assert read_json(settings)["$version"] == 4  # Qwen Code's own addition, which we keep
    assert run_cli("integrate", "qwen", "--uninstall", env=env).returncode == 0
    assert "hooks" not in read_json(settings)


def test_a_qwen_turn_refused_by_a_rate_limit_is_resumed_once_it_resets(
        workspace, start_daemon, config_home, tmp_path):
    """A one-shot run refused with 429s keeps retrying for many minutes and fires no hook for
    it; the user stops it. Its chat file says the last call was refused on a rate limit, so
    the end (the process watch) queues no post-task, and resume-after-limit resumes the same
    session once the stated reset has come."""
    qwen = npm_host("qwen", QWEN_VERSION, "qwen")
    enable_limit_resume(workspace, config_home, "qwen", [str(qwen), *registry.get("qwen").resume[1:]])
    with LimitedChatStub("Rate limit reached for requests. Please try again in 3s.") as stub:
        env = qwen_env(tmp_path, stub.url)
        assert run_cli("integrate", "qwen", env=env).returncode == 0
        start_daemon(workspace.root, env=env)
        with running_host([qwen, "remember banana"], workspace.root, env) as run:
            record = wait_until(lambda: active_session(workspace, "qwen"), 60, 0.2)
            meta = read_json(record)["metadata"]
            chat = Path(meta["sidecar"]["transcriptPath"])
            wait_until(lambda: chat.exists() and b"qwen-code.api_error" in chat.read_bytes(),
                       60, 0.2)
            os.kill(meta["sidecar"]["hostPid"], signal.SIGTERM)  # the user gives up waiting
            assert run.wait(30) != 0
        stub.refusing = False  # the limit resets

        wait_for_the_limit_resume(workspace)
        answered = [r for r in stub.requests[stub.refused:] if r["body"]]
    assert_resumed_after_limit(workspace, "qwen", meta["hostSessionId"], answered, latest_user_only=True)
    reasons = [(line["event"], line.get("data", {}).get("reason")) for line in trace_lines(record)
               if line["event"] in ("turn.failed", "session.completed")]
    assert reasons[:2] == [("turn.failed", None), ("session.completed", "host-exited")]
