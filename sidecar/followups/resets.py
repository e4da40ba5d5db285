"""When a usage limit resets: read from the host's message, else a back-off.

The hosts print the reset in several forms; each is read here into an absolute time:

- an epoch after `|`: `Claude AI usage limit reached|1767196800` (seconds or milliseconds)
- an ISO time: `resets at 2026-12-01T15:00:00Z`
- a clock time with a zone: `resets 3pm (Europe/Berlin)`, `resets 3:30 pm (America/New_York)`
- a clock time in the machine's zone: `try again at 3:05 PM`, `resets at 15:05`
- a duration: `in 2 hours 5 minutes`, `in 45 min`, `in 30s`, `retry after 120 seconds`

A clock time means its next occurrence; one within the current minute (a reset a few seconds
ahead, shown rounded down to the minute) means now. A message with none of these gives None, and the
caller backs off: 15 minutes, doubling, at most 5 hours, at most 8 tries.
"""

from __future__ import annotations

import datetime as dt
import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

BACKOFF_FIRST = 15 * 60.0
BACKOFF_CAP = 5 * 3600.0
MAX_TRIES = 8
RESET_MARGIN = 60.0  # fire this long after a stated reset: clocks differ, limits lag a little

_EPOCH = re.compile(r"\|\s*(\d{10}|\d{13})\b")
_ISO = re.compile(r"\b(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)")
_CLOCK = re.compile(
    r"\b(?:resets?|reset at|try again at|again at|available at|until)\s+(?:at\s+)?"
    r"(\d{1,2})(?::(\d{2}))?\s*([ap]\.?m\.?)?(?:\s*\(([A-Za-z_]+(?:/[A-Za-z_+-]+)*)\))?",
    re.IGNORECASE)
_UNITS = {"h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
          "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
          "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
          "d": 86400.0, "day": 86400.0, "days": 86400.0}
_PART = r"(\d+(?:\.\d+)?)\s*(hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s|days?|d)\b"
_DURATION = re.compile(r"\b(?:in|after)\s+((?:" + _PART + r"[\s,and]*)+)", re.IGNORECASE)


def parse_reset(text: str, now: float, local: dt.tzinfo | None = None) -> float | None:
    """The absolute time (epoch seconds) the message says the limit resets; None if it
    gives none. `local` is the zone of a clock time without one (default: the machine's)."""
    for parse in (_epoch, _iso, _duration):
        found = parse(text, now)
        if found is not None:
            return found
    return _clock(text, now, local)


def _epoch(text: str, now: float) -> float | None:
    match = _EPOCH.search(text)
    if match is None:
        return None
    value = float(match.group(1))
    return value / 1000 if value > 1e12 else value


def _iso(text: str, now: float) -> float | None:
    match = _ISO.search(text)
    if match is None:
        return None
    try:
        stamp = dt.datetime.fromisoformat(match.group(1).replace("Z", "+00:00"))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.astimezone()  # the machine's zone
    return stamp.timestamp()


def _duration(text: str, now: float) -> float | None:
    match = _DURATION.search(text)
    if match is None:
        return None
    total = sum(float(amount) * _UNITS[unit.lower()]
                for amount, unit in re.findall(_PART, match.group(1), re.IGNORECASE))
    return now + total if total > 0 else None


def _clock(text: str, now: float, local: dt.tzinfo | None) -> float | None:
    match = _CLOCK.search(text)
    if match is None:
        return None
    hour_text, minute_text, meridiem, zone_name = match.groups()
    hour, minute = int(hour_text), int(minute_text or 0)
    if meridiem:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if meridiem.lower().startswith("p") else 0)
    elif minute_text is None:
        return None  # a bare number ("resets 3") is not a time
    if hour > 23 or minute > 59:
        return None
    zone: dt.tzinfo | None = local
    if zone_name:
        try:
            zone = ZoneInfo(zone_name)
        except (ZoneInfoNotFoundError, ValueError):
            return None
    current = dt.datetime.fromtimestamp(now, zone) if zone else dt.datetime.fromtimestamp(now).astimezone()
    at = current.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if at.timestamp() <= now - 60:
        at += dt.timedelta(days=1)  # a time of day that has passed: its next occurrence
    return max(at.timestamp(), now)  # the minute shown is this one: the reset is due now


def backoff(tries: int, scale: float = 1.0) -> float:
    """Seconds to wait before try number `tries + 1` when no reset time is known."""
    return float(min(BACKOFF_FIRST * 2 ** tries, BACKOFF_CAP) * scale)


def next_try(message: str, now: float, tries: int, scale: float = 1.0,
             local: dt.tzinfo | None = None) -> float | None:
    """When to resume after the `tries`-th failed attempt; None once MAX_TRIES are used."""
    if tries >= MAX_TRIES:
        return None
    reset = parse_reset(message, now, local)
    return reset + RESET_MARGIN * scale if reset is not None and reset > now else now + backoff(tries, scale)
