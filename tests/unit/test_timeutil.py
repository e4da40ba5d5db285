"""timeutil reads sidecar's own timestamps without the datetime module, to the very float the
datetime module gives; present words local times without it, as it did with it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sidecar.base import timeutil, words


def through_datetime(value: object) -> float | None:
    """parse_ts as it was: every text through datetime.fromisoformat, checked writable."""
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        try:
            seconds = moment.timestamp()
            timeutil.iso(seconds)
        except (ValueError, OverflowError, OSError):
            return None
        return seconds
    return timeutil.parse_ts(value)


moments = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59))


@given(moments, st.booleans())
def test_sidecars_own_form_reads_to_the_float_datetime_gives(moment, millis):
    text = moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{moment.microsecond // 1000:03d}" if millis else "") + "Z"
    text = text.rjust(20 + 4 * millis, "0")  # strftime drops a year's leading zeros
    assert timeutil.parse_ts(text) == through_datetime(text)
    assert timeutil.parse_ts(f" {text}\n") == through_datetime(text)


@given(st.text(alphabet="0123456789-:TZ. +", min_size=19, max_size=25))
def test_any_text_near_that_form_reads_as_datetime_reads_it(text):
    assert timeutil.parse_ts(text) == through_datetime(text)


@pytest.mark.parametrize("text", [
    "2026-02-29T00:00:00Z", "2024-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z",
    "2026-04-31T00:00:00Z", "2026-12-31T24:00:00Z", "2026-12-31T23:60:00Z", "2026-12-31T23:59:60Z",
    "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", "0001-01-01T00:00:00.000Z",
    "2026-12-01T20:00:00.1234Z", "2026-12-01T20:00:00,123Z", "2026-1a-01T20:00:00Z",
    "２０２６-12-01T20:00:00Z", "2026-12-01T20:00:00+00:00", "2026-12-01t20:00:00z"])
def test_edges_of_the_form_read_as_datetime_reads_them(text):
    assert timeutil.parse_ts(text) == through_datetime(text)


def as_datetime_worded_it(ts: float, now: float) -> str:
    moment = datetime.fromtimestamp(ts).astimezone()
    today = datetime.fromtimestamp(now).astimezone().date()
    if moment.date() == today:
        return moment.strftime("%H:%M:%S")
    if moment.year == today.year:
        return moment.strftime("%b %d %H:%M")
    return moment.strftime("%Y-%m-%d %H:%M")


ZONES = ["UTC", "Europe/Paris", "America/St_Johns", "Pacific/Kiritimati"]


@contextmanager
def zone(name: str) -> Iterator[None]:
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("TZ", name)
            time.tzset()
            yield
    finally:
        time.tzset()  # the zone it was, TZ given back


@given(st.floats(min_value=0, max_value=4e9), st.floats(min_value=-4e7, max_value=4e7))
def test_a_local_time_is_worded_as_datetime_worded_it(now, offset):
    for name in ZONES:
        with zone(name):
            assert words.local_time(now + offset, now) == as_datetime_worded_it(now + offset, now)


def as_datetime_wrote_it(ts: float) -> str:
    moment = datetime.fromtimestamp(ts, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@given(st.floats(min_value=-62135596800, max_value=253402300799.999) | st.integers(
    min_value=-62135596800, max_value=253402300799).map(float) | st.sampled_from([
        -30610224000.0, -30610224000.0000005, 253402300799.9999995, 1796000000.9999995,
        1796000000.0000005, -0.5, -1e-300, 0.9995, 0.0004999]))
def test_a_moment_is_written_as_datetime_wrote_it(ts):
    try:
        expected = as_datetime_wrote_it(ts)
    except (ValueError, OverflowError, OSError) as exc:
        with pytest.raises(type(exc)):
            timeutil.iso(ts)
        return
    assert timeutil.iso(ts) == expected


@pytest.mark.parametrize("ts", [1e20, -1e20, 253402300800.0, -62135596801.0, float("inf")])
def test_a_moment_past_what_datetime_holds_is_refused_as_it_refuses_it(ts):
    with pytest.raises((ValueError, OverflowError, OSError)):
        as_datetime_wrote_it(ts)
    with pytest.raises((ValueError, OverflowError, OSError)):
        timeutil.iso(ts)


def test_a_text_read_again_reads_the_same_and_the_memory_stays_bounded():
    for i in range(timeutil._PARSED_KEPT * 2 + 10):
        text = timeutil.iso(1_796_000_000 + i)
        assert timeutil.parse_ts(text) == timeutil.parse_ts(text) == through_datetime(text)
    assert len(timeutil._PARSED) <= timeutil._PARSED_KEPT
    assert timeutil.parse_ts("not a time") is None and timeutil.parse_ts("not a time") is None

