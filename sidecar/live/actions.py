"""What `c` and `f` do to the selected session: cancel its waiting follow-up, fire it now, or
run a failed one again.

The row names the follow-up by hook; the queue entry (its id carries a limit try's number) is
looked up in hooks.json as it is now, then changed through followups/manual.py. With nothing
waiting, `f` retries the hook of the row's newest outcome (manual.retry says why not, unless it
failed); the daemon fires the retry as any follow-up.
"""

from __future__ import annotations

from sidecar.base import words
from sidecar.followups import manual
from sidecar.followups import store as hook_store
from sidecar.followups.model import QueueEntry
from sidecar.layout import Workspace
from sidecar.views.sessions import SessionRow

ACTIONS = ("cancel", "fire")  # what a view can ask of a session's follow-up (`act_on`)


def waiting_entry(ws: Workspace, row: SessionRow) -> QueueEntry | None:
    """The session's first follow-up that waits to fire (not claimed by a daemon)."""
    pending = hook_store.read_view(ws).pending
    mine = [e for e in pending if (e.host, e.session_id) == (row.host, row.session_id)
            and not e.claimed_by and e.run is None]
    return min(mine, key=lambda e: (e.due, e.id)) if mine else None


def act_on(ws: Workspace, row: SessionRow, what: str, now: float) -> str:
    """`cancel` or `fire` the session's waiting follow-up (`fire`: else retry its failed one);
    what was done, in words."""
    entry = waiting_entry(ws, row)
    name = f"{row.host} session {words.short_id(row.session_id)}"
    if entry is None and what == "fire" and row.follow_ups:
        hook_id = row.follow_ups[0].hook_id
        manual.retry(ws, hook_id, row.host, row.session_id, row.harness_id, now)
        return f"{hook_id} for {name} is queued again, due now; the daemon fires it"
    if entry is None:
        return f"{name} has no follow-up waiting to fire"
    if what == "cancel":
        manual.cancel(ws, entry.id, now)
        return f"cancelled {entry.hook_id} for {name}"
    manual.fire_now(ws, entry.id, now)
    return f"{entry.hook_id} for {name} is due now; the daemon fires it"
