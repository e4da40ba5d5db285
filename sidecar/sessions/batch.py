"""One batch of events applied to a workspace's sessions: opened under the sessions' lock
(`open_batch`), planned in memory (`plan`), then saved with the follow-ups queued for it
(`commit`), through the sessions' store (store.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from sidecar import safedir
from sidecar.base.errors import SidecarError
from sidecar.base.ids import harness_id
from sidecar.base.timeutil import iso
from sidecar.coordination.base import Unreachable
from sidecar.hosts import registry
from sidecar.hosts.base import EndFacts
from sidecar.inbox.events import Event
from sidecar.layout import PLAIN_NAME
from sidecar.sessions import endfacts, ownresume, rules, tokens
from sidecar.sessions.model import Bindings, Key, SessionRecord
from sidecar.sessions.rules import Applied
from sidecar.sessions.store import BatchResult, SessionStore, StoreError
from sidecar.together import together
from sidecar.vocabulary import EventKind, SessionChange

TURN_ENDS = (EventKind.TURN_END, EventKind.TURN_FAILED)


@dataclass
class Work:
    """One session's share of a batch."""

    key: Key
    harness_id: str
    record: SessionRecord | None
    files: list[str] = field(default_factory=list)
    applied: Applied = field(default_factory=Applied)
    failed: str | None = None


@contextmanager
def open_batch(store: SessionStore, replay: bool = False, host_resume: bool = True) -> Iterator[Batch]:
    """A batch under the sessions' lock, holding the sessions folder open for its reads and
    writes (safedir.holding: one walk to it, not one per file). `replay` says it may repeat one
    a dead instance half-saved: trace lines it already appended are then not appended again.
    `host_resume`: config.toml's `hostResume` (what hosts say of their own resume is heeded)."""
    with store.locked(), safedir.holding(store.ws.sessions), ownresume.heeding(host_resume):
        yield Batch(store, store.load_bindings(), replay)


class Batch:
    """Apply one batch of events: plan in memory, then commit with the follow-ups queued."""

    def __init__(self, store: SessionStore, bindings: Bindings, replay: bool) -> None:
        self.store = store
        self.bindings = bindings
        self.replay = replay
        self.works: dict[Key, Work] = {}
        self.rejected: list[tuple[str, str]] = []
        self.no_record: set[Key] = set()  # borrowers' keys found to have none, read once a batch

    def plan(self, events: list[Event]) -> list[SessionChange]:
        """Apply the events, in the order they happened, to records in memory."""
        repo = str(self.store.ws.root)
        for event in sorted(events, key=lambda e: e.sort_key):
            event = self._borrowed(event)
            key = (event.host, event.session_id)
            work = self.works.get(key)
            if work is None:
                work = self.works[key] = self._open_work(key)
            if work.failed is not None:
                work.files.append(event.file)
                continue
            try:
                if work.record is None:
                    work.record = rules.new_record(key, work.harness_id, repo, event, work.applied)
                # The host's own records are read here, so that the rules read no file.
                if event.kind == EventKind.TURN_FAILED:  # the user's switch of the host's own resume
                    ownresume.read_switch(work.record, event, self.store.ws)
                rules.apply(work.record, event, work.applied, self._read(work.record, event))
            except Exception as exc:  # one event that cannot be applied never stops the batch
                self.rejected.append((event.file, f"could not be applied: {exc!r}"))
                continue
            work.files.append(event.file)
        for work in self.works.values():
            if work.record is not None:
                rules.trim_recent(work.record, len(work.files))
        return [c for w in self.works.values() if w.failed is None for c in w.applied.changes]

    def _borrowed(self, event: Event) -> Event:
        """A session another host was seen running this host's hooks in stays that host's: a
        later event of it that does not say who ran it (that host gone before its SessionEnd
        hook ran, a wrapper between them) goes to the same record, never to a new record of
        the host whose program would then resume it."""
        for borrower in registry.borrowers_of(event.host):
            key = (borrower, event.session_id)
            work = self.works.get(key)  # (one made earlier in this batch counts too)
            if work is None and key not in self.no_record:
                work = self._open_work(key)
            if work is None or work.record is None:
                self.no_record.add(key)  # read once a session and batch, not once an event
                continue
            self.works[key] = work
            return replace(event, host=borrower)
        return event

    def _read(self, record: SessionRecord, event: Event) -> EndFacts | None:
        """What the host's own records say: at an active session's end, all they say; at a
        turn's end (not one applied before), its figures only, so that a read at a turn end
        never changes how a failure is handled. None: nothing is read."""
        if event.kind == EventKind.SESSION_END:
            return endfacts.read(record, event, self.store.ws) if record.active else None
        if event.kind in TURN_ENDS and event.file not in record.sidecar.recent_events:
            return endfacts.figures(record, event, self.store.ws)
        return None

    def _open_work(self, key: Key) -> Work:
        binding = self.bindings.get(key)
        bound = binding.harness_session_id if binding is not None else None
        # A binding naming a path (a hand edit) is not followed out of sessions/.
        hid = bound if bound and PLAIN_NAME.fullmatch(bound) else harness_id(*key)
        try:
            record = self.store.load_session(hid)
        except (OSError, ValueError, StoreError) as exc:
            return Work(key, hid, None, failed=f"cannot read session {hid}: {exc}")
        return Work(key, hid, record)

    def commit(self, follow_ups: dict[Key, list[str]], now: float) -> BatchResult:
        """Record the follow-ups queued for each session, save the records, then the bindings."""
        result = BatchResult(rejected=list(self.rejected))
        for key, hook_ids in follow_ups.items():
            work = self.works.get(key)
            if work is not None and work.record is not None:
                for hook_id in hook_ids:  # queued again (againAfterUserTurn): the new time
                    done = work.record.sidecar.follow_ups
                    done[hook_id] = {**done.get(hook_id, {}), "queuedAt": iso(now)}
        # The records, the bindings and the totals are made durable together (together.py):
        # written one by one, fsynced and put in place at the block's end.
        # In Redis mode the block's end sends every change to Redis in one script, with the
        # inbox files applied, which no leader then applies again (coordination/redis/records.py).
        with together(lambda: self.store.fence(), self.store.forget):
            self._save_records()
            fresh = self.store.load_bindings()  # re-read: dotcontext may have written meanwhile
            changed = False
            repo = str(self.store.ws.root)
            for work in self.works.values():
                if work.failed is not None:
                    result.retry.extend(work.files)
                    result.errors.append(work.failed)
                    continue
                result.applied.extend(work.files)
                result.changes.extend(work.applied.changes)
                if work.record is not None:
                    changed |= rules.sync_binding(fresh, work.key, work.record, repo)
            if changed:
                self.store.save_bindings(fresh)
            self._add_tokens(result)
            records = self.store.records
            if records is not None:
                records.mark_applied(result.applied)
        return result

    def _save_records(self) -> None:
        for work in self.works.values():
            if work.failed is None and work.record is not None and work.applied.changed:
                try:
                    self.store.save_session(work.record, work.applied.trace, dedupe=self.replay)
                except (OSError, StoreError) as exc:
                    work.failed = f"cannot save session {work.harness_id}: {exc}"

    def _add_tokens(self, result: BatchResult) -> None:
        grew = [g for w in self.works.values() if w.failed is None for g in w.applied.grew]
        if not grew:
            return
        self.store.fence()  # (a deposed leader's replay would count them twice)
        try:
            tokens.add(self.store.ws, grew, self.store.durable, self.store.records)
        except Unreachable:
            raise  # Redis not answering: the batch is retried whole, its growth with it
        except (OSError, SidecarError) as exc:
            result.errors.append(f"cannot add to the token and cost totals: {exc}")
