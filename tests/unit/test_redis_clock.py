"""This machine's clock against Redis's TIME, and Redis's persistence as INFO and CONFIG say
it: the arithmetic and the parsing, against stand-in clients (no server, no process)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis

from sidecar.base import timeutil
from sidecar.base.proc import process_space
from sidecar.coordination.redis import clock as redis_clock
from sidecar.coordination.redis.clock import (
    JUMP,
    MEASURE_EVERY,
    SMOOTHING,
    Persistence,
    Reading,
    RedisClock,
    Sample,
    persistence_of,
    sample,
    smoothed,
)

DAY = 86400.0


@pytest.fixture(autouse=True)
def _own_clock() -> Iterator[None]:
    """Each test starts, and leaves the process, on this machine's own clock."""
    timeutil.set_offset(None)
    yield
    timeutil.set_offset(None)


class Pipeline:
    def __init__(self, server: Server) -> None:
        self.server, self.asked = server, []

    def info(self, section: str) -> None:
        self.asked.append(("info", section))

    def config_get(self, name: str) -> None:
        self.asked.append(("config", name))

    def execute(self, raise_on_error: bool = True) -> list[object]:
        assert not raise_on_error  # a refusal is a reply, never raised
        self.server.pipelines.append(self.asked)
        if self.server.down:
            raise redis.ConnectionError("Connection refused")
        return [self.server.info if kind == "info" else self.server.config
                for kind, _ in self.asked]


class Server:
    """A stand-in for redis-py's client: TIME `ahead` of this machine's clock, each answer
    `delays` long (the reply read at its end), INFO and CONFIG replies as given."""

    def __init__(self, ahead: float = 0.0, delays: list[float] | None = None) -> None:
        self.ahead, self.delays = ahead, list(delays or [])
        self.info: object = {"aof_enabled": 1}
        self.config: object = {"appendfsync": "everysec"}
        self.times = 0
        self.pipelines: list[list[tuple[str, str]]] = []
        self.down = False
        self.time_refused = False
        self.said: dict[str, float] = {}

    def time(self) -> tuple[int, int]:
        if self.down:
            raise redis.ConnectionError("Connection refused")
        if self.time_refused:
            raise redis.exceptions.NoPermissionError("no permissions to run the 'time' command")
        self.times += 1
        at = time.time() + self.ahead
        if self.delays:
            time.sleep(self.delays.pop(0))  # the reply's way back is slow: read late
        return int(at), int(round(at % 1 * 1e6))

    def pipeline(self, transaction: bool = True) -> Pipeline:
        return Pipeline(self)

    def hset(self, key: str, field: str, value: str) -> None:
        self.said[field] = float(value.split()[0])  # the machine's offset, for leaders


# -- the arithmetic ---------------------------------------------------------------------------


def test_a_reply_is_read_as_taken_at_the_midpoint_of_its_round_trip():
    # Asked at 1000.0 by this clock, answered 0.2 s later: Redis said 999.9, at 1000.1 here.
    taken = sample(1000.0, 50.0, 50.2, (999, 900_000))
    assert taken.rtt == pytest.approx(0.2)
    assert taken.skew == pytest.approx(0.2)  # this machine is 0.2 s ahead
    # A monotonic clock read out of order gives no negative round trip.
    assert sample(1000.0, 50.0, 49.0, (1000, 0)).rtt == 0.0


def test_a_measurement_keeps_the_shortest_round_trip_of_its_samples():
    # The first two replies come back slowly (read late: off by half their delay); the third
    # at once, the one kept.
    server = Server(ahead=-120.0, delays=[0.08, 0.06, 0.0])
    taken = redis_clock.measure_skew(server, samples=3)  # type: ignore[arg-type]
    assert server.times == 3
    assert taken.rtt < 0.03
    assert taken.skew == pytest.approx(120.0, abs=0.02)  # this machine 2 min ahead


def test_the_estimate_moves_by_a_share_of_a_close_measurement_and_wholly_to_a_far_one():
    assert smoothed(None, Sample(3.0, 0.001)) == 3.0  # the first, whole
    close = smoothed(0.0, Sample(0.2, 0.001))
    assert close == pytest.approx(SMOOTHING * 0.2)
    assert smoothed(0.0, Sample(JUMP + 0.1, 0.001)) == JUMP + 0.1  # a clock stepped
    # A slow round trip widens what counts as close: its own error is half of it.
    assert smoothed(0.0, Sample(JUMP + 0.1, 0.4)) == pytest.approx(SMOOTHING * (JUMP + 0.1))


def test_an_offset_is_said_in_a_unit_one_reads():
    assert redis_clock.described(2.3) == "2.300 s ahead of Redis's"
    assert redis_clock.described(-120.0) == "2.0 min behind Redis's"
    assert redis_clock.described(25 * 3600 + 61) == "25 h 1 min ahead of Redis's"
    assert redis_clock.described(25 * 3600 - 0.01) == "25 h 0 min ahead of Redis's"


def test_now_adds_the_offset_and_the_offset_is_nothing_by_default():
    assert timeutil.offset() == 0.0
    before = time.time()
    assert before <= timeutil.now() <= time.time()
    timeutil.set_offset(-DAY)
    assert timeutil.now() == pytest.approx(time.time() - DAY, abs=1.0)
    assert timeutil.offset() == pytest.approx(-DAY, abs=0.05)


def test_a_step_of_this_machines_wall_clock_never_reaches_redis_time(monkeypatch):
    timeutil.set_offset(DAY)
    before = timeutil.now()
    wall = time.time
    monkeypatch.setattr(time, "time", lambda: wall() - 25 * 3600)  # NTP steps it back 25 h
    assert timeutil.now() == pytest.approx(before, abs=0.05)  # Redis's time went on
    assert timeutil.offset() == pytest.approx(DAY + 25 * 3600, abs=0.05)
    timeutil.set_offset(None)
    assert timeutil.now() == pytest.approx(wall() - 25 * 3600, abs=0.05)  # its own again


# -- persistence --------------------------------------------------------------------------------


@pytest.mark.parametrize(("info", "config", "expected"), [
    ({"aof_enabled": 1}, {"appendfsync": "everysec"}, Persistence(True, "everysec")),
    ({"aof_enabled": 0}, {"appendfsync": "everysec"}, Persistence(False, "everysec")),
    ({"aof_enabled": "1"}, {b"appendfsync": b"ALWAYS"}, Persistence(True, "always")),
    ({"aof_enabled": 1}, {"appendfsync": "no"}, Persistence(True, "no")),
    # CONFIG refused (an ACL, a renamed or disabled command): the policy is unknown.
    ({"aof_enabled": 1}, redis.exceptions.NoPermissionError("no permissions"),
     Persistence(True, None)),
    ({"aof_enabled": 1}, redis.ResponseError("unknown command 'CONFIG'"), Persistence(True, None)),
    ({"aof_enabled": 1}, {}, Persistence(True, None)),
    ({"aof_enabled": 1}, {"appendfsync": "sometimes"}, Persistence(True, None)),
    # INFO refused, or not saying: unknown, never "off".
    (redis.ResponseError("NOPERM"), None, Persistence(None, None)),
    ({}, None, Persistence(None, None)),
    ({"aof_enabled": True}, None, Persistence(None, None)),
])
def test_persistence_is_read_from_info_and_config_replies(info, config, expected):
    assert persistence_of(info, config) == expected


def test_what_redis_would_lose_is_warned_of():
    assert "without appendonly yes" in (Persistence(False, "everysec").warning() or "")
    assert "appendfsync no" in (Persistence(True, "no").warning() or "")
    assert Persistence(True, "everysec").warning() is None
    assert Persistence(True, "always").warning() is None
    assert Persistence(True, None).warning() is None  # AOF on; its fsync cannot be told
    assert Persistence(None, None).warning() is None  # nothing known: said otherwise
    assert Persistence(True, None).shown() == "appendonly yes, appendfsync unknown"
    assert Persistence(False, "no").to_json() == {"appendonly": False, "appendfsync": "no",
                                                  "evicts": None}


@pytest.mark.parametrize(("memory", "evicts"), [
    ({"maxmemory": 0, "maxmemory_policy": "allkeys-lru"}, False),  # no limit: nothing evicted
    ({"maxmemory": 1 << 30, "maxmemory_policy": "noeviction"}, False),
    ({"maxmemory": 1 << 30, "maxmemory_policy": "allkeys-lru"}, True),
    (redis.ResponseError("NOPERM"), None),
    ({}, None),
])
def test_a_redis_that_may_evict_a_record_is_said(memory, evicts):
    found = persistence_of({"aof_enabled": 1}, {"appendfsync": "always"}, memory)
    assert found.evicts is evicts
    assert ("noeviction" in (found.warning() or "")) is bool(evicts)


def test_a_reading_warns_of_a_clock_off_by_more_than_a_second_and_of_persistence():
    kept = Persistence(True, "everysec")
    assert Reading(Sample(0.9, 0.001), kept).warnings() == []
    assert Reading(Sample(-0.9, 0.001), kept).warnings() == []
    assert Reading(None, kept).warnings() == []
    [clock] = Reading(Sample(-1.5, 0.001), kept).warnings()
    assert "1.500 s behind Redis's" in clock
    assert len(Reading(Sample(90000.0, 0.001), Persistence(False, "everysec")).warnings()) == 2


def test_a_refused_config_is_asked_no_more():
    server = Server()
    server.config = redis.exceptions.NoPermissionError("no permissions to run 'config|get'")
    clock = RedisClock(server)  # type: ignore[arg-type]
    clock.measure()
    assert clock.persistence == Persistence(True, None)
    assert server.pipelines[-1] == [("info", "persistence"), ("config", "appendfsync"),
                                    ("info", "memory")]
    clock.measure()
    assert server.pipelines[-1] == [("info", "persistence"), ("info", "memory")]
    assert clock.persistence == Persistence(True, None)


# -- the process's clock ----------------------------------------------------------------------


def test_the_first_reading_sets_the_offset_and_holds_no_lead_back():
    server = Server(ahead=DAY)  # this machine a day behind
    clock = RedisClock(server)  # type: ignore[arg-type]
    clock.first()
    assert timeutil.now() == pytest.approx(time.time() + DAY, abs=0.05)
    assert clock.skew == pytest.approx(-DAY, abs=0.05)
    assert clock.persistence == Persistence(True, "everysec")
    assert clock.steady()  # read before any step: no step's time moved
    assert server.said == {process_space(): pytest.approx(DAY, abs=0.05)}  # said for leaders
    clock.first()
    assert server.times == redis_clock.SAMPLES  # once only
    clock.close()
    assert timeutil.offset() == 0.0  # the process's own clock again


def test_the_keeper_measures_every_few_seconds_and_at_once_until_it_could(monkeypatch):
    server = Server(ahead=-3.0)
    clock = RedisClock(server)  # type: ignore[arg-type]
    server.down = True
    clock.first()  # Redis down: left to the keeper
    assert not clock.known and timeutil.offset() == 0.0
    with pytest.raises(redis.ConnectionError):
        clock.keep()
    server.down = False
    clock.keep()  # the next round, at once
    assert timeutil.offset() == pytest.approx(-3.0, abs=0.05)
    asked = server.times
    clock.keep()
    assert server.times == asked  # not yet due
    monkeypatch.setattr(clock, "next_at", time.monotonic() - 0.001)
    clock.keep()
    assert server.times == asked + redis_clock.SAMPLES
    assert MEASURE_EVERY <= 10  # "every few seconds"


def test_no_lead_is_taken_before_the_clock_is_known_nor_just_after_it_moved(monkeypatch):
    server = Server(ahead=DAY)
    clock = RedisClock(server)  # type: ignore[arg-type]
    looks: list[object] = []

    def lives(keys: list[str], args: list[str]) -> int:
        looks.append(keys)
        return 0

    holder_lives = clock.gate(lives)
    server.down = True
    clock.first()  # the first reading failed: steps ran with this machine's clock since
    with pytest.raises(redis.ConnectionError):
        holder_lives(keys=["lead"], args=["x"])  # (the lead's try: "unreachable")
    server.down = False
    assert holder_lives(keys=["lead"], args=["x"]) == 1  # read now: "held" for this try
    assert looks == []
    assert timeutil.offset() == pytest.approx(DAY, abs=0.05)
    monkeypatch.setattr(clock, "moved_at", time.monotonic() - redis_clock.SETTLE - 0.01)
    assert holder_lives(keys=["lead"], args=["x"]) == 0  # settled: the real look
    assert looks == [["lead"]]
    # A small move (each measurement's) holds nothing back.
    server.ahead = DAY + 0.3
    clock.measure()
    assert holder_lives(keys=["lead"], args=["x"]) == 0


def test_a_refused_time_leaves_this_machines_clock_and_the_lead_free():
    server = Server()
    server.time_refused = True
    clock = RedisClock(server)  # type: ignore[arg-type]
    clock.first()
    assert clock.known and clock.skew is None and clock.refused
    assert timeutil.offset() == 0.0
    assert clock.gate(lambda keys, args: 0)(keys=["lead"], args=[]) == 0
    assert clock.persistence == Persistence(True, "everysec")  # read all the same


def test_status_and_doctor_read_no_clock_of_the_file_backend():
    from sidecar.coordination.files import FileCoordination

    assert FileCoordination().look() is None
