"""A session's row as JSON, and back: what `sessions --json` prints, what a machine publishes to
the fleet and what the web view is sent. One shape, read back by `from_json` into the same row
every view shows; it holds no prompt and no transcript, only the row's own facts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sidecar.base import words
from sidecar.base.timeutil import iso, parse_ts
from sidecar.layout import PLAIN_NAME
from sidecar.views.activity import Activity, State
from sidecar.views.sessions import FollowUp, SessionRow


def _at(ts: float | None) -> str | None:
    return None if ts is None else iso(ts)


def to_json(row: SessionRow, stale: float | None) -> dict[str, Any]:
    """The row (`stale`: config.toml's staleAfter, for saying why a swept session ended)."""
    act = row.activity
    return {
        "workspace": str(row.root), "host": row.host, "sessionId": row.session_id,
        "harnessSessionId": row.harness_id, "state": act.state,
        "stateSince": _at(act.since), "why": act.why, "detail": act.detail,
        "startedAt": _at(row.started_at), "lastActivityAt": _at(row.updated_at),
        "endedAt": _at(row.ended_at), "endReason": row.reason,
        "endedWhy": words.end_reason(row.reason, mid_turn=row.mid_turn, stale_after=stale)
        if act.state == State.ENDED else None,
        "midTurn": row.mid_turn, "tokens": row.tokens, "cost": row.cost, "cwd": row.cwd,
        "followUps": [{"hookId": f.hook_id, "state": f.state, "at": _at(f.at), "log": f.log}
                      for f in row.follow_ups],
    }


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _tokens(value: Any) -> dict[str, int] | None:
    if not isinstance(value, dict):
        return None
    return {str(k): v for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool)}


def _follow_up(item: Any) -> FollowUp | None:
    if not isinstance(item, dict) or not isinstance(item.get("hookId"), str):
        return None
    return FollowUp(item["hookId"], _text(item.get("state")) or "", parse_ts(item.get("at")),
                    _text(item.get("log")))


def from_json(data: dict[str, Any], machine: str = "") -> SessionRow:
    """The row `to_json` gave, of `machine`; ValueError where it is not one (a published row is
    another machine's word: each field is checked for its type, none is trusted)."""
    state, root, hid = data.get("state"), data.get("workspace"), data.get("harnessSessionId")
    if state not in (State.WORKING, State.WAITING, State.IDLE, State.LIMITED, State.ENDED):
        raise ValueError(f"not a session's state: {state!r}")
    if not isinstance(root, str) or not root.startswith("/") or not isinstance(hid, str) \
            or not PLAIN_NAME.fullmatch(hid):
        raise ValueError("a session row names its workspace (a whole path) and its harness id")
    follow_ups = data.get("followUps")
    items = [_follow_up(item) for item in follow_ups] if isinstance(follow_ups, list) else []
    cost = data.get("cost")
    return SessionRow(
        root=Path(root), host=_text(data.get("host")) or "unknown",
        session_id=_text(data.get("sessionId")) or hid, harness_id=hid,
        started_at=parse_ts(data.get("startedAt")), updated_at=parse_ts(data.get("lastActivityAt")),
        ended_at=parse_ts(data.get("endedAt")), reason=_text(data.get("endReason")),
        activity=Activity(state, parse_ts(data.get("stateSince")), _text(data.get("why")) or "",
                          _text(data.get("detail")) or ""),
        tokens=_tokens(data.get("tokens")), follow_ups=tuple(f for f in items if f is not None),
        cwd=_text(data.get("cwd")), mid_turn=data.get("midTurn") is True,
        cost=cost if isinstance(cost, dict) else None, machine=machine)
