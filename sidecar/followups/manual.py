"""What a person does to a queued follow-up by hand: cancel it, or make it due now.

Both are one change of hooks.json under its lock (store.HookStore.change), so they never race
a daemon's claim: an entry a daemon has claimed (it is starting or running) is left alone and
the caller is told why. Firing now only moves the due time; the daemon, woken by the change
of hooks.json, fires it as it fires any due entry, with every precondition (a resume still
waits for a quiet session, a command from hooks.json still runs only if trusted).
"""

from __future__ import annotations

from sidecar.base.errors import SidecarError
from sidecar.base.outcome import CANCELLED
from sidecar.base.timeutil import iso
from sidecar.followups.model import HooksDoc, QueueEntry
from sidecar.followups.store import HookStore
from sidecar.layout import Workspace


class NotChangeable(SidecarError):
    """The entry is gone, or a daemon has claimed it: the message says which."""


def _waiting(doc: HooksDoc, entry_id: str) -> QueueEntry:
    entry = doc.entry(entry_id)
    if entry is None:
        raise NotChangeable(f"follow-up {entry_id} is no longer queued")
    if entry.claimed_by or entry.run is not None:
        raise NotChangeable(f"follow-up {entry_id} has started already; it runs to its end")
    return entry


def cancel(ws: Workspace, entry_id: str, now: float) -> QueueEntry:
    """Drop a waiting entry from the queue; its hook's history says it was cancelled."""

    def edit(doc: HooksDoc) -> QueueEntry:
        entry = _waiting(doc, entry_id)
        doc.pending.remove(entry)
        hook = doc.hooks.get(entry.hook_id)
        if hook is not None:  # not a firing: the hook's lastFiredAt stays as it was
            hook.record_firing(CANCELLED, now, entry.host, entry.session_id, None, fired=False)
        return entry

    return HookStore(ws).change(now, edit)


def fire_now(ws: Workspace, entry_id: str, now: float) -> QueueEntry:
    """Make a waiting entry due now; the daemon fires it as usual."""

    def edit(doc: HooksDoc) -> QueueEntry:
        entry = _waiting(doc, entry_id)
        entry.due_at = iso(now)
        return entry

    return HookStore(ws).change(now, edit)
