"""Session and binding storage, in dotcontext's file schema; the rules live in `rules`.

- `runtime/hooks/host-sessions.json`: the bindings; one exists exactly while its harness
  session is active.
- `runtime/sessions/<id>/session.json` and `trace.jsonl`: one harness session each.

A host session has one harness session for life: the bound one, else `uuid5(host, id)`, so a
resumed conversation finds its old record again without any index. Each record remembers the
inbox files it applied, so a batch replayed after a crash changes nothing twice.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from sidecar import jsonfile, safedir
from sidecar.coordination import current as coordination
from sidecar.errors import SidecarError
from sidecar.hosts import registry
from sidecar.inbox.events import Event
from sidecar.layout import PLAIN_NAME, Workspace
from sidecar.sessions import endfacts, rules, tokens
from sidecar.sessions.model import Bindings, Facts, Key, SessionRecord, TraceLine, ts_or
from sidecar.sessions.rules import Applied, harness_id
from sidecar.timeutil import iso
from sidecar.vocabulary import EventKind, SessionChange

log = logging.getLogger("sidecar")


class StoreError(SidecarError):
    """A state file cannot be read right now; the work is retried later."""


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
                end = endfacts.read(work.record, event) \
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
        for work in self.works.values():
            if work.failed is None and work.record is not None and work.applied.changed:
                try:
                    self.store.save_session(work.record, work.applied.trace, dedupe=self.replay)
                except (OSError, StoreError) as exc:
                    work.failed = f"cannot save session {work.harness_id}: {exc}"
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
        return result

    def _add_tokens(self, result: BatchResult) -> None:
        grew = [w.applied.tokens_grew for w in self.works.values()
                if w.failed is None and w.applied.tokens_grew]
        if not grew:
            return
        self.store.fence()  # (a deposed leader's replay would count them twice)
        try:
            tokens.add(self.store.ws, grew, self.store.durable)
        except (OSError, SidecarError) as exc:
            result.errors.append(f"cannot add to the token totals: {exc}")


class SessionStore:
    """Reads and writes one workspace's sessions and bindings."""

    def __init__(self, ws: Workspace, *, durable: bool = True) -> None:
        self.ws = ws
        self.durable = durable
        # A leader's fencing check (coordination/base.py), run before each write: one that
        # lost the lead writes nothing more. Nothing to check for any other writer.
        self.fence: Callable[[], None] = lambda: None

    def locked(self) -> AbstractContextManager[None]:
        """The sessions' lock (the bindings' and the records'), through the coordination."""
        return coordination.get().store_lock(self.ws, "bindings")

    # -- files -------------------------------------------------------------------------

    def load_bindings(self) -> Bindings:
        """The bindings document; retried briefly, since dotcontext writes in place."""
        for attempt in range(5):
            try:
                data = jsonfile.read_json(self.ws.bindings_file)
            except FileNotFoundError:
                return Bindings()
            except jsonfile.NotARegularFile as exc:
                raise StoreError(f"{exc}; left as it is") from None
            except ValueError:
                time.sleep(0.02 * (attempt + 1))
                continue
            if isinstance(data, dict):
                return Bindings.from_json(data)
            break
        raise StoreError(f"{self.ws.bindings_file} is not a JSON object; left as it is")

    def save_bindings(self, bindings: Bindings) -> None:
        self.fence()
        safedir.make_dirs(self.ws.bindings_file.parent)
        jsonfile.write_json_atomic(self.ws.bindings_file, bindings.to_json(), durable=self.durable)

    def load_session(self, hid: str) -> SessionRecord | None:
        """The record; None if it is confirmed missing, OSError/ValueError if unreadable."""
        path = self.ws.session_dir(hid) / "session.json"  # read never through a link (ELOOP)
        try:
            data = jsonfile.read_json(path)
        except FileNotFoundError:
            if self.ws.sessions.is_dir():
                return None
            raise
        if not isinstance(data, dict):
            raise ValueError(f"{path} is not a JSON object")
        return SessionRecord.from_json(data)

    def save_session(self, record: SessionRecord, trace: list[TraceLine],
                     dedupe: bool = False) -> None:
        self.fence()
        folder = self.ws.session_dir(record.id)
        safedir.make_dirs(folder)  # never through a symlinked folder (ELOOP)
        if trace and dedupe:
            seen = _tail_ids(folder / "trace.jsonl", len(trace))
            trace = [line for line in trace if line.id not in seen]
        if trace:
            jsonfile.append_lines(folder / "trace.jsonl", [t.to_json() for t in trace],
                                  durable=self.durable)
            self.fence()  # again: the append's fsync may take long on a network volume
        jsonfile.write_json_atomic(folder / "session.json", record.to_json(), durable=self.durable)

    # -- batches -----------------------------------------------------------------------

    @contextmanager
    def batch(self, replay: bool = False) -> Iterator[Batch]:
        """A batch under the sessions' lock. `replay` says it may repeat one a dead instance
        half-saved: trace lines it already appended are then not appended again."""
        with self.locked():
            yield Batch(self, self.load_bindings(), replay)

    def open_work(self, key: Key, bindings: Bindings) -> Work:
        binding = bindings.get(key)
        bound = binding.harness_session_id if binding is not None else None
        # A binding naming a path (a hand edit) is not followed out of sessions/.
        hid = bound if bound and PLAIN_NAME.fullmatch(bound) else harness_id(*key)
        try:
            record = self.load_session(hid)
        except (OSError, ValueError, StoreError) as exc:
            return Work(key, hid, None, failed=f"cannot read session {hid}: {exc}")
        return Work(key, hid, record)

    def record(self, hid: str | None) -> SessionRecord | None:
        """A session's record as saved (None: no id, no record, or one that cannot be read)."""
        if not hid:
            return None
        with self.locked():
            try:
                return self.load_session(hid)
            except (OSError, ValueError, StoreError):
                return None

    def facts(self, hid: str | None, key: Key) -> Facts:
        """What the follow-up scheduler decides on: whether the session is live again, what
        its skips look at, and its transcript's size and age."""
        with self.locked():
            record = None
            if hid:
                try:
                    record = self.load_session(hid)
                except (OSError, ValueError, StoreError):
                    record = None
            try:
                bound = self.load_bindings().get(key) is not None
            except StoreError:
                bound = False
        misfit = registry.id_misfit(*key)
        if record is None:
            return Facts(live=bound, id_misfit=misfit)
        meta = record.sidecar
        size = mtime = None
        if meta.transcript_path:
            try:
                st = os.stat(meta.transcript_path)
                size, mtime = st.st_size, st.st_mtime
            except OSError:
                pass  # a missing transcript holds nothing back
        return Facts(live=record.active or bound, cron=meta.cron, subagent=meta.subagent,
                     cwd=meta.cwd, transcript_size=size, transcript_mtime=mtime,
                     limited=meta.limit is not None, id_misfit=misfit)

    def live_hosts(self) -> list[tuple[Key, int, int | None, str | None]]:
        """(session, host pid, host start time, its space) for every active session whose
        host is known: what a new leader watches again."""
        found = []
        with self.locked():
            bindings = self.load_bindings().items()
        for key, binding in bindings:
            try:
                record = self.load_session(binding.harness_session_id or harness_id(*key))
            except (OSError, ValueError, StoreError):
                continue
            meta = record.sidecar if record is not None and record.active else None
            if meta is not None and meta.host_pid is not None:
                found.append((key, meta.host_pid, meta.host_start, meta.host_space))
        return found

    # -- sweep and retention -------------------------------------------------------------

    def sweep(self, now: float, stale_after: float,
              seen_ago: Callable[[Key], float | None] = lambda key: None) -> BatchResult:
        """Complete (reason `stale`) and unbind every session untouched for `stale_after`
        (`seen_ago`: how long ago this instance applied an event of it, measured across any
        step of the wall clock)."""
        result = BatchResult()
        with self.locked():
            gone: list[Key] = []
            for key, binding in self.load_bindings().items():
                idle = rules.idle_for(binding, now, seen_ago(key))
                if idle < stale_after:
                    stale_at = now - idle + stale_after
                    result.next_stale = min(result.next_stale or stale_at, stale_at)
                    continue
                if not binding.harness_session_id or not PLAIN_NAME.fullmatch(
                        binding.harness_session_id):
                    gone.append(key)
                    continue
                if self._sweep_one(key, binding.harness_session_id, now, stale_after, result):
                    gone.append(key)
                else:
                    result.spared = True
            if gone:
                fresh = self.load_bindings()
                for key in gone:
                    fresh.remove(key)
                self.save_bindings(fresh)
        return result

    def _sweep_one(self, key: Key, hid: str, now: float, stale_after: float,
                   result: BatchResult) -> bool:
        """Complete one stale session; whether its binding should go."""
        try:
            record = self.load_session(hid)
        except (OSError, ValueError, StoreError) as exc:
            result.errors.append(f"sweep: cannot read session {hid}: {exc}")
            return False  # a passing failure: the binding stays for the next sweep
        if record is None or not record.active:
            return True  # confirmed missing, or completed already
        if endfacts.transcript_recent(record, now, stale_after):
            return False
        applied = Applied()
        rules.sweep_stale(record, now, applied)
        try:
            self.save_session(record, applied.trace)
        except (OSError, StoreError) as exc:
            result.errors.append(f"sweep: cannot save session {hid}: {exc}")
            return False
        result.changes.extend(applied.changes)
        return True

    def prune(self, now: float, retention: float) -> int:
        """Delete completed sessions older than `retention`; returns how many."""
        self.fence()
        cutoff = now - retention
        pruned = 0
        try:
            entries = list(os.scandir(self.ws.sessions))
        except FileNotFoundError:
            return 0
        for entry in entries:
            try:
                # The folder's mtime moves with every session.json replace, so only the
                # few folders quiet for the whole retention period are opened.
                if not entry.is_dir(follow_symlinks=False) or entry.stat().st_mtime >= cutoff:
                    continue
                record = self.load_session(entry.name)
            except (OSError, ValueError, StoreError):
                continue
            if record is None or record.active or ts_or(record.completed_at, now) >= cutoff:
                continue
            with safedir.opened(self.ws.sessions) as folder:  # never through a link
                shutil.rmtree(entry.name, dir_fd=folder, ignore_errors=True)
            pruned += 1
        return pruned

    def count_sessions(self) -> int:
        """How many session folders exist; a bare listing, as status must stay fast at 100k."""
        try:
            return sum(1 for name in os.listdir(self.ws.sessions) if not name.startswith("."))
        except FileNotFoundError:
            return 0


def _tail_ids(path: Path, lines: int) -> set[str]:
    """The ids of the last trace lines, enough to cover `lines` lines of ours."""
    try:
        with open(safedir.open_file(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return set()  # a FIFO in its place is never read
            size = handle.seek(0, os.SEEK_END)
            start = max(0, size - (lines * 4096 + 4096))
            handle.seek(start)
            tail = handle.read()
    except FileNotFoundError:
        return set()
    ids = set()
    for raw in tail.splitlines()[1 if start else 0:]:
        try:
            ids.add(str(orjson.loads(raw)["id"]))
        except (ValueError, KeyError, TypeError):
            continue
    return ids
