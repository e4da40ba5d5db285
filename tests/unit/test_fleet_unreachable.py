"""A session of a machine that stopped publishing is shown as last heard and never as live: in
`top` (its state `unreachable`, left out of the counts, of "next due" and of active-only) and
in the web view's counts and next due follow-up."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from sidecar.top import view
from sidecar.top.table import Table
from sidecar.views.activity import Activity, State
from sidecar.views.sessions import FollowUp, SessionRow
from sidecar.web import rows as web_rows


def row(hid: str, machine: str, reachable: bool) -> SessionRow:
    now = time.time()
    return SessionRow(root=Path("/home/u/app"), host="codex", session_id=f"s-{hid}", harness_id=hid,
                      started_at=now, updated_at=now, ended_at=None, reason=None,
                      activity=Activity(State.WORKING, now, "turn started"), tokens=None,
                      follow_ups=(FollowUp("note", "queued", now + 60 if reachable else now + 5),),
                      cwd=None, machine=machine, reachable=reachable)


def test_top_counts_and_next_due_leave_an_unreachable_machine_out_and_say_so():
    live, gone = row("h1", "laptop", True), row("h2", "ci-7", False)
    table = Table()
    table.update({r.key: r for r in (live, gone)}, 1)
    assert (table.counts.working, table.counts.queued, table.counts.total) == (1, 1, 2)
    assert table.next is not None and table.next[1] is live  # ci-7's, due sooner, cannot fire now
    assert view.cells(gone, time.time())[4:6] == ["unreachable", "as last heard: working"]
    table.active_only = True
    table.update({r.key: r for r in (live, gone)}, 1)
    assert table.counts.shown == 1
    back = dataclasses.replace(gone, reachable=True)  # heard again: live again
    table.update({r.key: r for r in (live, back)}, 2)
    assert table.counts.working == 2 and table.next is not None and table.next[1] is back


def test_the_web_views_counts_and_next_due_leave_an_unreachable_machine_out():
    live, gone = row("h1", "laptop", True), row("h2", "ci-7", False)
    counted = web_rows.counts([live, gone])
    assert (counted["working"], counted["queued"]) == (1, 1)
    due = web_rows.next_due([live, gone])
    assert due is not None and due["key"] == web_rows.key_text(live.key)
    told = web_rows.session(gone, time.time(), None)
    assert (told["reachable"], told["stateWords"], told["whyWords"]) == \
        (False, "unreachable", "as last heard: working")
