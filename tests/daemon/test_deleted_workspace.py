"""A workspace deleted while a daemon serves it is set aside once, said in one line (never a
traceback a second), and served again once `sidecar init` makes it again."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from helpers import emit, run_cli, session_record, wait_until

WATCHED = 6.0  # seconds: three looks at a workspace set aside, and a step a second before


def _leading(daemon, root: Path) -> int:
    return daemon.output().count(f"{root}: leading")


def test_a_deleted_workspace_is_said_once_and_served_again_once_back(workspace, start_daemon):
    root = workspace.root
    daemon = start_daemon()  # serving what the registry names, as the service does
    emit(root, None, "session-start", "--session-id", "before", "--source", "x")
    wait_until(lambda: session_record(workspace, "before", "x"), 15)
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
    record = wait_until(lambda: session_record(workspace, "after", "x"), 15)
    assert record["status"] == "active"
    assert "Traceback" not in daemon.output()
    assert daemon.proc.poll() is None
