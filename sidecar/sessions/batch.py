"""One batch of events applied to a workspace's sessions: planned in memory (`plan`), then
saved with the follow-ups queued for it (`commit`); the store (store.py) opens it under the
sessions' lock, with the sessions folder held open for its reads and writes."""

from __future__ import annotations

from dataclasses import dataclass, field

from sidecar.base.errors import SidecarError
from sidecar.base.timeutil import iso
from sidecar.coordination.base import Unreachable
from sidecar.inbox.events import Event
from sidecar.sessions import endfacts, rules, tokens
from sidecar.sessions.model import Bindings, Key, SessionRecord
from sidecar.sessions.rules import Applied
from sidecar.together import together
from sidecar.vocabulary import EventKind, SessionChange

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sidecar.sessions.store import SessionStore


class StoreError(SidecarError):
    """A state file cannot be read right now; the work is retried later (store.py)."""


@dataclass
class Work:
    """One session's share of a batch."""

    key: Key
    harness_id: str
    record: SessionRecord | None
    files: list[str] = field(default_factory=list)
    applied: Applied = field(default_factory=Applied)
    failed: str | None = None


@dataclass
class BatchResult:
    applied: list[str] = field(default_factory=list)  # inbox files done with
    retry: list[str] = field(default_factory=list)  # inbox files to try again later
    changes: list[SessionChange] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (inbox file, why)
    # The sweep's: when the next binding goes stale (None: no binding), and whether a stale
    # one was spared (its transcript is recent, or it could not be read): look again soon.
    next_stale: float | None = None
    spared: bool = False


class Batch:
    """Apply one batch of events: plan in memory, then commit with the follow-ups queued."""

    def __init__(self, store: SessionStore, bindings: Bindings, replay: bool) -> None:
        self.store = store
        self.bindings = bindings
        self.replay = replay
        self.works: dict[Key, Work] = {}
        self.rejected: list[tuple[str, str]] = []

    def plan(self, events: list[Event]) -> list[SessionChange]:
        """Apply the events, in the order they happened, to records in memory."""
        repo = str(self.store.ws.root)
        for event in sorted(events, key=lambda e: e.sort_key):
            key = (event.host, event.session_id)
            work = self.works.get(key)
            if work is None:
                work = self.works[key] = self.store.open_work(key, self.bindings)
            if work.failed is not None:
                work.files.append(event.file)
                continue
            try:
                if work.record is None:
                    work.record = rules.new_record(key, work.harness_id, repo, event,
                                                       work.applied)
                # The host's own records are read here, so that the rules read no file.
                end = endfacts.read(work.record, event, self.store.ws) \
                    if event.kind == EventKind.SESSION_END and work.record.active else None
                rules.apply(work.record, event, work.applied, end)
            except Exception as exc:  # one event that cannot be applied never stops the batch
                self.rejected.append((event.file, f"could not be applied: {exc!r}"))
                continue
            work.files.append(event.file)
        for work in self.works.values():
            if work.record is not None:
                rules.trim_recent(work.record, len(work.files))
        return [c for w in self.works.values() if w.failed is None for c in w.applied.changes]

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
        grew = [w.applied.tokens_grew for w in self.works.values()
                if w.failed is None and w.applied.tokens_grew]
        if not grew:
            return
        self.store.fence()  # (a deposed leader's replay would count them twice)
        try:
            tokens.add(self.store.ws, grew, self.store.durable, self.store.records)
        except Unreachable:
            raise  # Redis not answering: the batch is retried whole, its growth with it
        except (OSError, SidecarError) as exc:
            result.errors.append(f"cannot add to the token totals: {exc}")
