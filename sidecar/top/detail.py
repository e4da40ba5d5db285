"""One session, opened (full screen, or beside the list): its state and why, the last thing it
said, its timeline, its follow-ups and their logs' last lines (read by live/timeline.py). Pure
text out, each line with its style: the widget shows it as text, never as markup.
"""

from __future__ import annotations

from sidecar.base import words
from sidecar.base.escapes import escaped
from sidecar.base.outcome import Outcome
from sidecar.live.timeline import Gathered
from sidecar.top import view
from sidecar.views import cost
from sidecar.views.activity import WORDS
from sidecar.views.sessions import SessionRow
from sidecar.views.status_text import when

Line = tuple[str, str]  # (text, style; "" for none)


def render(row: SessionRow, gathered: Gathered | None, now: float) -> list[str]:
    """The whole detail, as lines (reads nothing: the times move on each second)."""
    return [text for text, _ in styled(row, gathered, now)]


def styled(row: SessionRow, gathered: Gathered | None, now: float) -> list[Line]:
    """The detail's lines with their styles: the state in its colour, what failed in red.
    `gathered` None: the session is another machine's, whose files stay there."""
    act = row.activity
    where = f" on {row.machine}" if row.machine else ""
    lines: list[Line] = [
        (f"{row.host} session {row.session_id}{where}  (sidecar id {row.harness_id})", "bold"),
        ("workspace  " + words.path(row.root) + (f"   cwd {words.path(row.cwd, row.root)}"
                                                 if row.cwd else ""), ""),
        (f"state      {WORDS[act.state]}: {view.why(row, now)}", view.STATE_STYLE[act.state]),
        (f"started    {when(row.started_at, now)}    last activity "
         f"{words.ago(row.updated_at, now)}    tokens {view.tokens(row.tokens)}", ""),
        (f"cost       {cost.told(row.cost)}", ""),
    ]
    if row.ended_at is not None:
        lines.append((f"ended      {when(row.ended_at, now)}: "
                      f"{words.end_reason(row.reason, mid_turn='mid-turn' in act.why)}", ""))
    said = [message for _, _, message in (gathered.events if gathered else []) if message]
    if said:
        lines.append((f"last said  {words.clip(said[-1], 200)}", ""))
    lines += [("", ""), ("FOLLOW-UPS", "bold")]
    if not row.follow_ups:
        lines.append(("  (none)", ""))
    for index, item in enumerate(row.follow_ups):
        failed = Outcome.parse(item.state).failed if item.state not in view.WAITING_FOLLOW_UP \
            and item.state != "running" else False
        lines.append((f"  {view.follow_up(item, now)}", view.ERROR_STYLE if failed else ""))
        logged = gathered.logs[index] if gathered and index < len(gathered.logs) else []
        lines += [(f"    | {text}", "red" if failed else "dim") for text in logged]
    lines += [("", ""), ("TIMELINE", "bold")]
    if gathered is None:
        lines.append((f"  its timeline and logs stay on {row.machine}", "dim"))
    else:
        lines += [(f"  {when(at, now):<22} {event:<16} {words.clip(message, 60)}", "")
                  for at, event, message in reversed(gathered.events)] or [
            ("  (no events recorded)", "dim")]
    return [(escaped(text), style) for text, style in lines]
