"""A workspace deleted while a daemon serves it is set aside once, said in one line (never a
traceback a second), and served again once `sidecar init` makes it again."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import orjson

from helpers import emit, run_cli, wait_until
from sidecar.base.ids import harness_id
from sidecar.layout import Workspace

WATCHED = 6.0  # seconds: three looks at a workspace set aside, and a step a second before


def _recorded(ws: Workspace, session: str) -> bool:
    return (ws.session_dir(harness_id("x", session)) / "session.json").is_file()


def _leading(daemon, root: Path) -> int:
    return daemon.output().count(f"{root}: leading")


def test_a_deleted_workspace_is_said_once_and_served_again_once_back(workspace, start_daemon):
    root = workspace.root
    daemon = start_daemon()  # serving what the registry names, as the service does
    emit(root, None, "session-start", "--session-id", "before", "--source", "x")
    wait_until(lambda: _recorded(workspace, "before"), 15)
    before = daemon.output()

    shutil.rmtree(root)
    time.sleep(WATCHED)
    said = daemon.output()[len(before):]
    assert "Traceback" not in said, said
    lines = said.splitlines()
    assert len(lines) == 1, lines
    assert str(root) in lines[0] and "deleted" in lines[0]
    assert f"`sidecar init {root}`" in lines[0]
    assert not root.exists()  # never made again by the daemon itself

    root.mkdir()
    assert run_cli("init", str(root)).returncode == 0
    wait_until(lambda: _leading(daemon, root) == 2, 15)
    emit(root, None, "session-start", "--session-id", "after", "--source", "x")
    wait_until(lambda: _recorded(workspace, "after"), 15)
    record = orjson.loads((workspace.session_dir(harness_id("x", "after"))
                           / "session.json").read_bytes())
    assert record["status"] == "active"
    assert "Traceback" not in daemon.output()
    assert daemon.proc.poll() is None
