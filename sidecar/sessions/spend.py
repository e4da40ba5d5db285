"""What a session spent, as its host's records tell it at a turn end and at its end: the
record's token figures and cost (`metadata.sidecar.tokens`, `cost`), what they grew by for
the workspace's totals (tokens.py), and the turn's own share on its trace line and change.

No I/O but the price table's (sidecar/cost/): the records are read by the batch (endfacts.py)
and handed in. The transcript's figures cover the whole conversation, so what a turn spent
is what they grew by since the last read; a read that finds nothing new adds nothing.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, NamedTuple

from sidecar.base.timeutil import parse_ts
from sidecar.cost.session import PLACES, cost_of
from sidecar.hosts.base import EndFacts, local_day
from sidecar.sessions import tokens
from sidecar.sessions.model import SessionRecord
from sidecar.vocabulary import EventKind

if TYPE_CHECKING:
    from sidecar.sessions.rules import Applied

# The lines and changes a read's figures are told on: the turn's own, or the session's end.
TOLD_LINES = ("turn.end", "turn.failed", "session.completed")
TOLD_CHANGES = (EventKind.TURN_END, EventKind.TURN_FAILED, EventKind.SESSION_END)


class Taken(NamedTuple):
    """One read: its growth for the workspace's totals, and the change's `spent`."""

    growth: tokens.Growth
    spent: dict[str, Any]


def take(record: SessionRecord, end: EndFacts) -> Taken | None:
    """Keep the figures `end` read in the record, and what they grew by (None: no figures)."""
    if end.tokens is None:
        return None
    meta = record.sidecar
    figures = end.tokens.to_json()
    grew = tokens.grown(meta.tokens, figures)
    first = meta.tokens is None
    old_days, old_usd = _days(meta.cost), _dollars((meta.cost or {}).get("usd"))
    if not end.spend and end.tokens.none:
        # No tokens and no model: nothing was spent yet, and nothing is said of its price
        # (a cost the record holds, however it was written, is left as it is).
        meta.tokens = figures
        return Taken(tokens.Growth(grew, first), {"tokens": grew, "cost": None, "total": None})
    cost = cost_of(end.spend, local_day(parse_ts(record.created_at)))
    meta.tokens, meta.cost = figures, cost
    # What each day grew by, the latest first, never more in all than the session's cost grew
    # by: a host that dates one running total (Cline) moves it to a later day, and the day it
    # left keeps what was counted there.
    room = max(0.0, _dollars(cost["usd"]) - old_usd)
    days_grew = []
    for day, usd in sorted(cost["days"].items(), reverse=True):
        share = min(room, max(0.0, usd - _dollars(old_days.get(day))))
        room -= share
        days_grew.append((day, round(share, PLACES), day not in old_days))
    days = tuple(day for day in reversed(days_grew) if day[1] > 0 or day[2])
    turn = {"usd": None if cost["usd"] is None else round(sum(usd for _, usd, _ in days), PLACES),
            "source": cost["source"], "model": end.spend[-1].model if end.spend else None}
    return Taken(tokens.Growth(grew, first, days), {"tokens": grew, "cost": turn, "total": cost})


def _dollars(value: Any) -> float:
    """A dollar figure as a record holds it: a finite amount of at least 0, else 0."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return 0.0
    return float(value) if 0.0 <= value < float("inf") else 0.0


def _days(cost: dict[str, Any] | None) -> dict[str, Any]:
    days = cost.get("days") if isinstance(cost, dict) else None
    return days if isinstance(days, dict) else {}


def tell(taken: Taken, out: Applied, lines: int, changes: int) -> None:
    """Put the read's figures on the first trace line the event added from `lines` on that
    is its turn's (or the session's end), and on the changes it made from `changes` on: the
    growth on the first, the total on each (so no growth is counted twice)."""
    for line in out.trace[lines:]:
        if line.event in TOLD_LINES:
            line.data["tokens"] = taken.spent["tokens"]
            line.data["cost"] = taken.spent["cost"]
            break
    spent = taken.spent
    for i in range(changes, len(out.changes)):
        if out.changes[i].kind in TOLD_CHANGES:
            out.changes[i] = dataclasses.replace(out.changes[i], spent=spent)
            spent = _told(spent)


def _told(spent: dict[str, Any]) -> dict[str, Any]:
    """`spent` once its growth is told: none left, the total as it is."""
    turn = spent["cost"]
    return {**spent, "tokens": dict.fromkeys(tokens.FIELDS, 0),
            "cost": None if turn is None else {**turn, "usd": None if turn["usd"] is None else 0.0}}
