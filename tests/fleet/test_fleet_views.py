"""`top --fleet` shows every machine's sessions from a real redis-server, with the machine's
name, in a real terminal; a machine whose daemon stops is shown unreachable, its sessions not
live (`web --fleet`: tests/web/test_web_fleet.py)."""

from __future__ import annotations

import os
import shutil

import pytest

from helpers import SIDECAR, emit, fleet_config, wait_until
from support.tmux import Tmux

pytestmark = pytest.mark.daemon


def test_top_fleet_lists_the_machine_and_marks_it_unreachable_when_its_daemon_stops(
        workspace, config_home, redis_server, start_daemon, tmp_path):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (tests/install-hosts.sh installs it)")
    fleet_config(config_home, redis_server.url, machine="devbox")
    daemon = start_daemon(workspace.root)
    emit(workspace.root, None, "session-start", "--session-id", "s-top-fleet", "--source", "codex")
    emit(workspace.root, None, "turn-start", "--session-id", "s-top-fleet", "--source", "codex")
    tmux = Tmux(tmp_path / "tmux.sock", 120, 20)
    env = {"SIDECAR_CONFIG_HOME": str(config_home), "TERM": "xterm-256color", "PATH": os.environ["PATH"]}
    try:
        tmux.start([SIDECAR, "top", "--fleet"], env, unsized=True, keep_open=True)
        line = wait_until(lambda: next((ln for ln in tmux.screen().splitlines() if "s-top-fl" in ln), None),
                          15, 0.1)
        assert line.split()[:3] == ["devbox", "codex", workspace.root.name] and "working" in line
        wait_until(lambda: "MACHINE" in tmux.screen(), 5, 0.1)  # the titles' line, drawn with it
        assert "1 working" in tmux.screen()
        daemon.stop()  # its heartbeat goes: shown unreachable, as last heard, and not counted live
        wait_until(lambda: "unreachable" in next(ln for ln in tmux.screen().splitlines()
                                                  if "s-top-fl" in ln), 5, 0.1)
        assert "0 working" in tmux.screen() and "devbox: unreachable since" in tmux.screen()
        tmux.keys("q")
        wait_until(lambda: "exit=0" in tmux.screen(), 10, 0.1)
    finally:
        tmux.stop()
