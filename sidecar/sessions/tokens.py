"""A workspace's token and cost totals: `runtime/usage.json`, the sum of every session's figures.

Each session's record holds its own figures (`metadata.sidecar.tokens` and `cost`, read from
its transcript at each turn end and completion: the transcript's totals cover the whole
conversation, resumes included). This file adds, at each read, what the session's figures
grew by, so `status` shows a workspace's totals without reading every record: the tokens,
the dollars priced (`usd`), and the dollars by local day with the sessions that spent on it
(`days`, the last DAYS_KEPT days that had any). It is written under the sessions' lock,
after the records are saved: a crash in between leaves a read uncounted here (the record
keeps it), never counted twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from sidecar import jsonfile
from sidecar.base.errors import SidecarError
from sidecar.coordination.base import Unreachable
from sidecar.layout import Workspace

if TYPE_CHECKING:
    from sidecar.coordination.redis.records import RedisRecords

FIELDS = ("input", "output", "cacheRead", "cacheWrite")
USAGE = "usage.json"
DAYS_KEPT = 62
PLACES = 6  # decimals kept of a dollar figure


class Growth(NamedTuple):
    """What one read adds: the figures' growth, whether the session is new here, and the
    dollars it grew by on each local day, with whether the session is new on that day."""

    tokens: dict[str, int]
    first: bool
    days: tuple[tuple[str, float, bool], ...] = ()


def grown(old: dict[str, int] | None, new: dict[str, int]) -> dict[str, int]:
    """What a session's figures grew by since its last completion."""
    before = old or {}
    return {k: max(0, new.get(k, 0) - before.get(k, 0)) for k in FIELDS}


def totals(ws: Workspace, records: RedisRecords | None = None) -> dict[str, int] | None:
    """The workspace's token totals and the sessions counted; None before any was counted, or
    if the file (or in Redis mode, the record) cannot be read (the next read starts it again)."""
    data = ledger(ws, records)
    return None if data is None else {k: data[k] for k in (*FIELDS, "sessions") if k in data}


def ledger(ws: Workspace, records: RedisRecords | None = None) -> dict[str, Any] | None:
    """The whole of usage.json, what is malformed in it left out: the token totals and
    `sessions` (whole numbers), `usd`, and `days` ({day: {"usd", "sessions"}})."""
    try:
        if records is not None:
            raw = records.read(USAGE)  # (Redis not answering is no absent total: it is raised)
            data: Any = None if raw is None else orjson.loads(raw)
        else:
            data = jsonfile.read_json(ws.runtime / USAGE)
    except Unreachable:
        raise
    except (OSError, ValueError, SidecarError):
        return None
    if not isinstance(data, dict):
        return None
    out: dict[str, Any] = {k: v for k in (*FIELDS, "sessions") if _whole(v := data.get(k, 0))}
    if _dollars(data.get("usd")):
        out["usd"] = data["usd"]
    days = data.get("days")
    if isinstance(days, dict):
        out["days"] = {day: {"usd": entry["usd"], "sessions": entry.get("sessions", 0)}
                       for day, entry in days.items()
                       if isinstance(entry, dict) and _dollars(entry.get("usd"))
                       and _whole(entry.get("sessions", 0))}
    return out


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _dollars(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < float("inf")


def add(ws: Workspace, growth: list[Growth], durable: bool, records: RedisRecords | None = None) -> None:
    """Add these reads' growth; the caller holds the sessions' lock. In Redis mode the
    record is changed (sent with the caller's block), and the file follows it."""
    if not growth:
        return
    current = ledger(ws, records) or {}
    for grew in growth:
        for key in FIELDS:
            current[key] = current.get(key, 0) + grew.tokens.get(key, 0)
        _add_days(current, grew.days)
    current["sessions"] = current.get("sessions", 0) + sum(1 for g in growth if g.first)
    data = jsonfile.dumps(current)
    if records is None:
        jsonfile.write_bytes_atomic(ws.runtime / USAGE, data, durable=durable)
        return
    records.put(USAGE, data)
    records.mirror(lambda: records.write_copy(USAGE, data))


def _add_days(current: dict[str, Any], days: tuple[tuple[str, float, bool], ...]) -> None:
    """Add a read's dollars by day (none: it priced nothing), keeping the last DAYS_KEPT days."""
    if not days:
        return
    kept: dict[str, dict[str, Any]] = current.setdefault("days", {})
    for day, usd, first in days:
        entry = kept.setdefault(day, {"usd": 0.0, "sessions": 0})
        entry["usd"] = round(entry["usd"] + usd, PLACES)
        entry["sessions"] += 1 if first else 0
    current["usd"] = round(current.get("usd", 0.0) + sum(usd for _, usd, _ in days), PLACES)
    current["days"] = {day: kept[day] for day in sorted(kept)[-DAYS_KEPT:]}
