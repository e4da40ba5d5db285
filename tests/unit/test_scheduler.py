"""The scheduler's decisions: which entry is due, and fire / postpone / skip. Pure functions."""

from __future__ import annotations

import pytest

from sidecar.base.timeutil import iso
from sidecar.followups.decide import TRANSCRIPT_QUIET, decide, next_due
from sidecar.followups.model import QueueEntry, new_hook
from sidecar.sessions.model import Facts
from sidecar.vocabulary import Verdict

T0 = 1_795_900_000.0


def entry(key, due, claimed_by=None):
    return QueueEntry(id=key, hook_id="h", host="x", session_id=key,
                      due_at=None if due is None else iso(due), claimed_by=claimed_by)


def test_the_earliest_unclaimed_due_entry_is_next():
    pending = [entry("late", T0 + 50), entry("soon", T0 + 5), entry("taken", T0 - 10, "other")]
    due = next_due(pending, set(), T0)
    assert due.entry is None and due.wake_at == T0 + 5  # sleep exactly until the first is due
    assert next_due(pending, set(), T0 + 5).entry.id == "soon"
    assert next_due(pending, {"soon"}, T0 + 5).wake_at == T0 + 50  # already running here


def test_an_unreadable_due_time_is_due_at_once_and_an_empty_queue_sleeps_until_woken():
    assert next_due([entry("now", None)], set(), T0).entry.id == "now"
    assert next_due([], set(), T0).wake_at is None


HOOK = new_hook("h", "h", T0, maxContextK=10)


@pytest.mark.parametrize("facts,verdict,reason", [
    (Facts(live=False), Verdict.FIRE, ""),
    (Facts(live=True), Verdict.POSTPONE, "session is live again"),
    (Facts(live=False, transcript_size=10, transcript_mtime=T0 - TRANSCRIPT_QUIET / 2),
     Verdict.POSTPONE, "transcript still changing"),
    (Facts(live=False, transcript_size=10, transcript_mtime=T0 - TRANSCRIPT_QUIET),
     Verdict.FIRE, ""),
    (Facts(live=True, cron=True), Verdict.SKIP, "cron session"),
    (Facts(live=False, subagent=True), Verdict.SKIP, "subagent session"),
    (Facts(live=False, transcript_size=80_000, transcript_mtime=T0 - 60), Verdict.SKIP,
     "context of about 20K tokens is over maxContextK 10"),
])
def test_verdicts(facts, verdict, reason):
    decision = decide(HOOK, facts, T0)
    assert (decision.verdict, decision.reason) == (verdict, reason)


def test_a_hook_that_does_not_skip_cron_fires_for_cron_sessions():
    hook = new_hook("h", "h", T0, skipCron=False, skipSubagents=False)
    assert decide(hook, Facts(live=False, cron=True, subagent=True), T0).verdict == Verdict.FIRE
