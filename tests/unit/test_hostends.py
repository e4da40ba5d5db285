"""When the daemon asks a host whether it recorded a session's end (daemon/hostends.py): soon
after a turn end, on the sweep's cadence for every live session, never for other hosts,
never again once ended, and never taking an earlier run's end for a resumed one's."""

from __future__ import annotations

import math

import orjson
import pytest

from sidecar import owner
from sidecar.daemon import hostends
from sidecar.daemon.hostends import LOOKS_AFTER_TURN, RecordedEnds, end_event
from sidecar.hosts.base import EndFacts, Failure, RecordedEnd, Tokens
from sidecar.hosts.cline import host as cline
from sidecar.inbox.events import parse
from sidecar.layout import Workspace
from sidecar.vocabulary import EventKind, SessionChange

T0 = 1_796_000_000.0
KEY = ("cline", "1_a")


def change(kind, ts=T0, host="cline", session="1_a"):
    return SessionChange(kind=kind, host=host, session_id=session, harness_session_id="h", ts=ts)


@pytest.fixture
def asked(monkeypatch):
    """Cline's answers, by session (None: it goes on), and every session it was asked of."""
    state = {"answers": {}, "asked": []}

    def recorded_end(self, session_id, home, read):
        state["asked"].append(session_id)
        answer = state["answers"].get(session_id)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(cline.Cline, "recorded_end", recorded_end)
    return state


def ends(tmp_path, live=(), interval=60.0):
    return RecordedEnds(Workspace(tmp_path), lambda: list(live), lambda: interval)


def test_a_turn_end_is_followed_by_two_looks_then_the_rounds(tmp_path, asked):
    watch = ends(tmp_path)
    watch.ended(T0)  # the first round, at once: nothing live
    watch.note([change(EventKind.SESSION_START), change(EventKind.TURN_END, T0 + 10)])
    assert watch.due() == T0 + 10 + LOOKS_AFTER_TURN[0]
    assert watch.ended(T0 + 10.5) == [] and asked["asked"] == []
    assert watch.ended(T0 + 11) == [] and asked["asked"] == ["1_a"]  # it says: still running
    assert watch.due() == T0 + 10 + LOOKS_AFTER_TURN[1]
    asked["answers"]["1_a"] = RecordedEnd("completed", "/m.json", T0 + 12)
    assert watch.ended(T0 + 15) == [(KEY, RecordedEnd("completed", "/m.json", T0 + 12))]
    assert watch.due() == math.inf  # ended: nothing left to look at


def test_every_round_asks_the_live_sessions_of_such_hosts_only(tmp_path, asked):
    watch = ends(tmp_path, live=[KEY, ("claude-code", "s"), ("cline", "1_b")], interval=5)
    asked["answers"]["1_b"] = RecordedEnd("cancelled", None, T0 - 5)
    assert watch.ended(T0) == [(("cline", "1_b"), RecordedEnd("cancelled", None, T0 - 5))]
    assert sorted(asked["asked"]) == ["1_a", "1_b"]  # Claude Code records nothing of the kind
    assert watch.ended(T0 + 4) == [] and len(asked["asked"]) == 2
    watch.ended(T0 + 5)
    assert len(asked["asked"]) == 4


def test_an_ended_session_is_not_looked_at_again(tmp_path, asked):
    watch = ends(tmp_path)
    watch.ended(T0)
    watch.note([change(EventKind.TURN_END), change(EventKind.SESSION_END, T0 + 0.1)])
    watch.ended(T0 + 10)
    assert asked["asked"] == []


def test_other_hosts_turn_ends_ask_nothing_and_wake_nothing(tmp_path, asked):
    watch = ends(tmp_path)
    assert watch.due() == 0.0  # the first round, at once: what a restart left live
    watch.ended(T0)
    assert watch.due() == math.inf  # no live session of such a host: nothing to wake for
    watch.note([change(EventKind.TURN_END, host="claude-code")])
    assert watch.due() == math.inf
    watch.note([change(EventKind.SESSION_START)])
    assert watch.due() == T0 + 60  # a live Cline session: the rounds go on
    watch.note([change(EventKind.SESSION_END, T0 + 1)])
    assert watch.due() == math.inf


def test_the_end_of_an_earlier_run_does_not_end_a_resumed_one(tmp_path, asked):
    watch = ends(tmp_path)
    watch.ended(T0)
    asked["answers"]["1_a"] = RecordedEnd("completed", None, T0 - 100)  # the last run's
    watch.note([change(EventKind.SESSION_START, T0), change(EventKind.TURN_END, T0 + 1)])
    assert watch.ended(T0 + 10) == []
    asked["answers"]["1_a"] = RecordedEnd("completed", None, T0 + 1.5)  # this run's
    assert watch.ended(T0 + 10) == [(KEY, RecordedEnd("completed", None, T0 + 1.5))]


def test_a_host_that_fails_to_answer_stops_nothing(tmp_path, asked):
    watch = ends(tmp_path, live=[KEY, ("cline", "1_b")])
    asked["answers"]["1_a"] = MemoryError("a huge file")
    asked["answers"]["1_b"] = RecordedEnd("failed", None, T0 - 1)
    assert watch.ended(T0) == [(("cline", "1_b"), RecordedEnd("failed", None, T0 - 1))]


def test_a_root_daemon_reads_the_owners_records_as_the_owner(tmp_path, asked, monkeypatch):
    account = owner.Account(1234, 1234, (), "ann", str(tmp_path / "ann"), "/bin/sh")
    monkeypatch.setattr(owner, "foreign_owner", lambda ws: account)
    read_as = []
    monkeypatch.setattr(owner, "read_owned", lambda path, uid: read_as.append((path, uid)))
    home, read = hostends.owners_files(Workspace(tmp_path))
    assert home == tmp_path / "ann"
    read(home / "x.json")
    assert read_as == [(home / "x.json", 1234)]


def test_a_workspace_no_one_can_act_for_asks_nothing(tmp_path, asked, monkeypatch):
    def refuse(ws):
        raise owner.CannotActAsOwner("a symlink on the way")

    monkeypatch.setattr(owner, "foreign_owner", refuse)
    assert ends(tmp_path, live=[KEY]).ended(T0) == [] and asked["asked"] == []


def test_an_end_that_does_not_say_when_is_not_taken(tmp_path, asked):
    # It cannot be told from an earlier run's; the process watch and the sweep still end it.
    watch = ends(tmp_path, live=[KEY])
    asked["answers"]["1_a"] = RecordedEnd("completed")
    assert watch.ended(T0) == [] and asked["asked"] == ["1_a"]


def test_the_end_dropped_says_when_the_host_recorded_it_and_what_was_read_with_it():
    facts = EndFacts(Failure("rate_limit", "429 slow down"), Tokens(input=3, output=2))
    event = end_event("cline", "1_a", RecordedEnd("failed", "/h/m.json", T0 - 1, facts), T0)
    assert event == {"event": "session-end", "session_id": "1_a", "host": "cline",
                     "reason": "failed", "ts": T0, "recordedEndAt": T0 - 1,
                     "transcript_path": "/h/m.json", "recordedFacts": {
                         "failure": {"kind": "rate_limit", "message": "429 slow down"},
                         "tokens": {"input": 3, "output": 2, "cacheRead": 0, "cacheWrite": 0}}}
    parsed = parse(orjson.dumps(event), "x.json", T0)
    assert parsed.recorded_end_at == T0 - 1 and parsed.recorded_facts == facts


def test_a_leaders_own_read_of_its_live_sessions_begins_the_rounds(tmp_path, asked):
    # The leader read its live sessions to watch their hosts: the rounds take them from that
    # read, so a workspace with no session of such a host reads its bindings for them never.
    reads = []
    watch = RecordedEnds(Workspace(tmp_path), lambda: reads.append(1) or [KEY], lambda: 60.0)
    watch.begin([("claude-code", "s")], T0)
    assert watch.due() == math.inf
    assert watch.ended(T0 + 600) == [] and reads == [] and asked["asked"] == []
    watch.note([change(EventKind.SESSION_START, T0 + 601)])  # a Cline session begins
    assert watch.due() == T0 + 60
    watch.ended(T0 + 660)
    assert reads == [1] and asked["asked"] == ["1_a"]
    restarted = RecordedEnds(Workspace(tmp_path), lambda: reads.append(1) or [KEY], lambda: 60.0)
    restarted.begin([KEY, ("claude-code", "s")], T0)
    assert restarted.due() == T0  # a live Cline session: asked at once
    restarted.ended(T0)
    assert asked["asked"] == ["1_a", "1_a"]
