"""What a person does to a follow-up by hand: cancel a queued one, make it due now, or run a
failed one again.

Each is one change of hooks.json under its lock (store.HookStore.change), so it never races
a daemon's claim: an entry a daemon has claimed (it is starting or running) is left alone and
the caller is told why. Firing now only moves the due time, and a retry only queues a new
entry, due now; the daemon, woken by the change of hooks.json, fires it as it fires any due
entry, with every precondition (a resume still waits for a quiet session, a command from
hooks.json still runs only if trusted). Nothing here runs an action itself.
"""

from __future__ import annotations

from sidecar.base import words
from sidecar.base.errors import SidecarError
from sidecar.base.outcome import CANCELLED, Outcome
from sidecar.base.timeutil import iso, parse_ts
from sidecar.followups import trust
from sidecar.followups.model import FiringRecord, Hook, HooksDoc, QueueEntry, entry_id
from sidecar.followups.notify.targets import Notify
from sidecar.followups.store import HookStore
from sidecar.layout import Workspace
from sidecar.sessions.model import Key


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
            hook.record_firing(CANCELLED, now, entry.host, entry.session_id, None, fired=False,
                               retry=entry.retry)
        return entry

    return HookStore(ws).change(now, edit)


def fire_now(ws: Workspace, entry_id: str, now: float) -> QueueEntry:
    """Make a waiting entry due now; the daemon fires it as usual."""

    def edit(doc: HooksDoc) -> QueueEntry:
        entry = _waiting(doc, entry_id)
        entry.due_at = iso(now)
        return entry

    return HookStore(ws).change(now, edit)


def last_run(hook: Hook, host: str, session_id: str) -> FiringRecord | None:
    """The hook's last firing for the session that ran its action, or was refused as not
    trusted (then nothing ran); a skip or a cancellation ran nothing and decides nothing."""
    for firing in reversed(hook.history):
        ended = Outcome.parse(firing.status)
        if (firing.host, firing.session_id) == (host, session_id) and (
                ended.ok or ended.failed or ended == trust.NOT_TRUSTED):
            return firing
    return None


def retry(ws: Workspace, hook_id: str, host: str, session_id: str, harness_session_id: str,
          now: float) -> QueueEntry:
    """Queue a hook once more for a session whose last firing of it failed: a new entry, due
    now and marked a retry, which the daemon fires as any other (so trust and every
    precondition hold) and whose outcome its history records as a retry. The session's own
    record is not touched: the hook was queued for it once, and so it never queues again
    (once per session). NotChangeable says why not: no such hook, a notice, switched off,
    queued or running still, never fired, its last firing did not fail, not trusted now."""
    name = f"{host} session {words.short_id(session_id)}"

    def edit(doc: HooksDoc) -> QueueEntry:
        hook = doc.hooks.get(hook_id)
        if hook is None:
            raise NotChangeable(f"no hook {hook_id!r} (have: {', '.join(doc.hooks) or 'none'})")
        _retryable(ws, doc, hook, (host, session_id), name, now)
        entry = QueueEntry(id=entry_id(hook_id, host, session_id), hook_id=hook_id, host=host,
                           session_id=session_id, harness_session_id=harness_session_id,
                           enqueued_at=iso(now), due_at=iso(now), retry=True)
        doc.pending.append(entry)
        return entry

    return HookStore(ws).change(now, edit)


def _retryable(ws: Workspace, doc: HooksDoc, hook: Hook, key: Key, name: str, now: float) -> None:
    """NotChangeable unless the hook's last firing for the session failed and it may run now."""
    if isinstance(hook.action, Notify):
        raise NotChangeable(f"{hook.id} sends notices; a notice tells of its moment and is not "
                            "run again")
    if not hook.enabled:
        raise NotChangeable(f"{hook.id} is switched off; switch it on first "
                            f"(sidecar hooks enable {hook.id})")
    waiting = [e for e in doc.pending if e.hook_id == hook.id and (e.host, e.session_id) == key]
    if any(e.claimed_by or e.run is not None for e in waiting):
        raise NotChangeable(f"{hook.id} for {name} is running; it runs to its end")
    if waiting:
        raise NotChangeable(f"{hook.id} for {name} is queued already; it fires when due "
                            "(`f` in sidecar top fires it now)")
    last = last_run(hook, *key)
    if last is None:
        raise NotChangeable(f"{hook.id} never fired for {name}: there is no failed firing to run again")
    if not (Outcome.parse(last.status).failed or Outcome.parse(last.status) == trust.NOT_TRUSTED):
        at = parse_ts(last.at)
        when = "" if at is None else f" {words.ago(at, now)}"
        raise NotChangeable(f"{hook.id} for {name} ended {last.status}{when}; only a failed "
                            "firing is run again (a hook runs once per session)")
    if trust.untrusted(ws, [hook]):
        raise NotChangeable(f"{hook.id} is not trusted on this machine as it stands, so it would "
                            f"run nothing; see it and trust it first (sidecar hooks trust {hook.id})")
