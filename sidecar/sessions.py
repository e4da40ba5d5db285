"""Harness sessions and host bindings, in dotcontext's file schema.

- `runtime/hooks/host-sessions.json`: {"bindings": {host: {host session id: binding}}}; a
  binding exists exactly while its harness session is active.
- `runtime/sessions/<id>/session.json` and `trace.jsonl`: one harness session each.

A host session has one harness session for life: the bound one, else `uuid5(host, id)`, so a
resumed conversation finds its old record again without any index. Applying an event is
idempotent: each session remembers the inbox files it has applied, so a batch replayed after
a crash changes nothing twice.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import orjson

from . import jsonfile, locks
from .events import SESSION_END, SESSION_RESET, SESSION_START, TOOL_USE, TURN_END, Event
from .layout import Workspace
from .timeutil import iso, parse_ts

NAMESPACE = uuid.UUID("6f1c2a4e-8d1b-4c53-9a57-3e0f5b1d7c21")
RECENT_EVENTS = 256  # per session: enough to recognise any batch replayed after a crash

Key = tuple[str, str]  # (host, host session id)
Record = dict[str, Any]


class StoreError(Exception):
    """A state file cannot be read right now; the work is retried later."""


@dataclass
class Effect:
    """Something that happened to a session, for plugins and follow-up hooks."""

    kind: str  # "start", "reset", "end", "turn-end", "tool-use" or "event"
    record: Record
    event: Event | None
    reason: str = ""


@dataclass
class BatchResult:
    applied: list[str] = field(default_factory=list)  # inbox files done with
    retry: list[str] = field(default_factory=list)  # inbox files to try again later
    effects: list[Effect] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def harness_id(host: str, session_id: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{host}\0{session_id}"))


def sidecar_meta(record: Record) -> dict[str, Any]:
    metadata = record.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        metadata = record["metadata"] = {}
    meta = metadata.setdefault("sidecar", {})
    if not isinstance(meta, dict):
        meta = metadata["sidecar"] = {}
    return meta


def _ts(value: Any, default: float) -> float:
    parsed = parse_ts(value)
    return default if parsed is None else parsed


@dataclass
class _Work:
    """One session's share of a batch."""

    key: Key
    harness_id: str
    record: Record | None
    files: list[str] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)
    dirty: bool = False
    failed: str | None = None


class SessionStore:
    """Reads and writes one workspace's sessions and bindings."""

    def __init__(self, ws: Workspace, *, durable: bool = True) -> None:
        self.ws = ws
        self.durable = durable

    # -- files -------------------------------------------------------------------------

    def load_bindings(self) -> dict[str, Any]:
        """The whole bindings document; retried briefly, since dotcontext writes in place."""
        for attempt in range(5):
            try:
                data = jsonfile.read_json(self.ws.bindings_file)
            except FileNotFoundError:
                return {"bindings": {}}
            except ValueError:
                time.sleep(0.02 * (attempt + 1))
                continue
            if isinstance(data, dict):
                if not isinstance(data.get("bindings"), dict):
                    data["bindings"] = {}
                return data
            break
        raise StoreError(f"{self.ws.bindings_file} is not a JSON object; left as it is")

    def save_bindings(self, data: dict[str, Any]) -> None:
        self.ws.bindings_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        jsonfile.write_json_atomic(self.ws.bindings_file, data, durable=self.durable)

    def load_session(self, hid: str) -> Record | None:
        """The session record; None if it is confirmed missing, OSError/ValueError if unreadable."""
        path = self.ws.session_dir(hid) / "session.json"
        try:
            record = jsonfile.read_json(path)
        except FileNotFoundError:
            if self.ws.sessions.is_dir():
                return None
            raise
        if not isinstance(record, dict):
            raise ValueError(f"{path} is not a JSON object")
        return record

    def save_session(self, record: Record, trace: list[dict[str, Any]],
                     dedupe: bool = False) -> None:
        folder = self.ws.session_dir(record["id"])
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if trace and dedupe:
            seen = _tail_ids(folder / "trace.jsonl", len(trace))
            trace = [line for line in trace if line["id"] not in seen]
        if trace:
            jsonfile.append_lines(folder / "trace.jsonl", trace, durable=self.durable)
        jsonfile.write_json_atomic(folder / "session.json", record, durable=self.durable)

    # -- the batch ---------------------------------------------------------------------

    def apply_batch(
        self,
        batch: list[Event],
        before_save: Callable[[list[Effect]], None] | None = None,
        replay: bool = False,
    ) -> BatchResult:
        """Apply events in the order they happened: one write per touched file.

        `before_save` receives the batch's effects before any session is written, so follow-up
        hooks are queued before the session records that they were: a crash in between
        replays the batch, and the queue's own duplicate check absorbs the replay.
        `replay` says the batch may repeat one a dead instance half-saved: trace lines it
        already appended are then not appended again.
        """
        result = BatchResult()
        with locks.locked(self.ws.lock("bindings")):
            bindings = self.load_bindings()
            works: dict[Key, _Work] = {}
            for event in sorted(batch, key=lambda e: e.sort_key):
                key = (event.host, event.session_id)
                work = works.get(key)
                if work is None:
                    work = works[key] = self._open_work(key, bindings)
                work.files.append(event.file)
                if work.failed is None:
                    self._apply(work, event)

            ok = [w for w in works.values() if w.failed is None]
            effects = [effect for w in ok for effect in w.effects]
            if before_save is not None and effects:
                before_save(effects)
            for work in ok:
                if work.dirty:
                    try:
                        self.save_session(work.record, work.trace, dedupe=replay)
                    except OSError as exc:
                        work.failed = f"cannot save session {work.harness_id}: {exc}"
            changed = False
            fresh = self.load_bindings()  # re-read: dotcontext may have written meanwhile
            for work in works.values():
                if work.failed is not None:
                    result.retry.extend(work.files)
                    result.errors.append(work.failed)
                    continue
                result.applied.extend(work.files)
                result.effects.extend(work.effects)
                changed |= self._sync_binding(fresh, work)
            if changed:
                self.save_bindings(fresh)
        return result

    def _open_work(self, key: Key, bindings: dict[str, Any]) -> _Work:
        binding = bindings["bindings"].get(key[0], {}).get(key[1])
        bound = binding.get("harnessSessionId") if isinstance(binding, dict) else None
        hid = bound if isinstance(bound, str) and bound else harness_id(*key)
        try:
            record = self.load_session(hid)
        except (OSError, ValueError) as exc:
            return _Work(key, hid, None, failed=f"cannot read session {hid}: {exc}")
        return _Work(key, hid, record)

    def _apply(self, work: _Work, event: Event) -> None:
        record = work.record
        if record is None:
            record = work.record = self._new_record(work, event)
        meta = sidecar_meta(record)
        recent = meta.setdefault("recentEvents", [])
        if event.file in recent:
            return  # replayed after a crash: already applied
        recent.append(event.file)
        work.dirty = True

        status = record.get("status")
        completed_at = _ts(record.get("completedAt"), 0.0) if status == "completed" else None
        if completed_at is not None and event.ts < completed_at:
            self._trace(work, event, event.name, "older than the session's completion")
            return
        self._remember(meta, event)

        if event.kind in (SESSION_START, SESSION_RESET):
            if status == "completed":
                self._reopen(work, event, event.text("source") or event.name)
            self._trace(work, event, "session.reset" if event.kind == SESSION_RESET else "session.start",
                        event.text("source") or event.name)
            self._touch(record, event)
            kind = "reset" if event.kind == SESSION_RESET else "start"
            work.effects.append(Effect(kind, record, event, event.text("source") or ""))
        elif event.kind == SESSION_END:
            if status == "completed":
                self._trace(work, event, event.name, "session already completed")
                return
            self._touch(record, event)
            reason = event.reason or "session-end"
            self.complete(work, record, event.ts, reason, event)
            work.effects.append(Effect("end", record, event, reason))
        else:
            if status == "completed":
                if meta.get("completionReason") != "stale":
                    self._trace(work, event, event.name, "session already completed")
                    return
                self._reopen(work, event, "activity after a stale sweep")
            self._touch(record, event)
            if event.kind == TOOL_USE:
                self._trace(work, event, "tool.use", event.tool_name or event.name)
                work.effects.append(Effect("tool-use", record, event))
            elif event.kind == TURN_END:
                self._trace(work, event, "turn.end", event.name)
                work.effects.append(Effect("turn-end", record, event))
            else:
                self._trace(work, event, event.name, event.name)
                work.effects.append(Effect("event", record, event))
        if len(recent) > RECENT_EVENTS:
            # Keep this batch whole even when it alone exceeds the cap.
            keep = max(RECENT_EVENTS, len(work.files))
            del recent[:-keep]

    def _new_record(self, work: _Work, event: Event) -> Record:
        host, session_id = work.key
        at = iso(event.ts)
        record: Record = {
            "id": work.harness_id,
            "name": f"hook:{host}:{session_id}",
            "status": "active",
            "repoPath": str(self.ws.root),
            "createdAt": at,
            "updatedAt": at,
            "startedAt": at,
            "traceCount": 0,
            "artifactCount": 0,
            "checkpointCount": 0,
            "checkpoints": [],
            "metadata": {"host": host, "hostSessionId": session_id},
            "lastTraceAt": at,
        }
        sidecar_meta(record)["cron"] = event.is_cron
        sidecar_meta(record)["subagent"] = event.is_subagent
        work.trace.append(self._trace_line(work.harness_id, event, "session.created",
                                           f"Session created: {record['name']}"))
        record["traceCount"] = 1
        return record

    @staticmethod
    def _remember(meta: dict[str, Any], event: Event) -> None:
        """Keep what follow-up hooks need later: where it ran, its transcript, its kind."""
        if event.cwd:
            meta["cwd"] = event.cwd
        if event.transcript_path:
            meta["transcriptPath"] = event.transcript_path
        if event.is_cron:
            meta["cron"] = True
        if event.is_subagent:
            meta["subagent"] = True
        if event.hook_id:
            meta["startedByHook"] = event.hook_id

    @staticmethod
    def _touch(record: Record, event: Event) -> None:
        if event.ts > _ts(record.get("updatedAt"), 0.0):
            record["updatedAt"] = iso(event.ts)

    def _reopen(self, work: _Work, event: Event | None, why: str) -> None:
        record = work.record
        record["status"] = "active"
        record.pop("completedAt", None)
        sidecar_meta(record).pop("completionReason", None)
        work.trace.append(self._trace_line(record["id"], event, "session.reopened", why))
        record["traceCount"] = int(record.get("traceCount") or 0) + 1

    def complete(self, work: _Work, record: Record, ts: float, reason: str,
                 event: Event | None) -> None:
        record["status"] = "completed"
        record["completedAt"] = iso(ts)
        if ts > _ts(record.get("updatedAt"), 0.0):
            record["updatedAt"] = iso(ts)
        sidecar_meta(record)["completionReason"] = reason
        line = self._trace_line(record["id"], event, "session.completed", reason, at=ts)
        line["data"]["reason"] = reason
        work.trace.append(line)
        record["traceCount"] = int(record.get("traceCount") or 0) + 1
        record["lastTraceAt"] = line["createdAt"]
        work.dirty = True

    def _trace(self, work: _Work, event: Event, name: str, message: str) -> None:
        line = self._trace_line(work.record["id"], event, name, message)
        work.trace.append(line)
        work.record["traceCount"] = int(work.record.get("traceCount") or 0) + 1
        if event.ts >= _ts(work.record.get("lastTraceAt"), 0.0):
            work.record["lastTraceAt"] = line["createdAt"]

    @staticmethod
    def _trace_line(hid: str, event: Event | None, name: str, message: str,
                    at: float | None = None) -> dict[str, Any]:
        when = at if at is not None else (event.ts if event else time.time())
        origin = event.file if event else f"sweep:{when}"
        data: dict[str, Any] = {}
        if event is not None:
            data = {"host": event.host, "hostEvent": event.name, "inboxFile": event.file}
        return {
            # Derived from the inbox file, so a line repeated by a crash replay is recognisable.
            "id": str(uuid.uuid5(NAMESPACE, f"{origin}\0{name}")),
            "sessionId": hid,
            "level": "info",
            "event": name,
            "message": message,
            "createdAt": iso(when),
            "data": data,
        }

    def _sync_binding(self, bindings: dict[str, Any], work: _Work) -> bool:
        """Make the binding match the session: present while active, gone once completed."""
        host, session_id = work.key
        per_host = bindings["bindings"].setdefault(host, {})
        current = per_host.get(session_id)
        record = work.record
        if record is None:
            return False
        if record.get("status") == "completed":
            if current is None:
                if not per_host:
                    del bindings["bindings"][host]
                return False
            del per_host[session_id]
            if not per_host:
                del bindings["bindings"][host]
            return True
        if not isinstance(current, dict):
            current = per_host[session_id] = {
                "harnessSessionId": record["id"],
                "hostSessionId": session_id,
                "source": host,
                "repoPath": str(self.ws.root),
                "createdAt": record.get("updatedAt"),
                "updatedAt": record.get("updatedAt"),
            }
            return True
        current["harnessSessionId"] = record["id"]
        if _ts(record.get("updatedAt"), 0.0) > _ts(current.get("updatedAt"), 0.0):
            current["updatedAt"] = record["updatedAt"]
        return True

    # -- sweep and retention -------------------------------------------------------------

    def sweep(self, now: float, stale_after: float) -> BatchResult:
        """Complete (reason `stale`) and unbind every session untouched for `stale_after`."""
        result = BatchResult()
        with locks.locked(self.ws.lock("bindings")):
            bindings = self.load_bindings()
            gone: list[Key] = []
            for host, per_host in list(bindings["bindings"].items()):
                if not isinstance(per_host, dict):
                    continue
                for session_id, binding in list(per_host.items()):
                    if not isinstance(binding, dict):
                        gone.append((host, session_id))
                        continue
                    touched = _ts(binding.get("updatedAt"), _ts(binding.get("createdAt"), 0.0))
                    if now - touched < stale_after:
                        continue
                    hid = binding.get("harnessSessionId")
                    if not isinstance(hid, str) or not hid:
                        gone.append((host, session_id))
                        continue
                    try:
                        record = self.load_session(hid)
                    except (OSError, ValueError) as exc:
                        result.errors.append(f"sweep: cannot read session {hid}: {exc}")
                        continue  # a passing failure: the binding stays for the next sweep
                    if record is None:
                        gone.append((host, session_id))  # confirmed missing
                        continue
                    if record.get("status") == "completed":
                        gone.append((host, session_id))
                        continue
                    if _transcript_recent(record, now, stale_after):
                        continue
                    work = _Work((host, session_id), hid, record)
                    self.complete(work, record, now, "stale", None)
                    try:
                        self.save_session(record, work.trace)
                    except OSError as exc:
                        result.errors.append(f"sweep: cannot save session {hid}: {exc}")
                        continue
                    gone.append((host, session_id))
                    result.effects.append(Effect("end", record, None, "stale"))
            if gone:
                fresh = self.load_bindings()
                for host, session_id in gone:
                    per_host = fresh["bindings"].get(host)
                    if isinstance(per_host, dict) and session_id in per_host:
                        del per_host[session_id]
                        if not per_host:
                            del fresh["bindings"][host]
                self.save_bindings(fresh)
        return result

    def prune(self, now: float, retention: float) -> int:
        """Delete completed sessions older than `retention`; returns how many."""
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
            except (OSError, ValueError):
                continue
            if record is None or record.get("status") != "completed":
                continue
            if _ts(record.get("completedAt"), now) >= cutoff:
                continue
            shutil.rmtree(entry.path, ignore_errors=True)
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
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = max(0, size - (lines * 4096 + 4096))
            handle.seek(start)
            tail = handle.read()
    except FileNotFoundError:
        return set()
    ids = set()
    for raw in tail.splitlines()[1 if start else 0:]:
        try:
            ids.add(orjson.loads(raw)["id"])
        except (ValueError, KeyError, TypeError):
            continue
    return ids


def _transcript_recent(record: Record, now: float, window: float) -> bool:
    """Whether the session's transcript was written within `window`: it is still going."""
    path = sidecar_meta(record).get("transcriptPath")
    if not isinstance(path, str) or not path:
        return False
    try:
        return now - os.stat(Path(path)).st_mtime < window
    except OSError:
        return False
