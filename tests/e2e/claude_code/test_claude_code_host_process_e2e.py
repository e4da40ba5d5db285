"""The process watch with the real Claude Code 2.1.332, offline against a loopback stub: its
hooks carry `CLAUDE_PID`, so the process sidecar watches is Claude Code's own even where the
hook command is wrapped in a program that stays between them (`timeout 60 sidecar emit`)."""

from __future__ import annotations

import os
import shlex
import subprocess

import orjson
from test_claude_code_e2e import CLAUDE_EVENTS, claude_binary, claude_env

from helpers import SIDECAR, read_json, wait_until
from stubs.anthropic_stub import AnthropicStub


def test_the_watched_process_is_claude_codes_own_through_a_wrapping_hook_command(
        workspace, start_daemon, tmp_path):
    claude = claude_binary()
    # `timeout` forks the hook and waits for it: the hook's parent is `timeout`, not a shell.
    command = f"timeout 60 {shlex.quote(SIDECAR)} emit --source claude-code"
    entry = [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]
    (workspace.root / ".claude").mkdir()
    (workspace.root / ".claude" / "settings.json").write_bytes(
        orjson.dumps({"hooks": {event: entry for event in CLAUDE_EVENTS}}))
    (tmp_path / "home").mkdir()
    with AnthropicStub() as stub:
        env = claude_env(tmp_path / "home", stub.url)
        start_daemon(workspace.root, env=env)
        run = subprocess.Popen([str(claude), "-p", "hello"], cwd=workspace.root,
                               env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _, err = run.communicate(timeout=180)
        assert run.returncode == 0, err.decode()[-2000:]
        [record_file] = wait_until(lambda: list(workspace.sessions.glob("*/session.json")), 30)
        record = wait_until(lambda: (r := read_json(record_file))["status"] == "completed" and r, 30)
    meta = record["metadata"]["sidecar"]
    assert meta["hostPid"] == run.pid  # Claude Code's own process, not the wrapper's
    assert meta["completionReason"] == "other"  # its own SessionEnd, not its exit
