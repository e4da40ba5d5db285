"""`sidecar status`: one report, built once, rendered as a table or as JSON.

It reads only small files and folder listings (never the session records themselves), so it
stays fast however many completed sessions a workspace keeps.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict, TypeVar

import orjson

from sidecar.base import storage
from sidecar.base.errors import SidecarError
from sidecar.base.exitcodes import OK, of_status
from sidecar.base.timeutil import iso, parse_ts
from sidecar.base.version import __version__
from sidecar.cli.jsonout import print_json
from sidecar.cli.status_text import render_session as render_session
from sidecar.cli.status_text import render_text as render_text
from sidecar.coordination import current as coordination
from sidecar.coordination.base import Unreachable
from sidecar.daemon import instances
from sidecar.followups import logtail, trust
from sidecar.followups import store as hook_store
from sidecar.followups.notify import targets
from sidecar.followups.notify.targets import Notify
from sidecar.followups.outcome import Outcome
from sidecar.hosts import registry
from sidecar.inbox import folder as inbox
from sidecar.layout import TamperedRuntime, Workspace, find_workspace
from sidecar.procwatch import Proc, is_alive
from sidecar.sessions import lookup, tokens
from sidecar.sessions.model import Binding, Key
from sidecar.sessions.store import SessionStore

T = TypeVar("T")
REPORT_VERSION = 1


class InstanceRow(TypedDict):
    id: str
    pid: int | None
    hostname: str | None
    version: str | None
    build: str | None
    role: str | None
    startedAt: str | None
    heartbeatAt: str | None
    heartbeatAgeSeconds: float | None
    live: bool
    applied: int
    rejected: int
    errors: int
    lastError: str
    plugins: dict[str, dict[str, int]]


class BindingRow(TypedDict):
    host: str
    sessionId: str
    harnessSessionId: str | None
    updatedAt: str | None
    ageSeconds: float | None
    hostPid: int | None  # the host's process, when the session reported it
    hostAlive: bool | None


class HookRow(TypedDict):
    id: str
    name: str
    enabled: bool
    event: str
    delaySeconds: int
    action: str | list[str] | Notify
    lastStatus: str | None
    lastFiredAt: str | None
    lastLog: str | None
    lastLine: str | None  # a failed firing's: the last line its log says (logtail)
    trusted: bool  # an enabled hook is trusted on this machine as it stands (disabled: true)


class QueueRow(TypedDict):
    hookId: str
    host: str
    sessionId: str
    dueInSeconds: float
    retries: int
    claimedBy: str | None
    running: dict[str, Any] | None  # its action: pid, startedAt, log, and whether it is alive


class HooksSection(TypedDict):
    hooks: list[HookRow]
    queue: list[QueueRow]
    error: str | None


class WorkspaceReport(HooksSection):
    root: str
    served: bool
    storage: str | None  # why nothing can be written in its runtime (storage.py), while so
    instances: list[InstanceRow]
    inbox: dict[str, Any]
    rejected: int
    sessions: dict[str, int]
    tokens: dict[str, int] | None  # the workspace's totals (usage.json); None before any
    bindings: list[BindingRow]
    plugins: dict[str, dict[str, int]]
    errors: list[str]


class CoordinationRow(TypedDict):
    backend: str  # "file" or "redis"
    url: str | None  # the Redis URL, its password masked
    reachable: bool
    error: str | None
    since: str | None  # since when it has been unreachable, as the instances found
    # This machine's wall clock minus Redis's, in seconds (None: the file backend, or unknown).
    # Measured by `status` itself rather than read from a daemon's instance file: it is this
    # machine's clock that is judged, also where no daemon runs here, and TIME costs the
    # round trip the ping it replaces did (each machine's own status or doctor judges its own).
    clockOffsetSeconds: float | None
    persistence: dict[str, Any] | None  # Redis's: appendonly, appendfsync, evicts
    warnings: list[str]  # a clock off Redis's by more than a second; persistence wanting


class Report(TypedDict):
    version: int
    sidecar: str
    coordination: CoordinationRow
    workspaces: list[WorkspaceReport]


def instance_rows(ws: Workspace, now: float) -> list[InstanceRow]:
    """Every instance that registered with the workspace, and whether it is alive."""
    rows: list[InstanceRow] = []
    for seen in instances.seen(ws):
        info = seen.info
        rows.append({
            "id": info.id, "pid": info.pid, "hostname": info.hostname, "version": info.version,
            "build": info.build,
            "role": info.role, "startedAt": info.started_at, "heartbeatAt": info.heartbeat_at,
            "heartbeatAgeSeconds": instances.heartbeat_age(info, now), "live": seen.live,
            "applied": info.applied, "rejected": info.rejected, "errors": info.errors,
            "lastError": info.last_error, "plugins": info.plugins,
        })
    return rows


def hooks_section(ws: Workspace, now: float) -> HooksSection:
    """Hooks and queue as the file says, or as last known good when it is broken (read-only)."""
    view = hook_store.read_view(ws)
    untrusted = {h.id for h in trust.untrusted(ws, view.hooks.values())}
    rows: list[HookRow] = [
        {
            "id": h.id, "name": h.name, "enabled": h.enabled, "event": h.event.value,
            "delaySeconds": h.delay_seconds, "action": targets.masked(h.action), "lastStatus": h.last_status,
            "lastFiredAt": h.last_fired_at, "lastLog": h.history[-1].log if h.history else None,
            "lastLine": logtail.failure_line(ws, h), "trusted": h.id not in untrusted,
        }
        for h in view.hooks.values()
    ]
    queue: list[QueueRow] = []
    for entry in view.pending:
        due = entry.due
        queue.append({
            "hookId": entry.hook_id, "host": entry.host, "sessionId": entry.session_id,
            "dueInSeconds": 0.0 if due == float("-inf") else round(due - now, 3),
            "retries": entry.retries, "claimedBy": entry.claimed_by,
            "running": None if entry.run is None else {
                "pid": entry.run.pid, "startedAt": entry.run.started_at, "log": entry.run.log,
                "alive": is_alive(Proc(entry.run.pid, entry.run.start))},
        })
    queue.sort(key=lambda q: q["dueInSeconds"])
    return {"hooks": rows, "queue": queue, "error": view.error}


def _read(errors: list[str], what: str, read: Callable[[], T], default: T) -> T:
    """One part of the report; a part that cannot be read is said, never a traceback."""
    try:
        return read()
    except (OSError, SidecarError, ValueError) as exc:
        errors.append(f"cannot read {what}: {exc}")
        return default


def workspace_report(ws: Workspace, now: float) -> WorkspaceReport:
    try:
        ws.check_runtime()
    except TamperedRuntime as exc:  # nothing is read through a symlink, even to count it
        return _set_aside_report(ws, f"cannot read the runtime: {exc}")
    errors: list[str] = []
    no_arrivals: list[inbox.Arrival] = []
    arrivals = _read(errors, f"the inbox {ws.inbox}", lambda: inbox.scan(ws), no_arrivals)
    oldest = min((a.mtime for a in arrivals), default=None)
    store = SessionStore(ws)
    no_bindings: list[tuple[Key, Binding]] = []
    bound = _read(errors, "the bindings", lambda: store.load_bindings().items(), no_bindings)
    bindings: list[BindingRow] = []
    for (host, session_id), binding in bound:
        updated = parse_ts(binding.updated_at)
        proc = _host_of(store, binding.harness_session_id)
        bindings.append({
            "host": host, "sessionId": session_id,
            "harnessSessionId": binding.harness_session_id, "updatedAt": binding.updated_at,
            "ageSeconds": None if updated is None else round(now - updated, 3),
            "hostPid": None if proc is None else proc.pid,
            "hostAlive": None if proc is None else is_alive(proc),
        })
    bindings.sort(key=lambda b: b["ageSeconds"] if b["ageSeconds"] is not None else 1e18)
    total = _read(errors, f"the sessions {ws.sessions}", store.count_sessions, 0)
    no_instances: list[InstanceRow] = []
    found = _read(errors, f"the instances {ws.instances}", lambda: instance_rows(ws, now),
                  no_instances)
    empty: HooksSection = {"hooks": [], "queue": [], "error": None}
    trouble = storage.said(ws.runtime)
    return {
        "root": str(ws.root),
        "served": any(i["live"] for i in found),
        "storage": trouble,
        "instances": found,
        "inbox": {
            "backlog": len(arrivals),
            "oldestAgeSeconds": None if oldest is None else round(max(0.0, now - oldest), 3),
        },
        "rejected": _read(errors, f"the rejected files {ws.rejected}",
                          lambda: inbox.count_rejected(ws), 0),
        "sessions": {
            "total": total,
            "active": len(bindings),
            "completed": max(0, total - len(bindings)),
        },
        "tokens": tokens.totals(ws),
        "bindings": bindings,
        **_read(errors, f"the hooks {ws.hooks_file}", lambda: hooks_section(ws, now), empty),
        "plugins": _plugin_counters(found),
        "errors": errors if trouble is None else [trouble, *errors],
    }


def _set_aside_report(ws: Workspace, error: str) -> WorkspaceReport:
    return {"root": str(ws.root), "served": False, "storage": None, "instances": [],
            "inbox": {"backlog": 0, "oldestAgeSeconds": None}, "rejected": 0,
            "sessions": {"total": 0, "active": 0, "completed": 0}, "tokens": None,
            "bindings": [],
            "hooks": [], "queue": [], "error": None, "plugins": {}, "errors": [error]}


def _host_of(store: SessionStore, harness_id: str | None) -> Proc | None:
    """The host process an active session reported (its record is small and few are active)."""
    try:
        record = store.load_session(harness_id) if harness_id else None
    except (OSError, ValueError):
        return None
    if record is None or record.sidecar.host_pid is None:
        return None
    return Proc(record.sidecar.host_pid, record.sidecar.host_start)


def _plugin_counters(found: list[InstanceRow]) -> dict[str, dict[str, int]]:
    """Plugin calls, errors and hangs, summed over the live instances."""
    total: dict[str, dict[str, int]] = {}
    for inst in found:
        if not inst["live"]:
            continue
        for name, counts in inst["plugins"].items():
            mine = total.setdefault(name, {"calls": 0, "errors": 0, "hangs": 0})
            for key in mine:
                mine[key] += int(counts.get(key, 0))
    return total


def build(workspaces: list[Workspace], now: float) -> Report:
    return {
        "version": REPORT_VERSION,
        "sidecar": __version__,
        "coordination": coordination_row(workspaces, now),
        "workspaces": [workspace_report(ws, now) for ws in workspaces],
    }


def coordination_row(workspaces: list[Workspace], now: float) -> CoordinationRow:
    """The backend the instances coordinate through, and whether it answers now (asked with
    the configuration `status` runs with, which the daemon's should be)."""
    try:
        backend = coordination.get()
    except SidecarError as exc:
        return {"backend": "redis", "url": None, "reachable": False, "error": str(exc),
                "since": None, "clockOffsetSeconds": None, "persistence": None, "warnings": []}
    row: CoordinationRow = {"backend": "redis" if backend.distributed else "file",
                            "url": backend.shown if backend.distributed else None,
                            "reachable": True, "error": None, "since": None,
                            "clockOffsetSeconds": None, "persistence": None, "warnings": []}
    if not backend.distributed:
        return row
    from sidecar.coordination import redis_clock  # (imports redis: only where it is used)

    try:
        reading = redis_clock.look(backend)  # a ping that also reads its clock and persistence
        if reading is not None:
            row["clockOffsetSeconds"] = None if reading.skew is None else \
                round(reading.skew.skew, 3)
            row["persistence"] = reading.persistence.to_json()
            row["warnings"] = reading.warnings()
    except Unreachable as exc:
        since = [i.coordination_since for ws in workspaces for i in instances.registered(ws)
                 if i.coordination_since]
        row["reachable"], row["error"] = False, exc.why
        row["since"] = min(since) if since else iso(now)
    return row


KNOWN_HOSTS = (*registry.names(), registry.UNKNOWN)


def session_report(ws: Workspace, session_id: str) -> dict[str, Any] | None:
    """One host session's story: its record, its timeline, and every follow-up queued for it
    (pending, postponed, running, or how it ended, with its log); None if it is unknown.
    `session_id`: the host's id or sidecar's harness id, or the start of one
    (lookup.AmbiguousSession if it starts several)."""
    store = SessionStore(ws)
    view = hook_store.read_view(ws)
    hosts = {h for (h, sid), _ in store.load_bindings().items() if sid == session_id}
    hosts |= {e.host for e in view.pending if e.session_id == session_id}
    hosts |= {f.host for h in view.hooks.values() for f in h.history
              if f.session_id == session_id and f.host}
    try:
        found = lookup.resolve(store, session_id, hosts | set(KNOWN_HOSTS))
    except lookup.UnknownSession:
        return None
    if found.record is None:
        return None
    host, record, session_id = found.host, found.record, found.session_id
    trace = ws.session_dir(record.id) / "trace.jsonl"
    lines = [orjson.loads(line) for line in trace.read_bytes().splitlines()] if trace.exists() else []
    follow_ups = [{"hookId": e.hook_id, "state": "running" if e.run else
                   "claimed" if e.claimed_by else "postponed" if e.retries else "pending",
                   "dueAt": e.due_at, "retries": e.retries,
                   "why": view.hooks[e.hook_id].last_status if e.retries and e.hook_id in view.hooks
                   else None, "log": e.run.log if e.run else None}
                  for e in view.pending if e.session_id == session_id and e.host == host]
    follow_ups += [{"hookId": h.id, "state": f.status, "at": f.at, "log": f.log,
                    "lastLine": logtail.last_line(ws, h.id, f.log)
                    if Outcome.parse(f.status).failed else None}
                   for h in view.hooks.values() for f in h.history
                   if f.session_id == session_id and f.host == host]
    meta = record.sidecar
    return {"host": host, "sessionId": session_id, "harnessSessionId": record.id,
            "status": record.status, "completedAt": record.completed_at,
            "completionReason": meta.completion_reason, "hostPid": meta.host_pid,
            "queuedHooks": sorted(meta.follow_ups), "followUps": follow_ups,
            "tokens": meta.tokens, "limit": meta.limit.to_json() if meta.limit else None,
            "timeline": [{"at": line.get("createdAt"), "event": line.get("event"),
                          "message": line.get("message")} for line in lines]}


def answer_session(given: dict[str, Any]) -> int | None:
    """`status --session ID [--root DIR] [--json]` without the command line framework
    (quickcli.py): its exit code, or None where the full command has an error to say."""
    root = given.get("--root")
    found = find_workspace(Path(root) if root is not None else Path.cwd())
    if found is None:
        return None
    try:
        report = session_report(found, given["--session"])
    except (lookup.AmbiguousSession, OSError, ValueError, SidecarError):
        return None
    if report is None:
        return None
    write_session(report, found, bool(given.get("--json")))
    return OK


def write_session(report: dict[str, Any], ws: Workspace, as_json: bool) -> None:
    """One session's story, as JSON or as people read it."""
    from sidecar.cli.sessions import stale_after

    if as_json:
        print_json(report)
    else:
        sys.stdout.write(render_session(report, ws.root, stale_after=stale_after()))
    sys.stdout.flush()


def exit_code(report: Report) -> int:
    return of_status(report)
