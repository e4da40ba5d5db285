"""One session, opened: its state and why, its timeline, its follow-ups and their logs' last
lines (read by views/timeline.py). Pure text out: the widget shows it as text, never as markup.
"""

from __future__ import annotations

from sidecar.base import words
from sidecar.base.escapes import escaped
from sidecar.top import view
from sidecar.views import cost
from sidecar.views.activity import WORDS
from sidecar.views.sessions import SessionRow
from sidecar.views.status_text import when
from sidecar.views.timeline import Gathered


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
