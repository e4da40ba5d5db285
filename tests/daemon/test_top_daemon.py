"""`sidecar top` beside a real daemon: an event dropped by `sidecar emit` shows within a second,
fire-now makes the daemon fire a follow-up long before its delay (a trusted command only),
and cancel keeps it from firing at all. Then once for real in a terminal (tmux)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import time
from collections.abc import Callable

import orjson
import pytest

from helpers import SIDECAR, emit, end_session, read_json, run_cli, trust_hooks, wait_until
from sidecar.followups import trust
from sidecar.live.feed import Feed
from sidecar.top.app import TopApp
from support.tmux import Tmux

pytestmark = pytest.mark.slow


def lines(app: TopApp) -> list[str]:
    return [app.list.render_line(y).text for y in range(app.list.size.height)]


async def until(pilot, predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "not shown in time"
        await pilot.pause(0.02)


def drive(ws, check) -> None:
    async def main() -> None:
        app = TopApp(Feed([ws.root]))
        async with app.run_test(size=(130, 30)) as pilot:  # the list alone, every column
            await pilot.pause()
            await check(app, pilot)

    asyncio.run(main())


def add_hook(ws, out, delay: str = "1h") -> None:
    """A command hook, and the seeded post-task off, so the row shows this one alone."""
    assert run_cli("hooks", "disable", "post-task", "--root", str(ws.root)).returncode == 0
    added = run_cli("hooks", "add", "note", "--delay", delay, "--root", str(ws.root), "--",
                    "sh", "-c", f'echo "$SIDECAR_SESSION_ID" >> {out}')
    assert added.returncode == 0, added.stderr


def press_on(ws, session: str, key: str, shown: Callable[[str], bool], timeout: float) -> None:
    """Find `session`'s row in top, press `key` on it, and wait until a line is `shown`."""
    async def check(app, pilot):
        await until(pilot, lambda: any(session in line for line in lines(app)), 5)
        await pilot.press("slash", *session, "enter", key)
        await until(pilot, lambda: any(shown(line) for line in lines(app)), timeout)

    drive(ws, check)


def test_an_emitted_event_shows_and_fire_now_fires_the_command(workspace, start_daemon, tmp_path):
    out = tmp_path / "ran"
    add_hook(workspace, out)
    start_daemon(workspace.root)

    async def check(app, pilot):
        sent = time.monotonic()
        assert emit(workspace.root, None, "session-start", "--session-id", "fresh-one",
                    "--source", "claude-code").returncode == 0
        await until(pilot, lambda: any("fresh-one" in line for line in lines(app)), 5)
        shown_after = time.monotonic() - sent
        assert shown_after < 3  # emit's own start is most of it; the view follows at once
        end_session(workspace.root, "fresh-one")
        await until(pilot, lambda: any("note due in 59 min" in line for line in lines(app)), 5)
        await pilot.press("slash", *"fresh", "enter", "f")
        await until(pilot, out.exists, 5)  # an hour early: fired on the daemon's wake-up
        await until(pilot, lambda: any("note ok" in line for line in lines(app)), 5)

    drive(workspace, check)
    assert out.read_text() == "fresh-one\n"
    assert read_json(workspace.hooks_file)["pending"] == []


def test_fire_now_of_an_untrusted_command_runs_nothing(workspace, start_daemon, tmp_path):
    out = tmp_path / "ran"
    add_hook(workspace, out)
    doc = read_json(workspace.hooks_file)  # a hand edit (a pull): no longer trusted
    doc["hooks"]["note"]["action"] = ["sh", "-c", f"echo edited >> {out}"]
    workspace.hooks_file.write_bytes(orjson.dumps(doc))
    start_daemon(workspace.root)
    end_session(workspace.root, "edited-one")
    wait_until(lambda: read_json(workspace.hooks_file)["pending"], 10)
    press_on(workspace, "edited-one", "f",
             lambda line: "not trusted" in line.lower() or "trust" in line, 10)
    assert read_json(workspace.hooks_file)["hooks"]["note"]["lastStatus"] == str(trust.NOT_TRUSTED)
    assert not out.exists()


def test_cancel_keeps_the_daemon_from_firing_it(workspace, start_daemon, tmp_path):
    out = tmp_path / "ran"
    add_hook(workspace, out, delay="3s")
    trust_hooks(workspace)
    start_daemon(workspace.root)
    end_session(workspace.root, "cancel-me")
    wait_until(lambda: read_json(workspace.hooks_file)["pending"], 10)
    press_on(workspace, "cancel-me", "c", lambda line: "cancelled by the user" in line, 5)
    time.sleep(4)  # past the delay: the daemon would have fired it by now
    assert not out.exists()
    assert read_json(workspace.hooks_file)["pending"] == []


def test_top_in_a_real_terminal_shows_a_new_session_beside_its_detail_and_quits_with_q(
        workspace, start_daemon, config_home, tmp_path):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (tests/install-hosts.sh installs it)")
    start_daemon(workspace.root)
    tmux = Tmux(tmp_path / "tmux.sock", 170, 30)
    env = {"SIDECAR_CONFIG_HOME": str(config_home), "TERM": "xterm-256color",
           "PATH": os.environ["PATH"]}
    try:
        tmux.start([SIDECAR, "top", "--root", str(workspace.root)], env, unsized=True,
                   keep_open=True)
        wait_until(lambda: "0 working · 0 waiting · 0 limited" in tmux.screen(), 15, 0.1)
        assert emit(workspace.root, None, "session-start", "--session-id", "seen-in-tmux",
                    "--source", "claude-code").returncode == 0
        wait_until(lambda: "seen-in-tmux" in tmux.screen(), 5, 0.1)
        assert "idle" in tmux.screen() and re.search(r"· 1 session(\s|$)", tmux.screen(), re.M)
        assert "FOLLOW-UPS" in tmux.screen()  # drawn at the window's 170 columns
        # the cursor's session, beside the list: its header, state and timeline
        wait_until(lambda: "claude-code session seen-in-tmux" in tmux.screen(), 5, 0.1)
        beside = [line.split("│", 1)[1] for line in tmux.screen().splitlines() if "│" in line]
        assert any("state      idle" in line for line in beside), beside
        assert any("session.start" in line for line in beside), beside
        tmux.keys("d")  # hidden: the list takes the width, WHY among its columns
        wait_until(lambda: "WHY" in tmux.screen() and "│" not in tmux.screen(), 5, 0.1)
        tmux.keys("q")
        wait_until(lambda: "exit=" in tmux.screen(), 10, 0.1)
        assert "exit=0" in tmux.screen()
    finally:
        tmux.stop()
