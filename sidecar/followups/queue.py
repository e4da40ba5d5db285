"""The follow-up queue's operations, each one durable change of hooks.json.

add (at session boundaries), claim (before firing: at most once), started (the action runs,
detached), postpone, release, finish (by the claim's holder only: once), and recover (a
leader adopts started actions; claims of dead instances that never started become
`error: interrupted`, never retried). The queue only records: it never starts, signals or
waits on a process (a claim left unsettled is settled by the firing step, fire.py). The queue
entry for a session is written before the session records it, so a crash in between is
absorbed by `add`'s duplicate check when the batch is replayed.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sidecar.base.endreasons import STALE
from sidecar.base.outcome import INTERRUPTED, Outcome, error, postponed, skipped
from sidecar.base.timeutil import iso, parse_ts
from sidecar.followups import trust
from sidecar.followups.decide import TRANSCRIPT_QUIET
from sidecar.followups.model import Hook, HooksDoc, QueueEntry, Run, entry_id
from sidecar.followups.notify import notices
from sidecar.followups.resets import MAX_TRIES, next_try
from sidecar.followups.store import HookStore, HooksView
from sidecar.layout import Workspace
from sidecar.procwatch import Proc
from sidecar.sessions.model import Key
from sidecar.vocabulary import LIMIT_ERRORS, EventKind, FollowUpEvent, SessionChange

log = logging.getLogger("sidecar")

MAX_POSTPONES = 10
FOREIGN_RUN = error("its run record was not written by this user's sidecar; nothing was adopted or signalled")
TURN_INTERRUPTED = notices.TURN_INTERRUPTED  # a session-end hook's default for it
POSTPONE_SECONDS = 60.0


@dataclass(frozen=True)
class Claimed:
    """A claimed entry and its hook, as they were when claimed."""

    entry: QueueEntry
    hook: Hook


@dataclass(frozen=True)
class Settled:
    """How the firing step settled a claim whose instance died before recording its action's
    start (`actions.settle_start`, outside the queue's lock): the runner that started and runs
    on (`proc`), else the outcome it ended with, or that it never will start (`outcome`)."""

    proc: Proc | None
    outcome: Outcome | None  # None while its runner runs on (`proc`)
    log: str | None  # the claim's log name it was settled for (a new claim is not this one)


class FollowUpQueue:
    """One workspace's queue of follow-up firings, kept in hooks.json."""

    def __init__(self, store: HookStore, instance_id: str) -> None:
        self.store = store
        self.instance_id = instance_id

    def view(self, now: float) -> HooksView:
        return self.store.snapshot(now)

    def add(self, changes: list[SessionChange], now: float,
            backoff_scale: float = 1.0) -> dict[Key, list[str]]:
        """Queue every enabled hook that listens for these changes, once per host session
        (a turn-failed hook: once per try of a limit episode, see `_add_limit_try`).

        Returns, per session, the hooks to record in its record: those queued now and those
        a replayed batch finds queued already.
        """
        wanted = self._wanted(changes, now)
        if not wanted:
            return {}
        listened = self.store.listened_events(now)
        if not any(c.kind in listened for c in wanted):
            return {}  # nothing listens: leave hooks.json untouched

        def edit(doc: HooksDoc) -> dict[Key, list[str]]:
            queued = {e.id for e in doc.pending}
            recorded: dict[Key, list[str]] = {}
            for change in wanted:
                for hook in doc.hooks.values():
                    if not hook.enabled or hook.event != change.kind or not _wants(hook, change):
                        continue
                    if notices.is_notify(hook):  # once per transition, not per session
                        _add_notice(doc, hook, change, now, queued)
                    elif change.kind == EventKind.TURN_FAILED:
                        _add_limit_try(doc, hook, change, now, backoff_scale, queued)
                    elif not change.from_hook:  # (wanted only for a notice's alsoFollowUps)
                        _queue_once(doc, hook, change, now, queued, recorded)
            return recorded

        return self.store.change(now, edit)

    def _wanted(self, changes: list[SessionChange], now: float) -> list[SessionChange]:
        """The changes that may queue a hook. A follow-up's own run queues nothing, but its
        failed turn is the next try of the limit episode that resumed it (bounded by
        resets.MAX_TRIES), and a notify hook may ask to hear of it (alsoFollowUps)."""
        wanted = [c for c in changes if c.kind is not None
                  and (not c.from_hook or c.kind == EventKind.TURN_FAILED)]
        if any(c.kind is not None and c.from_hook for c in changes) and any(
                h.also_follow_ups for h in self.view(now).hooks.values()):
            wanted = [c for c in changes if c.kind is not None]
        return wanted

    def add_follow_up_event(self, event: FollowUpEvent, fired: QueueEntry, hook_id: str,
                            status: str, now: float, episode: str = "") -> int:
        """Queue the notices of what a follow-up did (notices.add_for_follow_up: `status` is
        their reason, an outcome's text or `started`; `episode`: a budget's); leaves
        hooks.json untouched when no notify hook listens."""
        if event not in self.store.listened_events(now):
            return 0
        return self.store.change(
            now, lambda doc: notices.add_for_follow_up(doc, event, fired, hook_id, status, now, episode))

    def _edit_entry(self, key: str, now: float, edit: Callable[[HooksDoc, QueueEntry], None]) -> None:
        def change(doc: HooksDoc) -> None:
            entry = doc.entry(key)
            if entry is not None:
                edit(doc, entry)

        self.store.change(now, change)

    def claim(self, key: str, now: float, log: str | None = None) -> Claimed | None:
        """Mark the entry as ours, durably, with where its action will log; None if it is gone
        or someone else has it."""

        def edit(doc: HooksDoc) -> Claimed | None:
            entry = doc.entry(key)
            if entry is None or entry.claimed_by:
                return None
            hook = doc.hooks.get(entry.hook_id)
            if hook is None or not hook.enabled:
                doc.pending.remove(entry)
                return None
            entry.claimed_by = self.instance_id
            entry.claimed_at = iso(now)
            entry.log = log
            return Claimed(copy.copy(entry), copy.copy(hook))

        return self.store.change(now, edit)

    def postpone(self, key: str, why: str, now: float) -> None:
        """Try again in a minute; after MAX_POSTPONES tries, give up as skipped."""

        def edit(doc: HooksDoc, entry: QueueEntry) -> None:
            hook = doc.hooks.get(entry.hook_id)
            entry.retries += 1
            if entry.retries > MAX_POSTPONES:
                doc.pending.remove(entry)
                if hook is not None:
                    hook.record_firing(skipped(f"{why} after {MAX_POSTPONES} postponements"),
                                       now, entry.host, entry.session_id, None, retry=entry.retry)
                return
            entry.claimed_by = None
            entry.claimed_at = None
            entry.due_at = iso(now + POSTPONE_SECONDS)
            if hook is not None:
                hook.last_status = str(postponed(f"{why} ({entry.retries}/{MAX_POSTPONES})"))

        self._edit_entry(key, now, edit)

    def release(self, key: str, now: float) -> None:
        """Give a claimed entry back unfired (claimed as this instance was stopping)."""

        def edit(doc: HooksDoc, entry: QueueEntry) -> None:
            entry.claimed_by = None
            entry.claimed_at = None

        self._edit_entry(key, now, edit)

    def started(self, key: str, run: Run, now: float) -> None:
        """Record, durably, that the claimed entry's action runs: from here on any leader can
        adopt it and record its real outcome."""

        def edit(doc: HooksDoc, entry: QueueEntry) -> None:
            entry.run = run

        self._edit_entry(key, now, edit)

    def finish(self, entry: QueueEntry, ended: Outcome, log_path: str | None, now: float,
               line: str | None = None) -> bool:
        """Remove a fired entry and record the firing in its hook's history, if this instance
        still holds its claim (so that an outcome is recorded once); whether it did."""

        def edit(doc: HooksDoc) -> bool:
            current = doc.entry(entry.id)
            if current is None or current.claimed_by != self.instance_id:
                return False
            doc.pending.remove(current)
            hook = doc.hooks.get(entry.hook_id)
            if hook is not None:
                hook.record_firing(ended, now, entry.host, entry.session_id, log_path, line=line,
                                   retry=entry.retry)
            self.store.note_fired_while_broken(entry.id)
            return True

        return self.store.change(now, edit)

    def shift_due(self, jump: float, now: float) -> int:
        """The wall clock was stepped by `jump` seconds: every waiting entry's due time moves
        with it, so a delay lasts what it said whichever way the clock went. Returns how many
        moved (an unreadable due time stays due at once). A usage limit's try stays: it is due
        when the limit resets, a time on the wall clock (often the host's own words)."""
        def moves(entry: QueueEntry) -> bool:
            return not entry.claimed_by and "#" not in entry.id and parse_ts(entry.due_at) is not None

        if not any(moves(e) for e in self.view(now).pending):
            return 0  # nothing waits: hooks.json is left untouched

        def edit(doc: HooksDoc) -> int:
            moved = 0
            for entry in doc.pending:
                due = parse_ts(entry.due_at)
                if moves(entry) and due is not None:
                    entry.due_at = iso(due + jump)
                    moved += 1
            return moved

        return self.store.change(now, edit)

    def unsettled(self, is_alive: Callable[[str], bool], now: float,
                  pending: list[QueueEntry] | None = None) -> list[QueueEntry]:
        """Claims of dead instances whose action may have started without its start being
        recorded: each must be settled (`Settled`) before `recover` adopts or drops it.
        (`pending`: the queue as just read, so that one recovery reads hooks.json once.)"""
        ws, mine = self.store.ws, self.instance_id
        return [copy.copy(e) for e in (self.view(now).pending if pending is None else pending)
                if e.claimed_by and e.claimed_by != mine and e.run is None
                and ws.firing_log(e.hook_id, e.log or "") and not is_alive(e.claimed_by)]

    def recover(self, is_alive: Callable[[str], bool], now: float,
                settled: Mapping[str, Settled] | None = None,
                pending: list[QueueEntry] | None = None) -> list[QueueEntry]:
        """Take over the firings other instances left: adopt those whose action started (it
        runs on without them), and record as interrupted those claimed by a dead instance
        before their action started (ambiguous: at most once wins); a claim that may have
        started is adopted or dropped as `settled` (by entry id) says, else left for the next
        recovery. Returns the adopted."""
        mine = self.instance_id
        pending = self.view(now).pending if pending is None else pending
        if not any(e.claimed_by and e.claimed_by != mine and (e.run or not is_alive(e.claimed_by))
                   for e in pending):
            return []

        ws = self.store.ws
        settled = settled or {}
        # In Redis mode a run record is Redis's, written by a leader (a person's edit keeps the
        # record's runs: hooks_record.py): it needs no MAC, which is per machine; in file mode
        # the MAC tells sidecar's own run records from planted ones.
        proven = self.store.records is not None

        def edit(doc: HooksDoc) -> tuple[list[QueueEntry], int]:
            adopted, lost = [], 0
            for entry in list(doc.pending):
                if not entry.claimed_by or entry.claimed_by == mine:
                    continue
                if entry.run is not None and not proven and not trust.is_ours(ws, entry.id, entry.run):
                    _drop(doc, entry, FOREIGN_RUN, now)  # planted: never adopted, never signalled
                    continue
                log_path = ws.firing_log(entry.hook_id, entry.log or "")
                ended = INTERRUPTED
                if entry.run is None and log_path and not is_alive(entry.claimed_by):
                    how = settled.get(entry.id)
                    if how is None or how.log != entry.log:
                        continue  # not settled yet: the next recovery settles it
                    ended = _take_settled(ws, entry, how, str(log_path), now)
                if entry.run is not None:  # a leader adopts it, whoever started it
                    entry.claimed_by, entry.claimed_at = mine, iso(now)
                    adopted.append(copy.copy(entry))
                elif not is_alive(entry.claimed_by):  # ended already, or given up now
                    _drop(doc, entry, ended, now)
                    self.store.note_fired_while_broken(entry.id)
                    lost += 1
            return adopted, lost

        adopted, lost = self.store.change(now, edit)
        if lost:
            log.warning("%s: %d follow-up firing(s) interrupted by a dead instance before "
                        "their action started", self.store.ws.root, lost)
        if adopted:
            log.info("%s: adopted %d running follow-up action(s)", self.store.ws.root, len(adopted))
        return adopted


def _add_notice(doc: HooksDoc, hook: Hook, change: SessionChange, now: float, queued: set[str]) -> None:
    """Queue a notify hook's notice of the change, or say in its history why not."""
    if not notices.wants_change(hook, change):
        return
    why = notices.refusal(doc, hook, change)
    if why is None:
        notices.add_for_change(doc, hook, change, now, queued)
    elif not change.from_hook:
        _note_skip(hook, change, why, now)


def _queue_once(doc: HooksDoc, hook: Hook, change: SessionChange, now: float,
                queued: set[str], recorded: dict[Key, list[str]]) -> None:
    """Queue a resume or command hook for the change's session, once per session."""
    key = (change.host, change.session_id)
    if hook.id in recorded.get(key, []):
        return
    if hook.id in change.follow_ups_done and not (
            hook.again_after_user_turn and hook.id in change.user_turn_since):
        _note_skip(hook, change, _already_ran(hook, change), now)
        return
    if change.kind == EventKind.SESSION_END and change.interrupted and not hook.also_interrupted:
        _note_skip(hook, change, TURN_INTERRUPTED, now)  # not done: a later end may
        return
    recorded.setdefault(key, []).append(hook.id)
    key_id = entry_id(hook.id, change.host, change.session_id)
    if key_id in queued:
        return  # a replayed batch: queued already
    doc.pending.append(QueueEntry(
        id=key_id, hook_id=hook.id, host=change.host, session_id=change.session_id,
        harness_session_id=change.harness_session_id, enqueued_at=iso(now),
        due_at=iso(change.ts + hook.delay_seconds)))
    queued.add(key_id)


def _take_settled(ws: Workspace, entry: QueueEntry, how: Settled, log_path: str, now: float) -> Outcome:
    """Record a settled claim's runner in its entry (then adopted), if it started and runs
    on; returns the outcome to record otherwise."""
    if how.proc is not None:
        entry.run = trust.sign(ws, entry.id, Run(how.proc.pid, how.proc.start, log_path,
                                                 entry.claimed_at or iso(now)))
    return how.outcome or INTERRUPTED  # (an adopted entry records none)


def _drop(doc: HooksDoc, entry: QueueEntry, ended: Outcome, now: float) -> None:
    doc.pending.remove(entry)
    hook = doc.hooks.get(entry.hook_id)
    if hook is not None:
        hook.record_firing(ended, now, entry.host, entry.session_id, None, retry=entry.retry)


def _already_ran(hook: Hook, change: SessionChange) -> Outcome:
    """Why a hook is not queued again for a session it was queued for: once per session."""
    ran = next((f.at for f in reversed(hook.history) if f.session_id == change.session_id
                and f.host == change.host and f.status and not Outcome.parse(f.status).skipped),
               None)
    if ran is None:
        return skipped(f"{hook.id} is queued for this conversation already (once per session)")
    return skipped(f"{hook.id} already ran for this conversation at {ran} (once per session)")


def _note_skip(hook: Hook, change: SessionChange, why: Outcome, now: float) -> None:
    """Say in the hook's history why a session's change did not queue it, once per session
    and reason (a replayed batch, or each later turn of the session, adds nothing)."""
    if any(f.session_id == change.session_id and f.host == change.host
           and f.status == str(why) for f in hook.history):
        return
    hook.record_firing(why, now, change.host, change.session_id, None, fired=False)


def _wants(hook: Hook, change: SessionChange) -> bool:
    """Whether the hook is queued for this change's reason. A session's end: by default every
    reason but `stale` (a session nobody touched for a day is not a finished task), and never
    while a usage limit holds (the task is not finished either). A failed turn: its error
    kind, by default any usage limit; a resume or command only while a limit holds (what it
    acts on is the limit), a notice of any failure its reasons name."""
    if change.kind == EventKind.TURN_FAILED:
        return change.reason in (LIMIT_ERRORS if hook.reasons is None else hook.reasons) \
            and (change.limit_failures > 0 or notices.is_notify(hook))
    if change.kind != EventKind.SESSION_END:
        return True
    if change.limited:
        return False
    return change.reason != STALE if hook.reasons is None else change.reason in hook.reasons


def _add_limit_try(doc: HooksDoc, hook: Hook, change: SessionChange, now: float,
                   backoff_scale: float, queued: set[str]) -> None:
    """Queue the next try of a limit episode: when the host's message says the limit resets,
    else after the back-off; nothing while a try is pending already, nothing after the last."""
    base = entry_id(hook.id, change.host, change.session_id)
    if any(e.id.startswith(base + "#") and not e.claimed_by for e in doc.pending):
        return  # one try waiting at a time (a claimed one is running: this may be its failure)
    key_id = f"{base}#{change.limit_failures}"  # a replayed batch finds it queued already
    if key_id in queued:
        return
    due = next_try(change.limit_message, change.ts, change.limit_failures - 1, backoff_scale)
    if due is None:
        log.warning("%s: %s session %s is still limited after %d tries; not resumed again",
                    hook.id, change.host, change.session_id, MAX_TRIES)
        return
    due = max(due, change.ts + TRANSCRIPT_QUIET + 0.5)  # else postponed: transcript not quiet
    doc.pending.append(QueueEntry(
        id=key_id, hook_id=hook.id, host=change.host, session_id=change.session_id,
        harness_session_id=change.harness_session_id, enqueued_at=iso(now),
        due_at=iso(due + hook.delay_seconds)))
    queued.add(key_id)
