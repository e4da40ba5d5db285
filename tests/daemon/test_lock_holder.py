"""The test support's lock holder bites: with a workspace's locks held from outside, a sidecar
on the file backend stands by (and leads once they are let go), and a lock held already makes
the holder fail, naming it."""

from __future__ import annotations

import time

import pytest

from helpers import instance_docs, is_serving, wait_until
from sidecar import locks
from support.lock_holder import LOCK_NAMES, holding_locks, lock_paths


def roles(ws, pid: int) -> list[str]:
    return [doc.get("role") for doc in instance_docs(ws) if doc.get("pid") == pid]


def test_the_lock_files_are_the_workspaces_own(workspace):
    assert lock_paths(workspace.root) == [workspace.lock(name) for name in LOCK_NAMES]


def test_a_file_backend_sidecar_stands_by_while_the_locks_are_held(workspace, start_daemon):
    with holding_locks(workspace.root):
        assert all(locks.is_held(path) for path in lock_paths(workspace.root))
        daemon = start_daemon(workspace.root, wait_leader=False)
        wait_until(lambda: roles(workspace, daemon.pid) == ["standby"], 15)
        time.sleep(1.5)  # three heartbeats of the test config: it still does not lead
        assert roles(workspace, daemon.pid) == ["standby"]
        assert daemon.proc.poll() is None
    assert not any(locks.is_held(path) for path in lock_paths(workspace.root)
                   if path.name != "leader.lock")
    wait_until(lambda: is_serving(workspace, daemon), 15)  # let go: it leads


def test_a_lock_held_already_fails_the_holder_naming_it(workspace):
    taken = locks.try_lock(workspace.lock("hooks"))
    try:
        with pytest.raises(RuntimeError, match=r"hooks\.lock is held already"):
            with holding_locks(workspace.root):
                pass
    finally:
        locks.release(taken)
    assert not locks.is_held(workspace.lock("leader"))  # what it had taken, it let go
