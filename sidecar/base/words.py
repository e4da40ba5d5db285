"""How the commands say things to people: colour on a terminal only, times local and relative,
durations as they are typed, paths short, end reasons in words.

Nothing here reads sidecar's files; every function takes the values and returns text, so the
same words appear in `status`, `sessions`, `hooks`, `doctor` and `top`. It imports neither
datetime nor pathlib: `status` answers at the cost of a hook (views/status.py) through it.
"""

from __future__ import annotations

import os
import sys
import time

from sidecar.base.endreasons import DEFAULT_END_REASON, HOST_EXITED, STALE

TYPE_CHECKING = False  # typing itself is not imported: it costs a fast command (status) 2 ms
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import TextIO

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
    moment, today = time.localtime(_second(ts)), time.localtime(_second(now))
    if moment[:3] == today[:3]:
        return time.strftime("%H:%M:%S", moment)
    if moment.tm_year == today.tm_year:
        return time.strftime("%b %d %H:%M", moment)
    return time.strftime("%Y-%m-%d %H:%M", moment)


def _second(ts: float) -> int:
    """The second `ts` falls in as datetime.fromtimestamp places it: rounded to the
    microsecond first, half to even (time.localtime would cut the fraction off instead)."""
    whole = int(ts)
    micro = round((ts - whole) * 1e6)
    return whole + (micro >= 1_000_000) - (micro < 0)


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


def ago(ts: float | None, now: float, length: Callable[[float], str] = span) -> str:
    """`3 min ago`, `in 12 s` for a moment still to come, `-` when it is not known; `length`
    says the time between (a table's shorter `human_age`: `2h ago`, `in 3m`)."""
    if ts is None:
        return "-"
    if ts >= now + 1:  # under a second either way is now, never "in 0 s"
        return f"in {length(ts - now)}"
    return "just now" if now - ts < 1 else f"{length(now - ts)} ago"


def is_due(ts: float | None, now: float) -> bool:
    """Whether a queued follow-up due at `ts` is due now: under a second to go counts (as in
    `ago`, never "in 0 s")."""
    return ts is None or ts < now + 1


def due(ts: float | None, now: float) -> str:
    """When a queued follow-up fires: `due in 12 s`, or `due now`."""
    return "due now" if ts is None or is_due(ts, now) else f"due in {span(ts - now)}"


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


def path(value: str | Path | None, root: str | Path | None = None) -> str:
    """A path relative to the workspace when it lies inside it, else with `~` for home (each
    read as pathlib reads it: repeated slashes and `.` parts dropped)."""
    if value is None or value == "":
        return "-"
    where = _parts(os.fspath(value))
    if root is not None and where[0]:  # absolute
        inside = _below(where, _parts(os.fspath(root)))
        if inside is not None:
            return inside
    home = _parts(home_folder())
    if where == home:
        return "~"
    inside = _below(where, home)
    return _text(where) if inside is None else "~/" + inside


def _parts(text: str) -> tuple[str, ...]:
    """A path as pathlib splits it on POSIX: its anchor ("", "/" or "//") and its names."""
    anchor = "//" if text.startswith("//") and not text.startswith("///") else \
        "/" if text.startswith("/") else ""
    return (anchor, *(name for name in text.split("/") if name not in ("", ".")))


def _text(parts: tuple[str, ...]) -> str:
    return parts[0] + "/".join(parts[1:]) or "."


def _below(where: tuple[str, ...], folder: tuple[str, ...]) -> str | None:
    """`where` relative to `folder` (as Path.relative_to), None where it is not inside it."""
    if where[: len(folder)] != folder or (folder == ("",) and where[0]):
        return None
    return "/".join(where[len(folder):]) or "."


def home_folder() -> str:
    """os.path.expanduser("~"), which Path.home() is: $HOME, else the password database's."""
    from sidecar.base.posixos import home

    return home()


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


def end_reason(reason: str | None, *, mid_turn: bool = False, stale_after: float | None = None) -> str:
    """How a session ended, in words (`mid_turn`: its last turn never ended)."""
    if reason == STALE:
        return "no event for " + (span(stale_after) if stale_after else "too long") + ": swept"
    words = _REASONS.get((reason or "").lower(), (reason or "ended").replace("_", " "))
    return words + (", mid-turn" if mid_turn else "")


def end_reason_brief(reason: str | None, *, mid_turn: bool = False, stale_after: float | None = None) -> str:
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
