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
    before = meta.cost.get("days") if meta.cost is not None else None
    old_days = before if isinstance(before, dict) else {}
    cost = cost_of(end.spend, local_day(parse_ts(record.created_at)))
    meta.tokens, meta.cost = figures, cost
    days = tuple((day, round(max(0.0, usd - _dollars(old_days.get(day))), PLACES), day not in old_days)
                 for day, usd in cost["days"].items())
    days = tuple(day for day in days if day[1] > 0 or day[2])
    turn = {"usd": None if cost["usd"] is None else round(sum(usd for _, usd, _ in days), PLACES),
            "source": cost["source"], "model": end.spend[-1].model if end.spend else None}
    return Taken(tokens.Growth(grew, first, days), {"tokens": grew, "cost": turn, "total": cost})


def _dollars(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


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
            spent = {**spent, "tokens": dict.fromkeys(tokens.FIELDS, 0),
                     "cost": {**spent["cost"], "usd": None if spent["cost"]["usd"] is None else 0.0}}
