"""Time: one clock for the whole daemon, and the text forms sidecar reads and writes."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime


def now() -> float:
    """Seconds since the epoch; everything asks here, so freezegun drives every timer."""
    return time.time()


def iso(ts: float) -> str:
    """RFC 3339 in UTC with milliseconds, as dotcontext writes it: 2026-11-29T07:25:57.336Z."""
    moment = datetime.fromtimestamp(ts, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_ts(value: object) -> float | None:
    """Epoch seconds from RFC 3339 text or a number; None when it is neither, or when it is a
    moment sidecar could not write back (beyond year 9999 in UTC, before year 1)."""
    seconds = _parse_ts(value)
    if seconds is None:
        return None
    try:
        iso(seconds)
    except (ValueError, OverflowError, OSError):
        return None
    return seconds


def _parse_ts(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
        return number if number == number and abs(number) < 1e11 else None
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        try:
            return moment.timestamp()
        except (ValueError, OverflowError, OSError):
            return None
    return None


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: object) -> float:
    """Seconds from a number or text like `90`, `15m`, `24h`, `30d`; ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and value.strip():
        text = value.strip().lower()
        unit = _UNITS.get(text[-1])
        try:
            seconds = float(text[:-1]) * unit if unit else float(text)
        except ValueError:
            raise ValueError(f"not a duration: {value!r} (try 90, 15m, 24h or 30d)") from None
    else:
        raise ValueError(f"not a duration: {value!r} (try 90, 15m, 24h or 30d)")
    if not math.isfinite(seconds):
        raise ValueError(f"not a finite duration: {value!r} (try 90, 15m, 24h or 30d)")
    if seconds < 0:
        raise ValueError(f"a duration cannot be negative: {value!r}")
    return seconds


def human_age(seconds: float) -> str:
    """A short age for tables: 4s, 12m, 3h, 2d."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"
