"""One session's files as `top` and the web view open it: the tail of its timeline and each
follow-up's last log lines.

The timeline is the tail of the session's `trace.jsonl` (the last TRACE_BYTES, however long
the trace), read as the firing logs are (logtail.read_tail: no link followed, no hard link,
FIFO or device read), so a planted file or a huge trace can neither leak another file nor
stall the view.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from sidecar.base.timeutil import parse_ts
from sidecar.followups.run import logtail
from sidecar.layout import Workspace
from sidecar.views.sessions import SessionRow

TRACE_BYTES = 64 * 1024
TIMELINE_LINES = 40
LOG_LINES = 5


def timeline(ws: Workspace, harness_id: str) -> list[tuple[float | None, str, str]]:
    """The last events of the session's trace: (when, event, message), oldest first."""
    read = logtail.read_tail(ws.session_dir(harness_id) / "trace.jsonl", TRACE_BYTES)
    if read is None:
        return []
    data, whole = read
    lines = data.split(b"\n")[0 if whole else 1:]  # a cut first line is left out
    found: list[tuple[float | None, str, str]] = []
    for line in lines[-TIMELINE_LINES - 1:]:
        try:
            item = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # blank, or a line being written
        if isinstance(item, dict):
            found.append((parse_ts(item.get("createdAt")), str(item.get("event", "")),
                          str(item.get("message", ""))))
    return found[-TIMELINE_LINES:]


@dataclass(frozen=True)
class Gathered:
    """What the detail reads from files: the timeline and each follow-up's log lines."""

    events: list[tuple[float | None, str, str]]
    logs: list[list[str]]  # one per follow-up of the row, in its order


def gather(ws: Workspace, row: SessionRow) -> Gathered:
    return Gathered(timeline(ws, row.harness_id),
                    [logtail.last_lines(ws, f.hook_id, f.log, LOG_LINES) for f in row.follow_ups])
