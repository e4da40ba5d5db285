"""A workspace's token totals: `runtime/usage.json`, the sum of every session's figures.

Each session's record holds its own figures (`metadata.sidecar.tokens`, read from its
transcript at each completion: the transcript's totals cover the whole conversation, resumes
included). This file adds, at each completion, what the session's figures grew by, so
`status` shows a workspace's totals without reading every record. It is written under the
sessions' lock, after the records are saved: a crash in between leaves a completion
uncounted here (the record keeps it), never counted twice.
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


class Growth(NamedTuple):
    """What one completion adds: the figures' growth, and whether the session is new here."""

    tokens: dict[str, int]
    first: bool


def grown(old: dict[str, int] | None, new: dict[str, int]) -> dict[str, int]:
    """What a session's figures grew by since its last completion."""
    before = old or {}
    return {k: max(0, new.get(k, 0) - before.get(k, 0)) for k in FIELDS}


def totals(ws: Workspace, records: RedisRecords | None = None) -> dict[str, int] | None:
    """The workspace's totals and the sessions counted; None before any was counted, or if the
    file (or in Redis mode, the record) cannot be read (the next completion starts it again)."""
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
    return {k: v for k in (*FIELDS, "sessions")
            if isinstance(v := data.get(k, 0), int) and not isinstance(v, bool)}


def add(ws: Workspace, growth: list[Growth], durable: bool, records: RedisRecords | None = None) -> None:
    """Add these completions' growth; the caller holds the sessions' lock. In Redis mode the
    record is changed (sent with the caller's block), and the file follows it."""
    if not growth:
        return
    current = totals(ws, records) or {}
    for grew in growth:
        for key in FIELDS:
            current[key] = current.get(key, 0) + grew.tokens.get(key, 0)
    current["sessions"] = current.get("sessions", 0) + sum(1 for g in growth if g.first)
    data = jsonfile.dumps(current)
    if records is None:
        jsonfile.write_bytes_atomic(ws.runtime / USAGE, data, durable=durable)
        return
    records.put(USAGE, data)
    records.mirror(lambda: records.write_copy(USAGE, data))
