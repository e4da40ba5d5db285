"""Ingestion and the workspace server stepped in process, with an explicit clock.

Those that start real processes; the rest run in process in tests/unit/test_ingest.py.
"""

from __future__ import annotations

import shutil
import time

import pytest

from helpers import read_json
from sidecar import locks
from sidecar.coordination.instances import Identity
from sidecar.daemon import process as daemon_mod
from sidecar.daemon.lead import STANDBY_RETRY
from sidecar.daemon.workspace import WorkspaceServer
from sidecar.layout import Workspace
from support.ingest import CONFIG, T0, Fixture


def server(ws: Workspace) -> WorkspaceServer:
    return WorkspaceServer(ws, lambda: CONFIG, Identity())


def test_a_standby_never_applies_while_another_holds_the_leader_lock(ws):
    held = locks.try_lock(ws.lock("leader"))
    standby = server(ws)
    standby.open()
    try:
        Fixture(ws).drop("a", "session-start", "s1", T0)
        standby.notice_arrival()
        for i in range(20):
            assert standby.step(T0 + i) == T0 + i + STANDBY_RETRY
        assert not standby.lead.leading and len(list(ws.inbox.glob("*.json"))) == 1
        info = read_json(standby.lead.membership.file)
        assert info["role"] == "standby"
        locks.release(held)
        standby.step(T0 + 30)  # the lock is free: it takes over and applies at once
        assert standby.lead.leading and list(ws.inbox.glob("*.json")) == []
        assert read_json(standby.lead.membership.file)["role"] == "leader"
    finally:
        standby.close()
    assert not standby.lead.membership.file.exists()


def test_the_serving_loop_survives_an_unexpected_error_and_steps_again(ws, monkeypatch):
    d = daemon_mod.Daemon([ws.root], CONFIG)
    s = server(ws)
    calls = []

    def flaky_step(now):
        calls.append(now)
        if len(calls) == 1:
            raise RuntimeError("a surprise")
        return now

    monkeypatch.setattr(s, "step", flaky_step)
    # The loop's time is monotonic (here 50 s); the step gets the wall clock's.
    assert d._step(s, 50.0) == 51.0  # tried again in 1 s
    d._step(s, 51.0)  # and stepped as usual after
    assert calls == [pytest.approx(time.time(), abs=5)] * 2
    assert s.ingest.health.errors == 1 and "a surprise" in s.ingest.health.last_error
    s.close()
    d.folders.stop()
    shutil.rmtree(ws.runtime / "instances", ignore_errors=True)


def test_running_out_of_open_files_in_a_step_sets_the_workspace_aside_once(ws, monkeypatch,
                                                                          caplog):
    """EMFILE (the process's file limit, which a test cannot safely exhaust beside pytest)."""
    import errno

    d = daemon_mod.Daemon([ws.root], CONFIG)
    s = server(ws)

    def no_files(now):
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(s, "step", no_files)
    for _ in range(3):
        assert d._step(s, 50.0) == 50.0 + daemon_mod.SET_ASIDE_RETRY
    assert s.ingest.health.errors == 1  # said once, not at every retry
    assert "raise LimitNOFILE= in the service unit" in s.ingest.health.last_error
    assert "Traceback" not in caplog.text
    s.close()
    d.folders.stop()
