"""Follow-ups stepped in process on a disk without room (ENOSPC) at each write a firing makes:
a claim whose action cannot start is given back (in memory first, where even that cannot be
written) and fires once there is room; none is recorded as failed, none is left claimed."""

from __future__ import annotations

import errno

import pytest
from test_followups import T0, Harness, ev, wait_out

from helpers import wait_until
from sidecar.base import storage
from sidecar.followups.run import actions

DUE = T0 + 20


def no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def h(tmp_path) -> Harness:
    harness = Harness(tmp_path).use_command_hook()
    harness.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    return harness


def fires_once_at(h: Harness, now: float) -> None:
    """A step at `now` fires the session's follow-up, once and ok, and leaves nothing queued."""
    h.followups.step(now)
    wait_out(h.followups, now)
    assert h.firings() == ["s1"] and h.pending() == []
    assert [f.status for f in h.hook().history] == ["ok"]


def test_nothing_is_claimed_while_the_disk_is_full(h, monkeypatch):
    with monkeypatch.context() as full:
        full.setattr(storage, "trouble", lambda path: "is on a full disk (0 KiB free)")
        assert h.followups.step(DUE) is not None  # looked at again soon
        [entry] = h.pending()
        assert entry.claimed_by is None and h.firings() == []
    fires_once_at(h, DUE + 5)


def test_an_action_that_cannot_start_for_want_of_room_is_given_back(h, monkeypatch):
    with monkeypatch.context() as full:
        full.setattr(actions, "start", no_space)  # its log cannot be written, say
        h.followups.step(DUE)
        [entry] = h.pending()
        assert entry.claimed_by is None and h.hook().history == []  # not lost, not failed
    fires_once_at(h, DUE + 5)


def test_a_claim_that_cannot_even_be_given_back_is_given_back_later(h, monkeypatch):
    with monkeypatch.context() as full:
        full.setattr(actions, "start", no_space)
        full.setattr(h.queue, "release", no_space)
        h.followups.step(DUE)
        [entry] = h.pending()
        assert entry.claimed_by == "me"  # written so before the disk filled
    fires_once_at(h, DUE + 5)  # given back, claimed again and fired


def test_an_outcome_that_cannot_be_recorded_is_recorded_later(h, monkeypatch):
    h.followups.step(DUE)
    with monkeypatch.context() as full:
        full.setattr(h.queue, "finish", no_space)
        wait_until(lambda: h.followups.check_running(DUE + 1) or h.followups.room.waiting)
        assert h.firings() == ["s1"] and h.pending()[0].run is not None  # it ended, unrecorded
    h.followups.step(DUE + 5)
    assert h.pending() == [] and [f.status for f in h.hook().history] == ["ok"]
    assert h.firings() == ["s1"]  # once


# -- the writes themselves failing (the disk filled past the check) --------------------------

@pytest.mark.parametrize("failing", ["hooks.json", "hooks.last-good.json"])
def test_a_claim_whose_write_fails_is_never_left_claimed(h, monkeypatch, failing):
    """The claim's write of `failing` runs out of room: the claim held in memory must not
    outlive it (a live instance's claim is never recovered, so it would never fire)."""
    from sidecar import jsonfile

    real = jsonfile.write_bytes_atomic

    def full(path, *args, **kwargs):
        if path.name == failing:
            no_space()
        return real(path, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(jsonfile, "write_bytes_atomic", full)
        h.followups.step(DUE)
    for at in (DUE + 5, DUE + 10, DUE + 60):
        h.followups.step(at)
        wait_out(h.followups, at)
    assert h.firings() == ["s1"] and h.pending() == []


def test_an_outcome_whose_write_fails_is_recorded_and_told_once_later(h, monkeypatch):
    from sidecar import jsonfile
    from sidecar.procwatch import is_alive

    told = []
    h.followups.on_fired = told.append
    h.followups.step(DUE)
    [run] = h.followups.running.values()
    wait_until(lambda: h.firings() and (actions.reap(run.proc.pid) or not is_alive(run.proc)))
    with monkeypatch.context() as full:
        full.setattr(jsonfile, "write_bytes_atomic", no_space)
        h.followups.check_running(DUE + 1)  # ended, and its outcome cannot be written
        assert list(h.followups.running) and told == []
    for at in (DUE + 5, DUE + 10):
        h.followups.step(at)
        wait_out(h.followups, at)
    assert [f.status for f in h.hook().history] == ["ok"]
    assert [f.status for f in told] == ["ok"] and h.pending() == []
