"""The notices `sidecar notify setup` gives, with the real Claude Code in a real terminal (tmux),
offline against a loopback stub of its API, and a loopback receiver of notices: its turn's end
(`Stop`) is one "finished" notice at once, and the idle prompt it sends once it has waited for
the next prompt (`Notification` `idle_prompt`, after `messageIdleNotifThresholdMs`: a minute
unless its config says otherwise, as here) tells nothing more.
"""

from __future__ import annotations

import shutil
import time

import orjson
import pytest
from test_claude_code_needs_input_e2e import CLAUDE_VERSION, claude_home, claude_in_tmux

from helpers import npm_host, read_json, run_cli, wait_until
from sidecar.base.timeutil import parse_ts
from stubs.anthropic_stub import AnthropicStub

pytestmark = pytest.mark.e2e

IDLE_MS = 3000  # Claude Code's own setting: its idle prompt after 3 s instead of 60 s


def trace(workspace) -> list[dict]:
    [record] = workspace.sessions.glob("*/trace.jsonl")
    return [orjson.loads(line) for line in record.read_bytes().splitlines()]


def test_a_finished_turn_is_one_notice_at_once_and_its_idle_prompt_none_more(
        workspace, start_daemon, receiver, tmp_path):
    claude = npm_host("claude-code", CLAUDE_VERSION, "claude")
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (tests/install-hosts.sh installs it)")
    root = workspace.root
    env = claude_home(tmp_path / "home", root, messageIdleNotifThresholdMs=IDLE_MS)
    assert run_cli("integrate", "claude-code", cwd=root, env=env).returncode == 0
    set_up = run_cli("notify", "setup", f"{receiver.url}/n")
    assert set_up.returncode == 0, set_up.stderr
    with AnthropicStub() as stub, \
            claude_in_tmux(claude, stub, env, root, start_daemon, tmp_path) as tmux:
        wait_until(lambda: "mode on" in tmux.screen(), 60, 0.2)  # its prompt, ready
        tmux.type("say you are done")
        [finished] = wait_until(lambda: receiver.at("/n"), 60, 0.2)
        arrived = time.time() - (time.monotonic() - finished.at)  # on the wall clock
        idle = wait_until(lambda: [e for e in trace(workspace) if e["event"] == "needs.input"],
                          60, 0.2)
        time.sleep(2)  # a notice of it would have come by now (they take about 0.3 s)
    [stop] = [e for e in trace(workspace) if e["event"] == "turn.end"]
    body = finished.json()
    assert (body["event"], body["hookId"]) == ("turn-end", "global.finished")
    # 2.1.332 has written the turn's usage by its Stop hook: the notice says what it cost.
    assert body["title"] == "claude-code finished its turn · <$0.01"
    assert body["lastMessage"] == "All done.\nDONE"
    took = arrived - parse_ts(stop["createdAt"])  # when its hook ran `sidecar emit`
    print(f"\nmeasured: Claude Code's Stop -> finished notice {took:.3f}s")
    assert took < 5.0  # at once, not with the idle prompt (measured: well under a second)
    assert "idle_prompt" in idle[0]["message"]
    assert len(receiver.at("/n")) == 1
    copies = read_json(workspace.hooks_file)["hooks"]
    assert [h["status"] for h in copies["global.waiting"]["history"]] == [
        "skipped: an idle prompt after a turn whose end was told already"]
