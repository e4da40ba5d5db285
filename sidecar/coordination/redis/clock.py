"""This machine's wall clock against Redis's, and how durably Redis keeps what it is told.

The machines that serve a workspace through Redis compare times one another wrote: a
follow-up's due time, a session's `updatedAt`, the stale sweep's ages, `completedAt`. Their
wall clocks need not agree, so a daemon in Redis mode keeps to Redis's: its keeper thread
(backend.py) measures how far this machine's clock is from Redis's `TIME` every
MEASURE_EVERY seconds and makes `timeutil.now()` add the difference. A hook never waits on
it, nor does a step of the loop, but a stand-by's try for the lead before its first reading.
Each daemon also says its machine's offset in Redis (`OFFSETS`), so that a leader reads the
times stamped by the hooks of any machine a daemon runs on as Redis's (daemon/ingest.py).

A measurement is the best (shortest round trip) of a few TIME calls, each read as taken at its
round trip's midpoint: right to half that round trip. A new measurement within JUMP of the
estimate moves it by a share of the difference (one round trip slowed on one leg does not
jerk the clock); a larger difference is a clock that was stepped, and is taken whole.

Redis's persistence is read with it (`INFO persistence`, `CONFIG GET appendfsync`): `doctor`
and `status` warn when Redis would lose what it acknowledged. CONFIG may be refused (an ACL, a
renamed command, a managed service): the fsync policy is then unknown, and not asked again.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import TYPE_CHECKING, Any, NamedTuple

import redis

from sidecar.base import timeutil
from sidecar.base.proc import process_space
from sidecar.coordination.records import OFFSETS

if TYPE_CHECKING:
    pass

log = logging.getLogger("sidecar")

SAMPLES = 3  # TIME round trips a measurement takes the best of
LOOK_SAMPLES = 2  # and `status` or `doctor`, which ask once
MEASURE_EVERY = 5.0  # seconds between the keeper's measurements
SMOOTHING = 0.25  # the share of a close measurement's difference the estimate takes in
JUMP = 0.5  # seconds past which (plus half the round trip) a measurement is taken whole
MOVED = 1.0  # seconds the offset must move by to hold the lead back (SETTLE)
SETTLE = 1.0  # seconds after such a move during which no lead is taken (see `steady`)
TOLERATED = 1.0  # seconds a clock may be off Redis's before doctor and status say so
FSYNC_POLICIES = ("always", "everysec", "no")


class Sample(NamedTuple):
    skew: float  # this machine's wall clock minus Redis's, in seconds
    rtt: float  # the round trip it was read in: the skew is right to half of it


def sample(wall_before: float, mono_before: float, mono_after: float,
           server: tuple[int, int] | list[int]) -> Sample:
    """One TIME reply (seconds, microseconds) read as Redis's time at the midpoint of the round
    trip; the round trip on the monotonic clock, which no step of the wall clock moves."""
    rtt = max(0.0, mono_after - mono_before)
    seconds, micros = server
    return Sample(wall_before + rtt / 2 - (int(seconds) + int(micros) / 1e6), rtt)


def measure_skew(client: redis.Redis, samples: int = SAMPLES) -> Sample:
    """The best of `samples` TIME round trips; RedisError if Redis does not answer (a
    ResponseError if TIME is refused)."""
    taken = []
    for _ in range(samples):
        wall, before = time.time(), time.monotonic()
        server = client.time()
        taken.append(sample(wall, before, time.monotonic(), server))
    return min(taken, key=lambda s: s.rtt)


def smoothed(previous: float | None, new: Sample) -> float:
    """The estimate after a new measurement."""
    if previous is None or abs(new.skew - previous) > JUMP + new.rtt / 2:
        return new.skew
    return previous + SMOOTHING * (new.skew - previous)


def described(skew: float) -> str:
    """`2.300 s ahead of Redis's`, `25 h 0 min behind ...`: how far, in a unit one reads."""
    size = abs(skew)
    hours, minutes = divmod(round(size / 60), 60)
    amount = (f"{size:.3f} s" if size < 60 else f"{size / 60:.1f} min" if size < 3600
              else f"{hours} h {minutes} min")
    return f"{amount} {'ahead of' if skew > 0 else 'behind'} Redis's"


class Persistence(NamedTuple):
    appendonly: bool | None  # None: INFO refused, or did not say
    appendfsync: str | None  # always, everysec or no; None: CONFIG refused
    evicts: bool | None = None  # a maxmemory with a policy other than noeviction; None: unknown

    def warning(self) -> str | None:
        """What Redis would lose, in words; None when it loses nothing acknowledged to a kill of
        redis-server (or when that cannot be told)."""
        if self.appendonly is False:
            return ("Redis runs without appendonly yes: what it holds (the leases and locks, and "
                    "any state kept there) is lost when redis-server restarts")
        if self.appendonly and self.appendfsync == "no":
            return ("Redis runs with appendfsync no: the last ~30 s of what it acknowledged are "
                    "lost if its machine loses power")
        if self.evicts:
            return ("Redis may evict keys (maxmemory with a policy other than noeviction): a "
                    "record it evicts is lost; set maxmemory-policy noeviction")
        return None

    def shown(self) -> str:
        known = {True: "yes", False: "no", None: "unknown"}
        return f"appendonly {known[self.appendonly]}, appendfsync {self.appendfsync or 'unknown'}"

    def to_json(self) -> dict[str, Any]:
        return {"appendonly": self.appendonly, "appendfsync": self.appendfsync, "evicts": self.evicts}


def persistence_of(info: object, config: object, memory: object = None) -> Persistence:
    """From the replies to `INFO persistence`, `CONFIG GET appendfsync` and `INFO memory`, any
    of which may be an error (refused) or missing."""
    appendonly = None
    if isinstance(info, Mapping):
        flag = info.get("aof_enabled")
        if not isinstance(flag, bool) and str(flag) in ("0", "1"):
            appendonly = str(flag) == "1"
    fsync = None
    if isinstance(config, Mapping):
        value = config.get("appendfsync", config.get(b"appendfsync"))
        if isinstance(value, bytes):
            value = value.decode("ascii", "replace")
        if isinstance(value, str) and value.lower() in FSYNC_POLICIES:
            fsync = value.lower()
    evicts = None
    if isinstance(memory, Mapping) and "maxmemory_policy" in memory:
        limit = str(memory.get("maxmemory", "0"))
        evicts = limit.isdigit() and int(limit) > 0 and str(memory["maxmemory_policy"]) != "noeviction"
    return Persistence(appendonly, fsync, evicts)


def read_persistence(client: redis.Redis, ask_config: bool = True) -> tuple[Persistence, bool]:
    """Redis's persistence, in one round trip, and whether CONFIG was refused (an error reply,
    never raised: a Redis that does not say is not an unreachable one)."""
    pipe = client.pipeline(transaction=False)
    pipe.info("persistence")
    if ask_config:
        pipe.config_get("appendfsync")
    pipe.info("memory")
    replies = pipe.execute(raise_on_error=False)
    config = replies[1] if ask_config else None
    return (persistence_of(replies[0], config, replies[-1]), isinstance(config, redis.ResponseError))


class Reading(NamedTuple):
    """What `status` and `doctor` ask of Redis: this machine's skew (None: TIME refused) and
    its persistence."""

    skew: Sample | None
    persistence: Persistence

    def warnings(self) -> list[str]:
        found = []
        if self.skew is not None and abs(self.skew.skew) > TOLERATED:
            found.append(f"this machine's clock is {described(self.skew.skew)} (sidecar keeps to Redis's)")
        said = self.persistence.warning()
        if said is not None:
            found.append(said)
        return found


def read(client: redis.Redis, samples: int = LOOK_SAMPLES) -> Reading:
    """Ask Redis now (in place of a ping): RedisError if it does not answer."""
    try:
        skew: Sample | None = measure_skew(client, samples)
    except redis.ResponseError:
        skew = None  # TIME refused to this user: said as unknown
    return Reading(skew, read_persistence(client)[0])


class RedisClock:
    """One process's reading of Redis's clock and persistence, kept by the keeper thread;
    it sets `timeutil`'s offset (and takes it back at `close`)."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.lock = threading.Lock()
        self.skew: float | None = None  # the estimate: this machine's clock minus Redis's
        self.rtt: float | None = None  # the last measurement's round trip
        self.persistence: Persistence | None = None
        self.refused: str | None = None  # why TIME may not be asked: this machine's clock is used
        self.config_refused = False
        self.tried = False
        self.next_at = 0.0  # the next measurement, on the monotonic clock
        self.moved_at = -math.inf  # when the offset last moved by more than MOVED (monotonic)
        self.applied = False  # whether this clock set timeutil's offset

    @property
    def known(self) -> bool:
        return self.skew is not None or self.refused is not None

    def keep(self) -> None:
        """The keeper's every round: measure when due. RedisError if Redis does not answer."""
        if not self.known or time.monotonic() >= self.next_at:
            self.measure()

    def run(self, stopping: threading.Event, every: float) -> None:
        """The clock's own thread: `keep` every `every` seconds until `stopping`."""
        while not stopping.wait(every):
            try:
                self.keep()
            except redis.RedisError:
                continue  # the keeper says when Redis cannot be reached
            except Exception:  # noqa: BLE001 - a dead thread would leave the clock as it was
                log.exception("Redis's clock was not read")

    def first(self) -> None:
        """Measure before the daemon's first step (when it first asks for a lead), so that the
        step already keeps to Redis's clock; a failure is left to the keeper."""
        if not self.tried:
            with suppress(redis.RedisError):
                self.measure()

    def steady(self) -> bool:
        """Whether a lead may be taken now: a step began with the time `now()` said then, and a
        lead taken with a time that moved by hours since (the first reading of a clock far off,
        made only once Redis answered; a clock stepped) would sweep live sessions or fire
        follow-ups early. So no lead before the clock is known (measured at once if not:
        RedisError if Redis does not answer), nor for SETTLE after a move: the next step's time
        is the new one. The first reading of all, before any step, moves no step's time."""
        if not self.known:
            self.measure()
        return time.monotonic() >= self.moved_at + SETTLE

    def gate(self, lives: Callable[..., Any]) -> Callable[..., Any]:
        """The stand-by's look at who holds the lead (lead.py), saying "held" while the
        clock is not `steady`."""
        def holder_lives(keys: list[str], args: list[str]) -> Any:
            return lives(keys=keys, args=args) if self.steady() else 1
        return holder_lives

    def measure(self) -> None:
        """Read Redis's clock (setting the offset) and persistence now; RedisError if Redis
        does not answer."""
        with self.lock:
            first, self.tried = not self.tried, True
            self.next_at = time.monotonic() + MEASURE_EVERY
            try:
                taken: Sample | None = measure_skew(self.client)
            except redis.ResponseError as exc:  # TIME refused (an ACL): this machine's clock
                if self.refused is None:
                    log.warning("Redis refuses TIME (%s): due times and ages follow this "
                                "machine's clock, which other machines' may not agree with", exc)
                self.refused, taken = str(exc), None
            if taken is not None:
                self._take(taken, first)
            self.persistence, refused = read_persistence(self.client, not self.config_refused)
            self.config_refused = self.config_refused or refused

    def _take(self, taken: Sample, first: bool) -> None:
        self.skew, self.rtt = smoothed(self.skew, taken), taken.rtt
        offset = -self.skew
        moved = abs(offset - timeutil.offset()) > MOVED
        if moved or not self.applied:  # the first reading, and each move that counts
            log.info("this machine's clock is %s: sidecar keeps to Redis's", described(self.skew))
        if moved and not first:
            self.moved_at = time.monotonic()
        timeutil.set_offset(offset)
        self.applied = True
        space = process_space()
        if space is not None:  # the events its hooks stamp are read on Redis's clock by it
            self.client.hset(OFFSETS, space, f"{offset!r} {timeutil.now()!r}")

    def close(self) -> None:
        """Give the process its own clock back (a test's next backend starts from it)."""
        if self.applied:
            timeutil.set_offset(None)
            self.applied = False
