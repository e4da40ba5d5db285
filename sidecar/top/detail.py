"""One session, opened: its state and why, its timeline, its follow-ups and their logs' last lines.

The timeline is the tail of the session's `trace.jsonl` (the last TRACE_BYTES, however long
the trace), read as the firing logs are (logtail.read_tail: no link followed, no hard link,
FIFO or device read), so a planted file or a huge trace can neither leak another file nor
stall the view. Pure text out: the widget shows it as text, never as markup.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from sidecar.base import words
from sidecar.base.escapes import escaped
from sidecar.base.timeutil import parse_ts
from sidecar.followups.run import logtail
from sidecar.layout import Workspace
from sidecar.top import view
from sidecar.views import cost
from sidecar.views.activity import WORDS
from sidecar.views.sessions import SessionRow
from sidecar.views.status_text import when

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


def render(row: SessionRow, gathered: Gathered, now: float) -> list[str]:
    """The whole detail, as lines (reads nothing: the times move on each second)."""
    act = row.activity
    lines = [
        f"{row.host} session {row.session_id}  (sidecar id {row.harness_id})",
        f"workspace  {words.path(row.root)}" + (f"   cwd {words.path(row.cwd, row.root)}"
                                                   if row.cwd else ""),
        f"state      {WORDS[act.state]}: {view.why(row, now)}",
        f"started    {when(row.started_at, now)}    last activity "
        f"{words.ago(row.updated_at, now)}    tokens {view.tokens(row.tokens)}",
        f"cost       {cost.told(row.cost)}",
    ]
    if row.ended_at is not None:
        lines.append(f"ended      {when(row.ended_at, now)}: "
                     f"{words.end_reason(row.reason, mid_turn='mid-turn' in act.why)}")
    lines += ["", "TIMELINE"]
    lines += [f"  {when(at, now):<22} {event:<16} {words.clip(message, 60)}"
              for at, event, message in gathered.events] or ["  (no events recorded)"]
    lines += ["", "FOLLOW-UPS"]
    if not row.follow_ups:
        lines.append("  (none)")
    for index, item in enumerate(row.follow_ups):
        lines.append(f"  {view.follow_up(item, now)}")
        logged = gathered.logs[index] if index < len(gathered.logs) else []
        lines += [f"    | {text}" for text in logged]
    return [escaped(line) for line in lines]
