"""What `top` shows of the rows, as text: pure, so it is tested and measured without a terminal.

A row's state reads as a person would say it (`waiting for you`, `hit a usage limit`), with
the reason beside it (views/activity.py's words), its last activity and its follow-ups' countdowns
relative to `now`. `Table` keeps the rows filtered and ordered: it sorts again only when the
feed's rows changed, so the once-a-second redraw of the times costs only the visible lines.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from sidecar.base import words
from sidecar.base.escapes import escaped
from sidecar.base.outcome import Outcome
from sidecar.followups.resets import parse_reset
from sidecar.views import cost
from sidecar.views.activity import WORDS, State
from sidecar.views.sessions import FollowUp, SessionRow

ERROR_STYLE = "bold red"  # a failed follow-up, a usage limit, a file that cannot be read
STATE_STYLE = {State.WORKING: "green", State.WAITING: "bold yellow", State.IDLE: "cyan",
               State.LIMITED: ERROR_STYLE, State.ENDED: "dim"}
ORDER = {State.WAITING: 0, State.LIMITED: 1, State.WORKING: 2, State.IDLE: 3, State.ENDED: 4}
UNREACHABLE = "unreachable"  # the state shown of a row whose machine stopped publishing (fleet)
ACTIVE = frozenset({State.WORKING, State.WAITING, State.IDLE, State.LIMITED})
WAITING_FOLLOW_UP = frozenset({"queued", "postponed"})

# (title, width): the last column takes what is left, and wants at least its width, so that a
# follow-up's outcome (`post-task ok 1 h 28 min ago`) reads whole
COLUMNS = (("MACHINE", 12), ("HOST", 11), ("WORKSPACE", 14), ("SESSION", 12), ("STATE", 15), ("WHY", 34),
           ("LAST", 11), ("TOKENS", 7), ("COST", 7), ("FOLLOW-UPS", 28))
# In a narrower terminal these give way, in turn, down to the width given (0: left out); the
# reason is shown whole in the opened session
GIVE_WAY = (("WHY", 12), ("TOKENS", 0), ("WORKSPACE", 10), ("SESSION", 8), ("COST", 0),
            ("MACHINE", 8))
LOCAL = frozenset({"MACHINE"})  # left out while every row is this machine's
BESIDE = frozenset({"WHY", "TOKENS"})  # left out while the detail beside says them
PREFIX = frozenset({"SESSION"})  # cut without `…`: any start of an id names it
TITLES = tuple(title for title, _ in COLUMNS)


def why(row: SessionRow, now: float) -> str:
    """The reason for the row's state, with what the host said."""
    act = row.activity
    if act.state == State.WORKING:
        tool = f", last tool {act.detail}" if act.detail else ""
        return f"since {words.ago(act.since, now)}{tool}"
    if act.state == State.LIMITED:
        resets = parse_reset(act.detail, act.since or now) if act.detail else None
        if resets is None:
            return act.why
        return f"resets at {words.local_time(resets, now)} ({words.ago(resets, now)})"
    if act.state == State.WAITING:
        return act.why + (f": {act.detail}" if act.detail else "")
    if act.state == State.ENDED and act.why.startswith("its own end") and row.reason:
        return f"{act.why}: {words.end_reason(row.reason)}"
    return act.why


def tokens(figures: dict[str, int] | None) -> str:
    if not figures:
        return "-"
    total = sum(v for v in figures.values() if isinstance(v, int))
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if total >= size:
            return f"{total / size:.1f}{unit}"
    return str(total)


def follow_up(item: FollowUp, now: float) -> str:
    """One follow-up: `post-task due in 12 s`, `post-task running`, `post-task ok 3 min ago`."""
    if item.state in WAITING_FOLLOW_UP:
        word = "postponed, " if item.state == "postponed" else ""
        return f"{item.hook_id} {word}{words.due(item.at, now)}"
    if item.state == "running":
        return f"{item.hook_id} running"
    return f"{item.hook_id} {item.state} {words.ago(item.at, now)}"


def follow_ups(row: SessionRow, now: float) -> str:
    """What is queued or running, else the last outcome."""
    if not row.follow_ups:
        return "-"
    live = [f for f in row.follow_ups if f.state in WAITING_FOLLOW_UP or f.state == "running"]
    return ", ".join(follow_up(f, now) for f in (live or row.follow_ups[:1]))


def painted(row: SessionRow) -> list[tuple[str, str]]:
    """The columns shown in colour, (title, style): the state always, and the follow-ups in red
    where the one shown failed. The selected row keeps them (it is drawn reversed)."""
    spans = [("STATE", STATE_STYLE[row.activity.state] if row.reachable else "dim")]
    live = any(f.state in WAITING_FOLLOW_UP or f.state == "running" for f in row.follow_ups)
    if row.follow_ups and not live and Outcome.parse(row.follow_ups[0].state).failed:
        spans.append(("FOLLOW-UPS", ERROR_STYLE))
    return spans


def state_words(row: SessionRow) -> str:
    """The state in words; a row whose machine stopped publishing is not shown as live."""
    return WORDS[row.activity.state] if row.reachable else UNREACHABLE


def why_shown(row: SessionRow, now: float) -> str:
    """`why`, or, for a row whose machine stopped publishing, the state it was last heard in."""
    return why(row, now) if row.reachable else f"as last heard: {WORDS[row.activity.state]}"


def cells(row: SessionRow, now: float) -> list[str]:
    return [escaped(cell) for cell in (
        row.machine, row.host, row.root.name, words.short_id(row.session_id),
        state_words(row), why_shown(row, now), words.ago(row.updated_at, now),
        tokens(row.tokens), cost.shown(row.cost), follow_ups(row, now))]


def matches(row: SessionRow, text: str) -> bool:
    """The filter: any of machine, host, workspace, either id or the state contains the text."""
    text = text.lower()
    return any(text in field.lower() for field in (
        row.machine, row.host, str(row.root), row.session_id, row.harness_id, row.activity.state,
        WORDS[row.activity.state]))


def sort_key(row: SessionRow) -> tuple[int, float, str]:
    """Who needs you first, then what runs, newest activity first in each."""
    return ORDER[row.activity.state], -(row.updated_at or 0.0), row.harness_id


@dataclass(frozen=True)
class Counts:
    working: int
    waiting: int
    queued: int
    shown: int
    total: int
    limited: int = 0

    def footer(self) -> str:
        sessions = _counted(self.total, "session")
        shown = sessions if self.shown == self.total else f"{self.shown} of {sessions}"
        return (f"{self.working} working · {self.waiting} waiting · "
                f"{_counted(self.queued, 'follow-up')} queued · {shown}")

    def summary(self) -> str:
        """The header's counts: `2 working · 1 waiting · 1 limited · 3 follow-ups queued ·
        40 sessions`."""
        sessions = _counted(self.total, "session")
        shown = sessions if self.shown == self.total else f"{self.shown} of {sessions}"
        return (f"{self.working} working · {self.waiting} waiting · {self.limited} limited · "
                f"{_counted(self.queued, 'follow-up')} queued · {shown}")


def _counted(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def counts(rows: Iterable[SessionRow], shown: int) -> Counts:
    working = waiting = limited = queued = total = 0
    for row in rows:
        total += 1
        working += row.activity.state == State.WORKING
        waiting += row.activity.state == State.WAITING
        limited += row.activity.state == State.LIMITED
        queued += sum(1 for f in row.follow_ups if f.state in WAITING_FOLLOW_UP)
    return Counts(working, waiting, queued, shown, total, limited)


def next_up(row: SessionRow) -> FollowUp | None:
    """The row's follow-up that fires first (queued or postponed); None if none waits."""
    waiting = [f for f in row.follow_ups if f.state in WAITING_FOLLOW_UP]
    return min(waiting, key=lambda f: f.at or float("-inf")) if waiting else None


def next_due(item: FollowUp, row: SessionRow, now: float) -> str:
    """The header's next follow-up: `next: post-task for claude-code 3f2a9c1e in 2 min`."""
    when = words.due(item.at, now).removeprefix("due ")
    return f"next: {item.hook_id} for {row.host} {words.short_id(row.session_id, 8)} {when}"


@functools.lru_cache(maxsize=32)
def widths(width: int, hidden: frozenset[str] = LOCAL) -> tuple[int, ...]:
    """Each column's width in a line of `width`: the last takes what is left, once the others
    have given way (GIVE_WAY) as far as it needs to reach its own width; `hidden` ones are 0."""
    sizes = [0 if title in hidden else size for title, size in COLUMNS]

    def left() -> int:
        return width - sum(size + 1 for size in sizes[:-1] if size)

    for title, least in GIVE_WAY:
        short = sizes[-1] - left()
        if short <= 0:
            break
        at = TITLES.index(title)
        if sizes[at]:
            sizes[at] = 0 if least == 0 else max(least, sizes[at] - short)
    sizes[-1] = max(0, left())
    return tuple(sizes)


def place(title: str, width: int, hidden: frozenset[str] = LOCAL) -> tuple[int, int]:
    """Where the column starts and ends in a line of `width`."""
    sizes = widths(width, hidden)
    at = TITLES.index(title)
    start = sum(size + 1 for size in sizes[:at] if size)
    return start, start + sizes[at]


def fit(values: list[str], width: int, hidden: frozenset[str] = LOCAL) -> str:
    """Cells padded or clipped to the columns; a column given way to nothing is left out."""
    parts = []
    for title, size, value in zip(TITLES, widths(width, hidden), values, strict=True):
        if size:
            cut = value[:size] if title in PREFIX else words.clip(value, size)
            parts.append(cut.ljust(size))
    return " ".join(parts)[:width]


def header(width: int, hidden: frozenset[str] = LOCAL) -> str:
    return fit(list(TITLES), width, hidden)


KEYS = (("/", "filter"), ("a", "active only"), ("s", "sort"), ("g", "group"),
        ("space", "fold"), ("d", "detail"), ("enter", "open"), ("c", "cancel"),
        ("f", "fire/retry"), ("q", "quit"))
# when the footer is narrow, in turn; `q quit` stays
DROPPED_FIRST = ("space", "d", "a", "g", "s", "f", "c", "/", "enter")


def key_help(room: int) -> str:
    """The keys, as many as fit in `room` columns (the footer stays one line)."""
    keys = list(KEYS)
    for dropped in DROPPED_FIRST:
        if len(_keys(keys)) <= room:
            break
        keys = [key for key in keys if key[0] != dropped]
    return _keys(keys)


def _keys(keys: list[tuple[str, str]]) -> str:
    return " · ".join(f"{key} {word}" for key, word in keys)
