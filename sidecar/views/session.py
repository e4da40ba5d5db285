"""One host session's story, for `status --session ID`: its record, its timeline, and every
follow-up queued for it. It reads through the typed stores (a session is looked up by any
prefix of its ids), imported when asked: no hot command loads them."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs `status` 2 ms (see base/words.py)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from sidecar.layout import Workspace

LAST_TURNS = 5  # the turns whose own cost `status --session` shows


def session_report(ws: Workspace, session_id: str) -> dict[str, Any] | None:
    """One host session's story: its record, its timeline, and every follow-up queued for it
    (pending, postponed, running, or how it ended, with its log); None if it is unknown.
    `session_id`: the host's id or sidecar's harness id, or the start of one
    (lookup.AmbiguousSession if it starts several)."""
    import orjson

    from sidecar.base import runs
    from sidecar.base.outcome import Outcome
    from sidecar.followups import store as hook_store
    from sidecar.followups.run import logtail
    from sidecar.hosts import registry
    from sidecar.sessions import lookup
    from sidecar.sessions.store import SessionStore
    from sidecar.views import activity, cost

    store = SessionStore(ws)
    view = hook_store.read_view(ws)
    hosts = {h for (h, sid), _ in store.load_bindings().items() if sid == session_id}
    hosts |= {e.host for e in view.pending if e.session_id == session_id}
    hosts |= {f.host for h in view.hooks.values() for f in h.history if f.session_id == session_id and f.host}
    try:
        found = lookup.resolve(store, session_id, hosts | {*registry.names(), registry.UNKNOWN})
    except lookup.UnknownSession:
        return None
    if found.record is None:
        return None
    host, record, session_id = found.host, found.record, found.session_id
    trace = ws.session_dir(record.id) / "trace.jsonl"
    lines = [orjson.loads(line) for line in trace.read_bytes().splitlines()] if trace.exists() else []
    follow_ups = [{"hookId": e.hook_id, "state": (runs.ended_in(str(ws.root), e.hook_id, e.run.log)
                                                 or "running") if e.run else
                   "claimed" if e.claimed_by else "postponed" if e.retries else "pending",
                   "dueAt": e.due_at, "retries": e.retries,
                   "why": view.hooks[e.hook_id].last_status if e.retries and e.hook_id in view.hooks
                   else None, "log": e.run.log if e.run else None, "retry": e.retry}
                  for e in view.pending if e.session_id == session_id and e.host == host]
    follow_ups += [{"hookId": h.id, "state": f.status, "at": f.at, "log": f.log,
                    "lastLine": f.line if f.kept else logtail.last_line(ws, h.id, f.log)
                    if Outcome.parse(f.status).failed else None, "retry": f.retry}
                   for h in view.hooks.values() for f in h.history
                   if f.session_id == session_id and f.host == host]
    meta, data = record.sidecar, record.to_json()
    now_doing = activity.of(data)
    return {"host": host, "sessionId": session_id, "harnessSessionId": record.id,
            "status": record.status, "state": now_doing.state, "stateWhy": now_doing.why or None,
            "completedAt": record.completed_at,
            "completionReason": meta.completion_reason, "hostPid": meta.host_pid,
            "queuedHooks": sorted(meta.follow_ups), "followUps": follow_ups,
            "tokens": meta.tokens, "cost": cost.of_record(data), "turns": cost.turn_costs(lines, LAST_TURNS),
            "limit": meta.limit.to_json() if meta.limit else None,
            "timeline": [{"at": line.get("createdAt"), "event": line.get("event"),
                          "message": line.get("message")} for line in lines]}


class SessionNotFound(Exception):
    """No session by that id where `status --session` looked (the message says where), or a
    --root that is no workspace (`code`: the exit code to say it with)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def find_session(session_id: str, root: Path | None) -> tuple[Workspace, dict[str, Any]]:
    """The session `session_id` names and its workspace: in `root`'s workspace only, when it
    is given; else in the one holding the current folder, then in every registered workspace
    (a session is found from any folder, as `sessions` lists them all). One that cannot be
    read among the registered ones is passed over; the current one's errors are raised, as
    are lookup.AmbiguousSession, config.RegistryError and SessionNotFound."""
    from pathlib import Path

    from sidecar import config
    from sidecar.base.errors import SidecarError
    from sidecar.base.exitcodes import FAILURE, NOT_WORKSPACE
    from sidecar.layout import Workspace, find_workspace

    here = find_workspace(root or Path.cwd())
    if root is not None and here is None:
        raise SessionNotFound(f"{root} is not a workspace (no .context/)", NOT_WORKSPACE)
    report = None if here is None else session_report(here, session_id)
    if here is not None and report is not None:
        return here, report
    if root is not None:
        raise SessionNotFound(f"no session {session_id!r} in {root}", FAILURE)
    found: list[tuple[Workspace, dict[str, Any]]] = []
    for ws in (Workspace(other) for other in config.load_registry()):
        if here is not None and ws.root == here.root:
            continue
        try:
            other_report = session_report(ws, session_id)
        except (OSError, ValueError, SidecarError):
            continue  # unreadable, or the start of several ids there: not one to show
        if other_report is not None:
            found.append((ws, other_report))
    if len(found) == 1:
        return found[0]
    if not found:
        where = f"{here.root} or the registered workspaces" if here else "the registered workspaces"
        raise SessionNotFound(f"no session {session_id!r} in {where}", FAILURE)
    raise SessionNotFound(f"{session_id!r} names sessions in {len(found)} workspaces ("
                          + ", ".join(str(ws.root) for ws, _ in found) + "); give --root DIR",
                          FAILURE)
