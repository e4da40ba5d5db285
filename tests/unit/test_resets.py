"""Reading when a usage limit resets, in every form the hosts print, and the back-off."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from sidecar.followups.resets import (
    BACKOFF_CAP,
    MAX_TRIES,
    RESET_MARGIN,
    backoff,
    next_try,
    parse_reset,
)

UTC = dt.UTC
# 2026-12-01 10:00:00 UTC, a Tuesday; 11:00 in Berlin, 05:00 in New York.
NOW = dt.datetime(2026, 12, 1, 10, 0, tzinfo=UTC).timestamp()


def at(hour: int, minute: int = 0, zone: dt.tzinfo = UTC, day: int = 1) -> float:
    return dt.datetime(2026, 12, day, hour, minute, tzinfo=zone).timestamp()


@pytest.mark.parametrize("text, expected", [
    ("Claude AI usage limit reached|1796205600", 1796205600.0),
    ("Claude AI usage limit reached|1796205600000", 1796205600.0),  # milliseconds
    ("API Error: limit · resets at 2026-12-01T15:00:00Z", at(15)),
    ("usage limit; resets at 2026-12-01T16:30:00+01:00", at(15, 30)),
    ("5-hour limit reached ∙ resets 3pm (Europe/Berlin)", at(15, 0, ZoneInfo("Europe/Berlin"))),
    ("limit reached · resets 3:30 pm (America/New_York)",
     at(15, 30, ZoneInfo("America/New_York"))),
    ("You've hit your limit · resets 9am (Europe/Berlin)",  # 9 am Berlin has passed: tomorrow
     at(9, 0, ZoneInfo("Europe/Berlin"), day=2)),
    ("Rate limited. Please try again at 3:05 PM", at(15, 5)),
    ("Rate limited. Please try again at 12:30 AM", at(0, 30, day=2)),
    ("try again at 10:00 AM.", NOW),  # this very minute (a reset seconds ahead): due now
    ("try again at 9:58 AM.", at(9, 58, day=2)),  # passed: tomorrow's
    ("quota exceeded, resets at 17:45", at(17, 45)),
    ("You can try again in 2 hours 5 minutes.", NOW + 2 * 3600 + 5 * 60),
    ("usage limit reached, resets in 45 min", NOW + 45 * 60),
    ("Quota exceeded. Please retry in 30s.", NOW + 30),
    ("rate limited: retry after 120 seconds", NOW + 120),
    ("try again in 1h 30m", NOW + 5400),
])
def test_every_printed_form_of_a_reset_is_read(text, expected):
    assert parse_reset(text, NOW, UTC) == pytest.approx(expected)


@pytest.mark.parametrize("text", [
    "API Error: Request rejected (429) · This request would exceed your account's rate limit. "
    "Please try again later.",  # what Claude Code 2.1.328 prints with an API key
    "resets 3",  # a bare number is not a time
    "try again at 13:75",
    "resets 3pm (Not/AZone)",
    "",
])
def test_a_message_without_a_usable_reset_gives_none(text):
    assert parse_reset(text, NOW, UTC) is None


def test_the_back_off_starts_at_15_minutes_doubles_and_stops_at_5_hours():
    minutes = [backoff(tries) / 60 for tries in range(MAX_TRIES)]
    assert minutes == [15, 30, 60, 120, 240, 300, 300, 300]
    assert backoff(20) == BACKOFF_CAP
    assert backoff(0, scale=0.001) == pytest.approx(0.9)  # scaled for tests by config


def test_the_next_try_prefers_the_stated_reset_and_gives_up_after_eight_tries():
    later = f"usage limit reached|{NOW + 7200:.0f}"
    assert next_try(later, NOW, 0) == NOW + 7200 + RESET_MARGIN
    assert next_try("rate limited", NOW, 0) == NOW + 15 * 60
    assert next_try("rate limited", NOW, 3) == NOW + 120 * 60
    passed = f"usage limit reached|{NOW - 60:.0f}"  # a reset already past: back off instead
    assert next_try(passed, NOW, 1) == NOW + 30 * 60
    assert next_try("rate limited", NOW, MAX_TRIES - 1) is not None
    assert next_try("rate limited", NOW, MAX_TRIES) is None
