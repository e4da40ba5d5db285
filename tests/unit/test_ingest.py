"""Ingestion and the workspace server stepped in process, with an explicit clock.

In process; those that start real processes are in tests/daemon/test_ingest_daemon.py.
"""

from __future__ import annotations

import os

import pytest

from sidecar.base.ids import harness_id
from sidecar.daemon.ingest import RETRY_SECONDS
from sidecar.vocabulary import EventKind
from support.ingest import CONFIG, T0, Fixture


@pytest.fixture
def f(ws) -> Fixture:
    return Fixture(ws)


def test_a_woken_step_applies_the_inbox_and_returns_the_next_timer(f):
    f.ingest.start(T0)
    f.drop("a", "session-start", "s1", T0)
    f.drop("b", "session-end", "s1", T0 + 1)
    deadline = f.ingest.step(T0 + 0.5, woken=True)
    assert deadline == T0 + CONFIG.reconcile_interval  # nothing held back: the reconcile is next
    assert list(f.ws.inbox.glob("*.json")) == []
    assert f.record("s1")["status"] == "completed"
    assert [c.kind for c in f.reported] == [EventKind.SESSION_START, EventKind.SESSION_END]
    assert [e.hook_id for e in f.queue.view(T0).pending] == ["post-task"]
    assert f.ingest.health.applied == 2


def test_an_unwoken_step_lists_nothing_until_the_reconcile_is_due(f):
    f.ingest.start(T0)
    f.drop("a", "session-start", "s1", T0)
    f.ingest.step(T0 + 1)  # no watch event, no timer due: the file waits
    assert len(list(f.ws.inbox.glob("*.json"))) == 1
    f.ingest.step(T0 + CONFIG.reconcile_interval)  # the reconcile finds what watches missed
    assert list(f.ws.inbox.glob("*.json")) == []


def test_a_file_still_being_written_is_judged_only_after_its_grace(f):
    f.ingest.start(T0)
    path = f.ws.inbox / "half.json"
    path.write_bytes(b'{"event": "session-start", ')
    os.utime(path, (T0, T0))
    assert f.ingest.step(T0 + 0.5, woken=True) == T0 + 2.0  # wake when its grace ends
    assert path.exists() and not list(f.ws.rejected.iterdir())
    f.ingest.step(T0 + 2.0)
    assert (f.ws.rejected / "half.json").exists() and f.ingest.health.rejected == 1


def test_producers_temporary_files_are_never_read_nor_rejected(f):
    for name in (".partial-write", "half.json.tmp"):
        (f.ws.inbox / name).write_bytes(b"{")
        os.utime(f.ws.inbox / name, (T0 - 1800, T0 - 1800))  # half an hour: still a producer's
    f.ingest.start(T0)
    f.ingest.step(T0 + 60, woken=True)
    assert (f.ws.inbox / ".partial-write").exists() and (f.ws.inbox / "half.json.tmp").exists()
    assert list(f.ws.rejected.iterdir()) == []
    # Left for over an hour, they were abandoned (a dead producer, a full disk): removed.
    f.ingest.prune(T0 + 3600)
    assert sorted(os.listdir(f.ws.inbox)) == ["rejected"]


def test_a_batch_that_cannot_be_saved_stays_and_is_retried_after_a_second(f):
    f.ingest.start(T0)
    f.drop("a", "session-start", "s1", T0)
    folder = f.ws.session_dir(harness_id("t", "s1"))
    folder.parent.mkdir(exist_ok=True)
    folder.write_text("a file where the session folder belongs")
    assert f.ingest.step(T0 + 1, woken=True) == T0 + 1 + RETRY_SECONDS
    assert len(list(f.ws.inbox.glob("*.json"))) == 1 and f.ingest.health.errors == 1
    f.ingest.step(T0 + 1.5, woken=True)  # too soon: held back, not retried
    assert f.ingest.health.errors == 1
    folder.unlink()
    f.ingest.step(T0 + 1 + RETRY_SECONDS)
    assert list(f.ws.inbox.glob("*.json")) == [] and f.record("s1")["status"] == "active"


def test_the_sweep_runs_on_its_timer_and_reports_to_plugins(f):
    f.ingest.start(T0)
    f.drop("a", "session-start", "old", T0)
    f.ingest.step(T0 + 1, woken=True)
    f.ingest.timers.sweep = T0 + 7200
    f.ingest.step(T0 + 3600 + 1)  # stale, but the sweep timer is not due yet
    assert f.record("old")["status"] == "active"
    f.ingest.step(T0 + 7200)
    assert f.record("old")["metadata"]["sidecar"]["completionReason"] == "stale"
    assert f.reported[-1].reason == "stale" and f.queue.view(T0).pending == []


def test_a_wall_clock_stepped_forward_makes_no_session_stale(f):
    f.ingest.start(T0)
    f.drop("a", "session-start", "s1", T0)
    f.ingest.step(T0 + 1, woken=True)
    day = 25 * 3600.0
    f.ingest.clock_stepped(day)  # as the server does when it sees the step
    assert f.ingest.step(T0 + day + 2) > T0 + day + 2  # its timers moved along: none is late
    f.ingest.sweep(T0 + day + 2)  # a day old by the wall clock, a second by what was seen
    assert f.record("s1")["status"] == "active"
    f.ingest.sweep(T0 + day + 1 + CONFIG.stale_after)  # stale by both
    assert f.record("s1")["metadata"]["sidecar"]["completionReason"] == "stale"


def test_a_stop_between_batches_leaves_the_rest_in_the_inbox(f, monkeypatch):
    monkeypatch.setattr("sidecar.daemon.ingest.BATCH_MAX", 3)
    f.ingest.start(T0)
    for i in range(7):
        f.drop(f"e{i}", "session-start", f"s{i}", T0 + i)
    f.stop = True
    f.ingest.step(T0 + 10, woken=True)
    assert len(list(f.ws.inbox.glob("*.json"))) == 4  # the batch in hand was finished

