"""Every session of a workspace as one row each: what `sidecar sessions` and `sidecar top` show.

A row joins a session's record (its state: activity.py, as the rules left it) with what the
follow-up queue and the hooks' history say of it. Reading one workspace never fails as a
whole: a record that cannot be read is named in the errors and the rest are listed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecar.base import runs
from sidecar.base.errors import SidecarError
from sidecar.base.timeutil import parse_ts
from sidecar.followups import store as hook_store
from sidecar.followups.model import QueueEntry
from sidecar.followups.store import HooksView
from sidecar.layout import PLAIN_NAME, Workspace
from sidecar.sessions import scan
from sidecar.sessions.model import Key, SessionRecord, ts_or
from sidecar.views import activity, cost
from sidecar.views.activity import Activity


@dataclass(frozen=True)
class FollowUp:
    """One follow-up of a session: queued (with when it is due), running, or how it ended."""

    hook_id: str
    state: str  # queued, postponed, running, or a firing's status (ok, error: ..., skipped: ...)
    at: float | None  # due at (queued, postponed), started at (running) or fired at
    log: str | None = None


@dataclass(frozen=True)
class SessionRow:
    root: Path  # the workspace
    host: str
    session_id: str  # the host's id
    harness_id: str  # sidecar's id (the record's folder)
    started_at: float | None
    updated_at: float | None  # its last activity
    ended_at: float | None
    reason: str | None  # the completion reason as recorded
    activity: Activity
    tokens: dict[str, int] | None
    follow_ups: tuple[FollowUp, ...]  # queued or running first, then the fired, newest first
    cwd: str | None
    mid_turn: bool = False  # it ended with a turn still open (Ctrl-C, a kill)
    cost: dict[str, Any] | None = None  # the record's cost object (views/cost.py); None: never priced
    machine: str = ""  # the machine it runs on, as the fleet names it; "": this one
    reachable: bool = True  # False: its machine stopped publishing; the row is as last heard

    @property
    def key(self) -> RowKey:
        """What names the row among every machine's: (machine, workspace root, harness id)."""
        return self.machine, self.root, self.harness_id


RowKey = tuple[str, Path, str]


def follow_ups_by_session(view: HooksView, ws: Workspace) -> dict[Key, list[FollowUp]]:
    """The queue and the hooks' history, per (host, session id)."""
    found: dict[Key, list[FollowUp]] = {}
    for entry in view.pending:
        found.setdefault((entry.host, entry.session_id), []).append(_queued(entry, ws))
    fired: dict[Key, list[FollowUp]] = {}
    for hook in view.hooks.values():
        for firing in hook.history:
            if firing.host and firing.session_id:
                fired.setdefault((firing.host, firing.session_id), []).append(
                    FollowUp(hook.id, firing.status or "", ts_or(firing.at, 0.0), firing.log))
    for key, done in fired.items():
        found.setdefault(key, []).extend(sorted(done, key=lambda f: -(f.at or 0.0)))
    return found


def _queued(entry: QueueEntry, ws: Workspace) -> FollowUp:
    if entry.run is not None:  # an action that has ended says how, recorded yet or not
        ended = runs.ended_in(str(ws.root), entry.hook_id, entry.run.log)
        return FollowUp(entry.hook_id, ended or "running", ts_or(entry.run.started_at, 0.0),
                        entry.run.log)
    due = entry.due
    return FollowUp(entry.hook_id, "postponed" if entry.retries else "queued",
                    None if due == float("-inf") else due, entry.log)


def row(ws: Workspace, record: SessionRecord, follow_ups: dict[Key, list[FollowUp]]) -> SessionRow:
    host = record.host or "unknown"
    session_id = record.host_session_id or record.id
    data = record.to_json()
    return SessionRow(
        root=ws.root, host=host, session_id=session_id, harness_id=record.id,
        started_at=parse_ts(record.started_at or record.created_at), updated_at=parse_ts(record.updated_at),
        ended_at=None if record.active else parse_ts(record.completed_at),
        reason=record.sidecar.completion_reason, activity=activity.of(data),
        tokens=record.sidecar.tokens, follow_ups=tuple(follow_ups.get((host, session_id), ())),
        cwd=record.sidecar.cwd, mid_turn=not record.active and record.sidecar.turn_open,
        cost=cost.of_record(data))


def harness_ids(ws: Workspace) -> list[str]:
    """The names of the workspace's session folders (a bare listing)."""
    try:
        names = os.listdir(ws.sessions)
    except FileNotFoundError:
        return []
    return [name for name in names if PLAIN_NAME.fullmatch(name)]


def read_rows(ws: Workspace) -> tuple[list[SessionRow], list[str]]:
    """Every session of the workspace (unordered), and what could not be read."""
    errors: list[str] = []
    try:
        ws.check_runtime()
        view = hook_store.read_view(ws)
    except (OSError, ValueError, SidecarError) as exc:
        return [], [f"{ws.root}: cannot read the runtime: {exc}"]
    follow_ups = follow_ups_by_session(view, ws)
    rows: list[SessionRow] = []
    try:
        for found in scan.records(ws):
            if found.record is None:
                errors.append(f"{ws.root}: cannot read session {found.harness_id}: {found.error}")
            else:
                rows.append(row(ws, found.record, follow_ups))
    except OSError as exc:
        errors.append(f"{ws.root}: cannot read the sessions: {exc}")
    return rows, errors
