"""How the commands say things to people: colour on a terminal only, times local and relative,
durations as they are typed, paths short, end reasons in words.

Nothing here reads sidecar's files; every function takes the values and returns text, so the
same words appear in `status`, `sessions`, `hooks`, `doctor` and `top`.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path
from typing import TextIO

from sidecar.vocabulary import DEFAULT_END_REASON, HOST_EXITED, STALE

# -- colour ---------------------------------------------------------------------------------

_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34",
          "magenta": "35", "cyan": "36"}


def colour_wanted(stream: TextIO | None = None) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    stream = stream if stream is not None else sys.stdout
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


class Style:
    """Paints text when colour is wanted, else gives it back as it is."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles or not text:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"


def style_for(stream: TextIO | None = None) -> Style:
    return Style(colour_wanted(stream))


# -- time -----------------------------------------------------------------------------------


def local_time(ts: float, now: float) -> str:
    """A moment in the local time zone: the clock time today, the date otherwise."""
    moment = datetime.fromtimestamp(ts).astimezone()
    today = datetime.fromtimestamp(now).astimezone().date()
    if moment.date() == today:
        return moment.strftime("%H:%M:%S")
    if moment.year == today.year:
        return moment.strftime("%b %d %H:%M")
    return moment.strftime("%Y-%m-%d %H:%M")


def span(seconds: float) -> str:
    """A length of time as people say it: 12 s, 3 min, 2 h 5 min, 4 days."""
    seconds = abs(seconds)
    if seconds < 60:
        return f"{int(seconds)} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 86400:
        hours, minutes = divmod(int(seconds // 60), 60)
        return f"{hours} h" + (f" {minutes} min" if minutes and hours < 10 else "")
    days = int(seconds // 86400)
    return f"{days} day{'s' if days != 1 else ''}"


def ago(ts: float | None, now: float) -> str:
    """`3 min ago`, `in 12 s` for a moment still to come, `-` when it is not known."""
    if ts is None:
        return "-"
    if ts >= now + 1:  # under a second either way is now, never "in 0 s"
        return f"in {span(ts - now)}"
    if now - ts < 1:
        return "just now"
    return f"{span(now - ts)} ago"


def is_due(ts: float | None, now: float) -> bool:
    """Whether a queued follow-up due at `ts` is due now: under a second to go counts (as in
    `ago`, never "in 0 s")."""
    return ts is None or ts < now + 1


def due(ts: float | None, now: float) -> str:
    """When a queued follow-up fires: `due in 12 s`, or `due now`."""
    if ts is None or is_due(ts, now):
        return "due now"
    return f"due in {span(ts - now)}"


def duration(seconds: float) -> str:
    """A delay as a user would type it back: 0s, 45s, 5m, 1h30m, 2h, 1d."""
    whole = int(round(seconds))
    if whole == 0:
        return "0s"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, whole = divmod(whole, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


# -- paths ----------------------------------------------------------------------------------


def path(value: str | Path | None, root: Path | None = None) -> str:
    """A path relative to the workspace when it lies inside it, else with `~` for home."""
    if value is None or value == "":
        return "-"
    where = Path(value)
    if root is not None and where.is_absolute():
        try:
            return str(where.relative_to(root)) or "."
        except ValueError:
            pass
    home = Path.home()
    try:
        return "~/" + str(where.relative_to(home)) if where != home else "~"
    except ValueError:
        return str(where)


# -- why a session ended --------------------------------------------------------------------

# The end reasons hosts send (Claude Code's SessionEnd `reason`, Qwen Code's, opencode's...),
# and sidecar's own, as people would say them.
_REASONS = {
    "prompt_input_exit": "you quit",
    "exit": "you quit",
    "quit": "you quit",
    "clear": "you cleared it (/clear)",
    "logout": "you logged out",
    "bypass_permissions_disabled": "bypass-permissions mode was turned off",
    "resume": "another session took it over (/resume)",
    "other": "the host ended it",
    DEFAULT_END_REASON: "the host ended it",
    HOST_EXITED: "the host process exited",
}


def end_reason(reason: str | None, *, mid_turn: bool = False,
               stale_after: float | None = None) -> str:
    """How a session ended, in words (`mid_turn`: its last turn never ended)."""
    if reason == STALE:
        return "no event for " + (span(stale_after) if stale_after else "too long") + ": swept"
    words = _REASONS.get((reason or "").lower(), (reason or "ended").replace("_", " "))
    return words + (", mid-turn" if mid_turn else "")


def end_reason_brief(reason: str | None, *, mid_turn: bool = False,
                     stale_after: float | None = None) -> str:
    """`end_reason` as a table cell has room for: `host exited mid-turn`, `you quit`."""
    if reason == STALE:
        return "swept: stale" + (f" {span(stale_after)}" if stale_after else "")
    words = end_reason(reason).removeprefix("the ").replace("host process", "host")
    return words + (" mid-turn" if mid_turn else "")


# -- tables ---------------------------------------------------------------------------------

WIDTH = 100  # every table fits this many columns


def clip(text: str, width: int) -> str:
    """`text` cut to `width` columns, with … where it was cut."""
    return text if len(text) <= width else text[:max(0, width - 1)] + "…"


def short_id(session_id: str, width: int = 12) -> str:
    """The start of an id: enough to name it (any unique prefix is accepted back)."""
    return session_id[:width]
