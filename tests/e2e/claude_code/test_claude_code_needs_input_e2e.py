"""Waiting for the user, with the real Claude Code in a real terminal (tmux), offline against
a loopback stub of its API: the stub asks to run a shell command the user has not allowed,
Claude Code shows its permission dialog and fires its own Notification (`permission_prompt`);
the session's record says it waits, and so does the status line `sidecar integrate
claude-code --statusline` installed, which Claude Code itself runs. Allowing the command runs
the tool, and that event ends the wait.

`claude -p` fires no Notification: a non-interactive run asks no one, it denies.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from helpers import fixture_payload, npm_host, read_json, run_cli, wait_until
from stubs.anthropic_stub import ToolAnthropicStub
from stubs.lifecycle import trace_events
from support.tmux import Tmux

CLAUDE_VERSION = "2.1.332"
API_KEY = "sk-test-0123456789abcdefghij"
TRIGGER = "ASK-FOR-A-TOOL"


def claude_home(home: Path, project: Path, **settings: object) -> dict[str, str]:
    """A first run already done: onboarding, this API key approved, the project trusted (and
    any other of Claude Code's own `settings`)."""
    home.mkdir()
    (home / ".claude.json").write_text(json.dumps({
        "hasCompletedOnboarding": True, "theme": "dark", **settings,
        "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
        "projects": {str(project): {"hasTrustDialogAccepted": True, "allowedTools": []}}}))
    return {"HOME": str(home), "ANTHROPIC_API_KEY": API_KEY, "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


@contextmanager
def claude_in_tmux(claude: Path, stub, env: dict[str, str], root: Path, start_daemon,
                   tmp_path: Path) -> Iterator[Tmux]:
    """The real Claude Code in a tmux terminal at `root`, against `stub`, beside a daemon
    serving the workspace; the terminal is closed after."""
    env["ANTHROPIC_BASE_URL"] = stub.url
    start_daemon(root, env=env)
    tmux = Tmux(tmp_path / "tmux.sock")
    try:
        tmux.start([str(claude)], env, root)
        yield tmux
    finally:
        tmux.stop()


def statusline_payload(session_id: str, root: Path) -> bytes:
    """What Claude Code gives its status line command (recorded from 2.1.328), for `root`."""
    text = fixture_payload("statusline/claude-code-2.1.328.json").decode()
    payload = json.loads(text.replace("/home/dev/proj", str(root)))
    return json.dumps(payload | {"session_id": session_id}).encode()


def the_record(workspace) -> dict | None:
    records = list(workspace.sessions.glob("*/session.json"))
    return read_json(records[0]) if len(records) == 1 else None


def trace(workspace, record: dict) -> list[str]:
    return trace_events(workspace.session_dir(record["id"]) / "session.json")


def test_a_permission_prompt_is_waiting_until_the_user_answers(workspace, start_daemon, tmp_path):
    claude = npm_host("claude-code", CLAUDE_VERSION, "claude")
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (tests/install-hosts.sh installs it)")
    root = workspace.root
    env = claude_home(tmp_path / "home", root)
    # The user's own status line, in their settings: the project's local file sidecar writes
    # ranks above it, so sidecar's runs it first rather than hiding it.
    (tmp_path / "home" / ".claude").mkdir()
    (tmp_path / "home" / ".claude" / "settings.json").write_text(json.dumps(
        {"statusLine": {"type": "command", "command": "echo line-of-the-user"}}))
    (root / ".claude").mkdir()
    # The user's committed settings: Claude Code asks before it runs a tool (its manual mode).
    (root / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"defaultMode": "default"}}))
    done = run_cli("integrate", "claude-code", "--statusline", cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    with ToolAnthropicStub(TRIGGER, "touch allowed.txt") as stub, \
            claude_in_tmux(claude, stub, env, root, start_daemon, tmp_path) as tmux:
        wait_until(lambda: "manual mode on" in tmux.screen(), 60, 0.2)
        tmux.keys(f"{TRIGGER} please", literal=True)
        tmux.keys("Enter")
        wait_until(lambda: "Esc to cancel" in tmux.screen(), 60, 0.2)  # its dialog
        record = wait_until(lambda: (r := the_record(workspace))
                            and r["metadata"]["sidecar"].get("needsInput") and r, 60, 0.2)
        asked = record["metadata"]["sidecar"]["needsInput"]
        assert (asked["kind"], asked["message"]) == ("permission_prompt",
                                                     "Claude needs your permission")
        assert not (root / "allowed.txt").exists()  # nothing ran yet: it waits
        # and so says its status line, given what Claude Code gives it (its dialog covers
        # the status bar while it asks)
        line = run_cli("status", "--line", "--source", "claude-code", cwd=tmp_path,
                       input=statusline_payload(record["metadata"]["hostSessionId"], root))
        assert re.fullmatch(r"waiting for you \d+ s\n", line.stdout.decode()), line.stdout
        tmux.keys("Enter")  # 1. Yes
        wait_until(lambda: (root / "allowed.txt").exists(), 60, 0.2)
        after = wait_until(lambda: (r := the_record(workspace))
                           and "needsInput" not in r["metadata"]["sidecar"]
                           and "turn.end" in trace(workspace, r) and r, 60, 0.2)
        # the status line Claude Code runs itself, under its prompt again
        wait_until(lambda: re.search(r"^\s*line-of-the-user\s*\n\s*idle \d+ s\s*$",
                                     tmux.screen(), re.M), 60, 0.2)
    events = trace(workspace, after)
    asked_at = events.index("needs.input")
    assert events[asked_at + 1] == "tool.use"  # the answer's own event ended the wait
    assert after["metadata"]["sidecar"]["lastTool"] == "Bash"
