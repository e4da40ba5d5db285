"""The queue's recovery only records: a claim that may have started waits for the firing
step to settle it (outside the queue's lock), and is then adopted or dropped as it says."""

from __future__ import annotations

from sidecar.base.outcome import INTERRUPTED, OK
from sidecar.base.timeutil import iso
from sidecar.followups.model import QueueEntry, new_hook
from sidecar.followups.queue import FollowUpQueue, Settled
from sidecar.followups.store import HookStore
from sidecar.procwatch import Proc
from support.stores import seeded_workspace

T0 = 1_795_900_000.0
LOG = "20261201T000000Z-s1.log"


def queue_with_dead_claim(tmp_path, log: str | None = LOG) -> FollowUpQueue:
    store = HookStore(seeded_workspace(tmp_path, T0), durable=False)

    def edit(doc):
        doc.hooks = {"rec": new_hook("rec", "rec", T0, action="resume", promptFile=None)}
        doc.pending = [QueueEntry(id="rec:codex:s1", hook_id="rec", host="codex",
                                  session_id="s1", harness_session_id="h1", enqueued_at=iso(T0),
                                  due_at=iso(T0), claimed_by="dead-one", claimed_at=iso(T0),
                                  log=log)]
    store.change(T0, edit)
    return FollowUpQueue(store, "me")


def dead(instance: str) -> bool:
    return False


def test_a_claim_that_may_have_started_is_left_until_it_is_settled(tmp_path):
    queue = queue_with_dead_claim(tmp_path)
    assert [e.id for e in queue.unsettled(dead, T0)] == ["rec:codex:s1"]
    assert queue.recover(dead, T0) == []
    assert [e.claimed_by for e in queue.view(T0).pending] == ["dead-one"]  # untouched


def test_a_settled_claim_whose_runner_never_started_records_its_outcome_once(tmp_path):
    queue = queue_with_dead_claim(tmp_path)
    settled = {"rec:codex:s1": Settled(None, INTERRUPTED, LOG)}
    assert queue.recover(dead, T0, settled) == []
    view = queue.view(T0)
    assert view.pending == [] and view.hooks["rec"].last_status == "error: interrupted"
    assert queue.recover(dead, T0, settled) == []
    assert len(queue.view(T0).hooks["rec"].history) == 1


def test_a_settled_claim_whose_runner_runs_is_adopted_and_vouched_for(tmp_path):
    queue = queue_with_dead_claim(tmp_path)
    settled = {"rec:codex:s1": Settled(Proc(4242, 77), None, LOG)}
    [adopted] = queue.recover(dead, T0 + 5, settled)
    assert adopted.claimed_by == "me" and adopted.run is not None
    assert (adopted.run.pid, adopted.run.start) == (4242, 77) and adopted.run.mac


def test_a_settlement_made_for_another_claim_is_not_applied(tmp_path):
    queue = queue_with_dead_claim(tmp_path)
    settled = {"rec:codex:s1": Settled(None, OK, "20261201T000001Z-s1.log")}
    assert queue.recover(dead, T0, settled) == []
    assert len(queue.view(T0).pending) == 1


def test_a_dead_claim_without_a_log_never_started_and_is_interrupted(tmp_path):
    queue = queue_with_dead_claim(tmp_path, log=None)
    assert queue.unsettled(dead, T0) == []
    assert queue.recover(dead, T0) == []
    assert queue.view(T0).hooks["rec"].last_status == "error: interrupted"
