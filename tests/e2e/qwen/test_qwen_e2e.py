"""End to end with the real Qwen Code 0.24.4, offline against a loopback chat completions stub.

`sidecar integrate qwen` writes the user's hooks. The first run is Qwen Code's interactive UI,
driven in tmux, whose `/quit` fires its own SessionEnd; `post-task` then resumes the session
once with the default resume command, a one-shot run, which never fires SessionEnd: its end is
the process watch (the CLI's exit). tests/e2e/test_host_exit_e2e.py SIGKILLs a one-shot run
mid-turn.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import npm_host, read_json, run_cli, wait_until
from sidecar.hosts import registry
from stubs.chat_stub import ChatStub
from stubs.lifecycle import (
    MARKER,
    assert_whole_lifecycle,
    carries_marker,
    prepare_post_task,
    set_resume,
    settled,
)

pytestmark = pytest.mark.e2e

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


def active_session(workspace, host):
    """The record of `host`'s one session once it is tracked, else None."""
    per_host = (read_json(workspace.bindings_file)["bindings"].get(host, {})
                if workspace.bindings_file.exists() else {})
    for binding in per_host.values():
        path = workspace.session_dir(binding["harnessSessionId"]) / "session.json"
        if path.exists():
            return path
    return None


def trace(record: Path) -> list[dict]:
    return [json.loads(line) for line in record.with_name("trace.jsonl").read_bytes().splitlines()]


def events(record: Path) -> list[str]:
    return [line["event"] for line in trace(record)]


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def assert_is_the_real_cli(pid: int) -> None:
    """The hooks' host is the innermost `cli.js` (the process that spawns them), not the
    `.bin/qwen` launcher nor the node between them."""
    assert any(word.endswith("/cli.js") for word in cmdline(pid)), cmdline(pid)
    assert any(word.endswith("/cli.js") for word in cmdline(parent(pid)))  # the middle node


class Tmux:
    """A private tmux server (its own socket) holding one window."""

    def __init__(self, socket: Path) -> None:
        self.base = ["tmux", "-S", str(socket)]

    def start(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        command = shlex.join(["env", *(f"{k}={v}" for k, v in env.items()), *argv])
        subprocess.run([*self.base, "new-session", "-d", "-x", "160", "-y", "45", "-c",
                        str(cwd), command], check=True)

    def type(self, text: str) -> None:
        subprocess.run([*self.base, "send-keys", "-l", text], check=True)
        subprocess.run([*self.base, "send-keys", "Enter"], check=True)

    def screen(self) -> str:
        done = subprocess.run([*self.base, "capture-pane", "-p"], capture_output=True, text=True)
        return done.stdout

    def stop(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True)


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
            tmux.start([str(qwen)], workspace.root, env)
            record = wait_until(lambda: active_session(workspace, "qwen"), 60, 0.2)
            assert_is_the_real_cli(read_json(record)["metadata"]["sidecar"]["hostPid"])
            wait_until(lambda: "Type your message" in tmux.screen(), 60, 0.2)
            tmux.type("remember banana")
            wait_until(lambda: "turn.end" in events(record), 60, 0.2)
            tmux.type("/quit")
            wait_until(lambda: "session.completed" in events(record), 30, 0.1)
        finally:
            tmux.stop()
        wait_until(lambda: settled(workspace), 120, 0.2)
        requests = list(stub.requests)
    # The interactive run ended by its own SessionEnd; the resumed one-shot run, which fires
    # none, by its process's exit.
    assert [line["data"]["reason"] for line in trace(record)
            if line["event"] == "session.completed"] == ["prompt_input_exit", "host-exited"]
    # Qwen Code's memory extraction after each turn sends the whole conversation again (the
    # follow-up's prompt too), under an instruction of its own as the latest user message.
    assert_whole_lifecycle(workspace, record, requests, "remember banana",
                           end_reason="host-exited", latest_user_only=True)
    others = [r for r in requests if MARKER in json.dumps(r["body"]) and not carries_marker(r, True)]
    assert others and all("memory" in json.dumps(r["body"]).lower() for r in others)
    assert read_json(settings)["$version"] == 4  # Qwen Code's own addition, which we keep
    assert run_cli("integrate", "qwen", "--uninstall", env=env).returncode == 0
    assert "hooks" not in read_json(settings)
