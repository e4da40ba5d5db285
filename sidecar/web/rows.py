"""What the web view's API answers, as JSON: the session list (filtered and sorted as `top`
sorts it), one session's detail, and the names of rows.

Pure: built from a RowSource's rows and `now`, so it is tested without a server. A row's key
reaches the browser as an opaque URL-safe string; one coming back is only ever looked up among
the rows, never used as a path.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from sidecar.base.outcome import Outcome
from sidecar.base.timeutil import iso
from sidecar.live.source import RowSource
from sidecar.live.timeline import Gathered
from sidecar.top import view
from sidecar.views import cost, rowjson
from sidecar.views.activity import State
from sidecar.views.sessions import RowKey, SessionRow

API_VERSION = 1
STATES = (State.WORKING, State.WAITING, State.IDLE, State.LIMITED, State.ENDED)
MAX_LIMIT = 1000


def key_text(key: RowKey) -> str:
    machine, root, hid = key
    return base64.urlsafe_b64encode(orjson.dumps([machine, str(root), hid])).decode().rstrip("=")


def key_of(text: str) -> RowKey | None:
    """The row key a key string names, or None where it names none."""
    try:
        value = orjson.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError):
        return None
    if not isinstance(value, list) or len(value) != 3 or not all(isinstance(v, str) for v in value):
        return None
    return value[0], Path(value[1]), value[2]


def _at(ts: float | None) -> str | None:
    return None if ts is None else iso(ts)


def _waiting(row: SessionRow) -> bool:
    return any(f.state in view.WAITING_FOLLOW_UP for f in row.follow_ups)


def _failed_last(row: SessionRow) -> bool:
    live = any(f.state in view.WAITING_FOLLOW_UP or f.state == "running" for f in row.follow_ups)
    return bool(row.follow_ups) and not live and Outcome.parse(row.follow_ups[0].state).failed


def session(row: SessionRow, now: float, stale: float | None) -> dict[str, Any]:
    """One row as the list and the detail send it: `sessions --json`'s object and the words
    `top` shows, with what can be done to it."""
    waiting = _waiting(row)
    return {**rowjson.to_json(row, stale), "key": key_text(row.key), "machine": row.machine,
            "reachable": row.reachable, "stateWords": view.state_words(row),
            "whyWords": view.why_shown(row, now),
            "followUpWords": view.follow_ups(row, now), "costWords": cost.shown(row.cost),
            "canCancel": waiting, "canFire": waiting, "canRetry": not waiting and _failed_last(row)}


def counts(rows: Iterable[SessionRow]) -> dict[str, int]:
    found = dict.fromkeys([*STATES, "queued"], 0)
    for row in rows:
        if row.reachable:  # an unreachable machine's: nothing of it is live
            found[row.activity.state] += 1
            found["queued"] += sum(1 for f in row.follow_ups if f.state in view.WAITING_FOLLOW_UP)
    return found


def next_due(rows: Iterable[SessionRow]) -> dict[str, Any] | None:
    """The follow-up due first among every session's."""
    best: tuple[float, SessionRow, str] | None = None
    for row in filter(lambda row: row.reachable, rows):  # (another's cannot fire now)
        for item in row.follow_ups:
            if item.state in view.WAITING_FOLLOW_UP and item.at is not None \
                    and (best is None or item.at < best[0]):
                best = (item.at, row, item.hook_id)
    if best is None:
        return None
    return {"key": key_text(best[1].key), "hookId": best[2], "at": iso(best[0])}


def machines(source: RowSource) -> list[dict[str, Any]]:
    """The machines the source reads: a fleet's say which it hears from (`machines`, when it
    has them); this machine's own is named "" and is always reachable."""
    listed = getattr(source, "machines", None)
    if isinstance(listed, list):
        return listed
    return [{"name": "", "reachable": True, "lastHeardAt": None, "unreachableSince": None}]


class Query:
    """The list's filters as the address gives them: `q` (as `top`'s `/`), `state`, `machine`,
    `offset`, `limit`. ValueError names a bad one."""

    def __init__(self, params: dict[str, str]) -> None:
        self.text = params.get("q", "")
        self.state = params.get("state", "")
        self.machine = params.get("machine")
        if self.state and self.state not in STATES:
            raise ValueError(f"state is one of {', '.join(STATES)}")
        try:
            self.offset = int(params.get("offset", "0"))
            self.limit = int(params.get("limit", "200"))
        except ValueError:
            raise ValueError("offset and limit are whole numbers") from None
        if self.offset < 0 or not 1 <= self.limit <= MAX_LIMIT:
            raise ValueError(f"offset is 0 or more, limit from 1 to {MAX_LIMIT}")

    def keeps(self, row: SessionRow) -> bool:
        return ((not self.state or row.activity.state == self.state)
                and (self.machine is None or row.machine == self.machine)
                and (not self.text or view.matches(row, self.text)))


class Sorted:
    """The rows in `top`'s order, sorted again only when the source's version moved."""

    def __init__(self) -> None:
        self._version: int | None = None
        self.rows: list[SessionRow] = []

    def of(self, source: RowSource) -> list[SessionRow]:
        if self._version != source.version or len(self.rows) != len(source.rows):
            self.rows = sorted(source.rows.values(), key=view.sort_key)
            self._version = source.version
        return self.rows


def listing(source: RowSource, ordered: list[SessionRow], query: Query, now: float,
            stale: float | None) -> dict[str, Any]:
    """`GET /api/sessions`."""
    matched = [row for row in ordered if query.keeps(row)]
    page = matched[query.offset:query.offset + query.limit]
    return {"version": API_VERSION, "now": iso(now), "feedVersion": source.version,
            "total": len(ordered), "matched": len(matched), "counts": counts(ordered),
            "nextDue": next_due(ordered), "sessions": [session(row, now, stale) for row in page],
            "errors": sorted(source.errors.values()), "machines": machines(source)}


def detail(row: SessionRow, gathered: Gathered | None, now: float, stale: float | None) -> dict[str, Any]:
    """`GET /api/session`: the row, its timeline (None: another machine's files) and its
    follow-ups with their last log lines."""
    logs = gathered.logs if gathered is not None else []
    return {
        "session": session(row, now, stale),
        "timeline": None if gathered is None else [
            {"at": _at(at), "event": event, "message": message} for at, event, message in gathered.events],
        "followUps": [{"hookId": f.hook_id, "state": f.state, "at": _at(f.at),
                       "words": view.follow_up(f, now), "log": logs[i] if i < len(logs) else []}
                      for i, f in enumerate(row.follow_ups)],
        "where": row.machine,
    }
