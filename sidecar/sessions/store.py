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
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from sidecar import jsonfile, safedir, together
from sidecar.base.errors import SidecarError
from sidecar.base.ids import harness_id
from sidecar.base.timeutil import from_local
from sidecar.coordination import current as coordination
from sidecar.hosts import registry
from sidecar.layout import PLAIN_NAME, Workspace
from sidecar.sessions import endfacts, ownresume, rules
from sidecar.sessions.model import Bindings, Facts, Key, SessionRecord, TraceLine, ts_or
from sidecar.sessions.rules import Applied
from sidecar.vocabulary import SessionChange

if TYPE_CHECKING:
    from sidecar.coordination.redis.records import RedisRecords

log = logging.getLogger("sidecar")
BINDINGS = "hooks/host-sessions.json"  # the bindings' record's name (coordination/redis/records.py)


class StoreError(SidecarError):
    """A state file cannot be read right now; the work is retried later."""


@dataclass
class BatchResult:
    """What a batch of events (batch.py) or a sweep did to the sessions."""

    applied: list[str] = field(default_factory=list)  # inbox files done with
    retry: list[str] = field(default_factory=list)  # inbox files to try again later
    changes: list[SessionChange] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (inbox file, why)
    # The sweep's: when the next binding goes stale (None: no binding), and whether a stale
    # one was spared (its transcript is recent, or it could not be read): look again soon.
    next_stale: float | None = None
    spared: bool = False


class SessionStore:
    """Reads and writes one workspace's sessions and bindings."""

    def __init__(self, ws: Workspace, *, durable: bool = True) -> None:
        self.ws = ws
        self.durable = durable
        # A leader's fencing check (coordination/base.py), run before each write: one that
        # lost the lead writes nothing more. In Redis mode it also sends the changes (see
        # `records`). Nothing to check for any other writer.
        self.fence: Callable[[], None] = self.no_lead

    @property
    def records(self) -> RedisRecords | None:
        """The store of record where it is not the files (Redis mode): changes are put there
        first, sent by the fence, and mirrored to the files once Redis accepted them."""
        return coordination.get().records(self.ws)

    def no_lead(self) -> None:
        """The fence of a writer that leads nothing: a command's changes go to Redis as they
        are (under the store's lock); a daemon's are refused there (it lost its lead)."""
        records = self.records
        if records is not None:
            records.flush()

    def forget(self) -> None:
        """Drop the changes not sent (a block that failed)."""
        records = self.records
        if records is not None:
            records.discard()

    def locked(self) -> AbstractContextManager[None]:
        """The sessions' lock (the bindings' and the records'), through the coordination."""
        return coordination.get().store_lock(self.ws, "bindings")

    # -- files -------------------------------------------------------------------------

    def load_bindings(self) -> Bindings:
        """The bindings document; retried briefly, since dotcontext writes in place."""
        records = self.records
        if records is not None:
            return _bindings_of(records.read(BINDINGS), self.ws.bindings_file)
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
        data = jsonfile.dumps(bindings.to_json())
        records = self.records
        if records is not None:
            records.put(BINDINGS, data)
            self.fence()
            records.mirror(lambda: records.write_copy(BINDINGS, data))
            return
        if not self._renames_deferred():  # (else the block's end checks before the rename)
            self.fence()
        safedir.make_dirs(self.ws.bindings_file.parent)
        jsonfile.write_bytes_atomic(self.ws.bindings_file, data, durable=self.durable)

    def _renames_deferred(self) -> bool:
        """Whether a replace written now is put in place only at the end of a `together`
        block, after the block's own fencing check (durable writes alone are deferred)."""
        return self.durable and together.current() is not None

    def load_session(self, hid: str) -> SessionRecord | None:
        """The record; None if it is confirmed missing, OSError/ValueError if unreadable."""
        path = self.ws.session_dir(hid) / "session.json"  # read never through a link (ELOOP)
        records = self.records
        try:
            if records is not None:
                raw = records.read(f"sessions/{hid}/session.json")
                if raw is None:
                    return None
                data = orjson.loads(raw)
            else:
                data = jsonfile.read_json(path)
        except FileNotFoundError:
            if self.ws.sessions.is_dir():
                return None
            raise
        if not isinstance(data, dict):
            raise ValueError(f"{path} is not a JSON object")
        return SessionRecord.from_json(data)

    def save_session(self, record: SessionRecord, trace: list[TraceLine], dedupe: bool = False) -> None:
        records = self.records
        if records is not None:
            self._send_session(records, record, trace)
            return
        # Within a `together` block the record's replace is checked at the block's end, before
        # any rename; only the trace's append, which lands at once, needs its own check.
        grouped = self._renames_deferred()
        if trace or not grouped:
            self.fence()
        folder = self.ws.session_dir(record.id)
        safedir.make_dirs(folder)  # never through a symlinked folder (ELOOP)
        if trace and dedupe:
            seen = _tail_ids(folder / "trace.jsonl", len(trace))
            trace = [line for line in trace if line.id not in seen]
        if trace:
            jsonfile.append_lines(folder / "trace.jsonl", [t.to_json() for t in trace], durable=self.durable)
            if not grouped:
                self.fence()  # again: the append's fsync may take long on a network volume
        jsonfile.write_json_atomic(folder / "session.json", record.to_json(), durable=self.durable)

    def _send_session(self, records: RedisRecords, record: SessionRecord, trace: list[TraceLine]) -> None:
        """`save_session` in Redis mode: a batch's changes reach Redis all at once with the
        inbox files they came from, so no line is appended twice there and none needs the
        files' tail looked at; the files follow what Redis accepted."""
        lines = jsonfile.lines_of([t.to_json() for t in trace])
        body = jsonfile.dumps(record.to_json())
        if lines:
            records.append(f"sessions/{record.id}/trace.jsonl", lines)
        records.put(f"sessions/{record.id}/session.json", body)
        self.fence()

        def mirror() -> None:
            if lines:
                records.write_copy(f"sessions/{record.id}/trace.jsonl", lines, append=True)
            records.write_copy(f"sessions/{record.id}/session.json", body)
        records.mirror(mirror)

    # -- reads under the lock -----------------------------------------------------------

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
        st = endfacts.transcript_stat(meta.transcript_path, self.ws)
        if st is not None:  # a missing transcript holds nothing back
            size, mtime = st.st_size, from_local(st.st_mtime)  # (on the daemon's clock)
        return Facts(live=record.active or bound, cron=meta.cron, subagent=meta.subagent,
                     cwd=meta.cwd, transcript_size=size, transcript_mtime=mtime,
                     limited=meta.limit is not None, id_misfit=misfit,
                     host_resumes=ownresume.in_hand(record), host_resumed=ownresume.resumed(record))

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
                if not binding.harness_session_id or not PLAIN_NAME.fullmatch(binding.harness_session_id):
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

    def _sweep_one(self, key: Key, hid: str, now: float, stale_after: float, result: BatchResult) -> bool:
        """Complete one stale session; whether its binding should go."""
        try:
            record = self.load_session(hid)
        except (OSError, ValueError, StoreError) as exc:
            result.errors.append(f"sweep: cannot read session {hid}: {exc}")
            return False  # a passing failure: the binding stays for the next sweep
        if record is None or not record.active:
            return True  # confirmed missing, or completed already
        if endfacts.transcript_recent(record, now, stale_after, self.ws):
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
        records = self.records
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
                if not entry.is_dir(follow_symlinks=False) or from_local(entry.stat().st_mtime) >= cutoff:
                    continue
                record = self.load_session(entry.name)
            except (OSError, ValueError, StoreError):
                continue
            if record is None or record.active or ts_or(record.completed_at, now) >= cutoff:
                continue
            if records is not None:  # Redis forgets it first: its copy goes after
                records.delete(f"sessions/{entry.name}/session.json")
                records.delete(f"sessions/{entry.name}/trace.jsonl")
                self.fence()
            with safedir.opened(self.ws.sessions) as folder:  # never through a link
                shutil.rmtree(entry.name, dir_fd=folder, ignore_errors=True)
            pruned += 1
        return pruned


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


def _bindings_of(data: bytes | None, path: Path) -> Bindings:
    """The bindings a record holds (none yet: none at all)."""
    if data is None:
        return Bindings()
    try:
        parsed = orjson.loads(data)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise StoreError(f"the record of {path} in Redis is not a JSON object; left as it is")
    return Bindings.from_json(parsed)
