"""`sidecar status`: text, JSON and exit codes, with and without a live daemon.

Those that start real processes; the rest run in process in tests/unit/test_status.py.
"""

from __future__ import annotations

import os
import time

import orjson

from helpers import emit, end_session, run_cli, wait_until
from sidecar.layout import Workspace


def status(ws: Workspace, *args: str):
    return run_cli("status", "--root", str(ws.root), *args)


def test_status_with_a_live_daemon(workspace, start_daemon):
    daemon = start_daemon(workspace.root)
    emit(workspace.root, None, "session-start", "--session-id", "open-1", "--source", "claude-code")
    end_session(workspace.root, "done-1")
    (workspace.inbox / "bad.json").write_bytes(b"[]")
    stamp = time.time() - 10
    os.utime(workspace.inbox / "bad.json", (stamp, stamp))

    def settled():
        report = orjson.loads(status(workspace, "--json").stdout)["workspaces"][0]
        done = (report["sessions"]["completed"] == 1 and report["rejected"] == 1
                and report["inbox"]["backlog"] == 0)
        return report if done else None

    report = wait_until(settled)
    assert report["served"] is True
    [instance] = report["instances"]
    assert instance["pid"] == daemon.pid and instance["live"] and instance["role"] == "leader"
    assert instance["version"] and instance["startedAt"] and instance["heartbeatAt"]
    assert report["sessions"] == {"total": 2, "active": 1, "completed": 1}
    assert [(b["host"], b["sessionId"]) for b in report["bindings"]] == [("claude-code", "open-1")]
    assert report["bindings"][0]["ageSeconds"] >= 0
    assert report["inbox"] == {"backlog": 0, "oldestAgeSeconds": None}

    text = status(workspace)
    assert text.returncode == 0
    out = text.stdout.decode()
    assert f"pid {daemon.pid}" in out and "leader" in out
    assert "1 active, 1 completed" in out and "open-1" in out and "rejected   1" in out

    daemon.kill()  # a dead daemon is shown dead
    result = status(workspace)
    assert result.returncode == 3
    assert b"dead" in result.stdout


def test_backlog_counts_files_in_their_grace_period(workspace):
    (workspace.inbox / "partial.json").write_bytes(b"{")
    emit(workspace.root, None, "x", "--session-id", "s")
    report = orjson.loads(status(workspace, "--json").stdout)["workspaces"][0]
    assert report["inbox"]["backlog"] == 2
    assert report["inbox"]["oldestAgeSeconds"] >= 0


def test_all_shows_every_registered_workspace(tmp_path, config_home, start_daemon):
    roots = [tmp_path / "a", tmp_path / "b"]
    for root in roots:
        root.mkdir()
        run_cli("init", str(root))
    start_daemon(roots[0])
    result = run_cli("status", "--all", "--json")
    report = orjson.loads(result.stdout)
    assert [w["root"] for w in report["workspaces"]] == [str(r) for r in roots]
    assert [w["served"] for w in report["workspaces"]] == [True, False]
    assert result.returncode == 3
