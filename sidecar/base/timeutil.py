"""Time: one clock for the whole daemon, and the text forms sidecar reads and writes.

sidecar's own form (2026-11-29T07:25:57.336Z) is read without the datetime module, which
costs a command started for one short answer (`status`) more than its reading; every other
form goes through datetime, imported then.
"""

from __future__ import annotations

import time


def now() -> float:
    """Seconds since the epoch; everything asks here, so freezegun drives every timer. In Redis
    mode, Redis's (`set_offset`); this machine's own otherwise."""
    anchor = _anchor
    return time.time() if anchor is None else anchor[0] + (time.monotonic() - anchor[1])


# In a daemon that coordinates through Redis, where every machine's due times, ages and
# `completedAt` must come from one clock, Redis's: its time at the last reading
# (coordination/redis/clock.py measures it) and the monotonic clock then. Carried forward by
# the monotonic clock, a step of this machine's wall clock never reaches `now()`; None: this
# machine's wall clock.
_anchor: tuple[float, float] | None = None


def set_offset(seconds: float | None) -> None:
    """Keep to a clock `seconds` ahead of this machine's wall clock as it reads now, carried
    forward by the monotonic clock; None: to this machine's wall clock again.

    A reading that moves `now()` further than the daemon's step detector tolerates
    (daemon/clocksteps.py, fed with `now()`) is a step to it: timers and waiting due times
    keep the time they had left. Only Redis's own clock being stepped (or this machine
    sleeping, which the monotonic clock does not count) moves it so; each reading's small
    correction stays under the tolerance."""
    global _anchor
    _anchor = None if seconds is None else (time.time() + seconds, time.monotonic())


def from_local(ts: float) -> float:
    """A time read from this machine's wall clock (a file's mtime) on `now()`'s clock: a file's
    age is judged by the clock that stamped it."""
    return ts + offset()


def offset() -> float:
    """How far `now()` is ahead of this machine's wall clock."""
    return 0.0 if _anchor is None else now() - time.time()


def iso(ts: float) -> str:
    """RFC 3339 in UTC with milliseconds, as dotcontext writes it: 2026-11-29T07:25:57.336Z.

    Every trace line is stamped so: its date comes from time.gmtime, after the rounding to the
    microsecond that datetime.fromtimestamp does (half to even), the same text to the digit;
    years outside 1000 to 9999 go through datetime (which refuses a moment it cannot hold)."""
    import math  # (here: the status line, which only reads times, never loads this library)

    fraction, whole = math.modf(ts)
    micro = round(fraction * 1e6)
    if micro >= 1_000_000:
        whole, micro = whole + 1, micro - 1_000_000
    elif micro < 0:
        whole, micro = whole - 1, micro + 1_000_000
    if _FOUR_DIGIT_YEARS[0] <= whole < _FOUR_DIGIT_YEARS[1]:
        t = time.gmtime(whole)
        millis = micro // 1000
        text = (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:"
                f"{t.tm_sec:02d}.{millis:03d}Z")
        if len(_PARSED) < _PARSED_KEPT:  # what parse_ts reads it as, read again at once
            _PARSED[text] = (int(whole) * 10**6 + millis * 1000) / 10**6
        return text
    from datetime import UTC, datetime

    moment = datetime.fromtimestamp(ts, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


_FOUR_DIGIT_YEARS = (-30610224000.0, 253402300800.0)  # 1000-01-01 to 10000-01-01, in UTC


def parse_ts(value: object) -> float | None:
    """Epoch seconds from RFC 3339 text or a number; None when it is neither, or when it is a
    moment sidecar could not write back (beyond year 9999 in UTC, before year 1)."""
    if isinstance(value, str):
        known = _PARSED.get(value, _UNKNOWN)
        if known is _UNKNOWN:
            if len(_PARSED) >= _PARSED_KEPT:
                _PARSED.clear()
            known = _PARSED[value] = _parse_text(value)
        return known  # type: ignore[return-value]  # (a float or None, as parsed)
    return _parse_checked(value)


# Texts read before and what they read as: a record's times are read again at every event.
_PARSED: dict[str, float | None] = {}
_PARSED_KEPT = 4096
_UNKNOWN = object()


def _parse_text(text: str) -> float | None:
    own = _own_form(text.strip())
    if own is not None:
        return own  # years 1 to 9999 in UTC: always one it can write back
    return _parse_checked(text)


def _parse_checked(value: object) -> float | None:
    seconds = _parse_ts(value)
    if seconds is None:
        return None
    if _FOUR_DIGIT_YEARS[0] <= seconds < _FOUR_DIGIT_YEARS[1]:
        return seconds  # a moment iso writes, surely
    try:
        iso(seconds)
    except (ValueError, OverflowError, OSError):
        return None
    return seconds


_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _own_form(text: str) -> float | None:
    """Epoch seconds of `YYYY-MM-DDTHH:MM:SSZ` or `...SS.mmmZ`, as datetime reads them (to
    the same float: the microseconds over 10**6, as timedelta.total_seconds divides); None for
    any other text, which datetime reads instead."""
    if len(text) not in (20, 24) or text[-1] != "Z" or text[4] != "-" or text[7] != "-" \
            or text[10] != "T" or text[13] != ":" or text[16] != ":":
        return None
    fraction = text[20:23] if len(text) == 24 else "000"
    digits = text[:4] + text[5:7] + text[8:10] + text[11:13] + text[14:16] + text[17:19] + fraction
    if (len(text) == 24 and text[19] != ".") or not (digits.isascii() and digits.isdigit()):
        return None
    year, month, day = int(digits[:4]), int(digits[4:6]), int(digits[6:8])
    hour, minute, second = int(digits[8:10]), int(digits[10:12]), int(digits[12:14])
    if not (1 <= year and 1 <= month <= 12 and 1 <= day <= _days_in(year, month)
            and hour < 24 and minute < 60 and second < 60):
        return None
    era_year = year - (month <= 2)  # days from 1970-01-01 (H. Hinnant's civil calendar)
    era, of_era = divmod(era_year, 400)
    of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    days = era * 146097 + of_era * 365 + of_era // 4 - of_era // 100 + of_year - 719468
    whole = days * 86400 + hour * 3600 + minute * 60 + second
    return (whole * 10**6 + int(fraction) * 1000) / 10**6


def _days_in(year: int, month: int) -> int:
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 29 if month == 2 and leap else _MONTH_DAYS[month - 1]


def _parse_ts(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
        return number if number == number and abs(number) < 1e11 else None
    if isinstance(value, str):
        from datetime import UTC, datetime  # (only text other than sidecar's own form)

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
    import math

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
