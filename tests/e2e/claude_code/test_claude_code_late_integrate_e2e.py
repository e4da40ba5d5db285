"""The README's order with the real Claude Code: the daemon runs first (started by hand, or by
`service install`), with a PATH that lacks the folder of `claude` (npm's bin folder under nvm
or a custom prefix); then `integrate claude-code` records claude's full path in config.toml.
The running daemon takes that up, so the first session's follow-up resumes it."""

from __future__ import annotations

import os
from pathlib import Path

from test_claude_code_e2e import claude_binary, claude_env, run_claude

from helpers import SIDECAR, run_cli, wait_until
from sidecar.base.ids import harness_id
from stubs.anthropic_stub import AnthropicStub
from stubs.lifecycle import assert_whole_lifecycle, post_task, prepare_post_task, settled


def test_a_daemon_started_before_integrate_resumes_the_first_session_with_the_real_claude(
        workspace, start_daemon, config_home, tmp_path):
    claude = claude_binary()
    home = tmp_path / "home"
    home.mkdir()
    prepare_post_task(workspace)
    with AnthropicStub() as stub:
        keys = claude_env(home, stub.url)
        start_daemon(workspace.root, env={**keys, "PATH": f"{Path(SIDECAR).parent}:/usr/bin:/bin"})
        shell = {**keys, "PATH": f"{claude.parent}{os.pathsep}{os.environ['PATH']}"}
        integrated = run_cli("integrate", "claude-code", cwd=workspace.root, env=shell)
        assert f"resume runs {claude}" in integrated.stdout.decode(), integrated
        first = run_claude(claude, workspace.root, shell, "-p", "do the task")
        assert first.returncode == 0, first.stderr.decode()[-2000:]
        wait_until(lambda: settled(workspace), 120, 0.2)
        requests = list(stub.requests)
    session_id = post_task(workspace)["history"][0]["sessionId"]
    record = workspace.session_dir(harness_id("claude-code", session_id)) / "session.json"
    assert_whole_lifecycle(workspace, record, requests, "do the task")  # the exact prompt, too
    assert f"'{claude}'" in Path(post_task(workspace)["history"][0]["log"]).read_text()
