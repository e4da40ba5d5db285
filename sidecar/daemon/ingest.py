"""One workspace's ingestion, as a loop step: `step(now, woken) -> next deadline`.

A step lists the inbox when woken (watchdog saw an arrival), when the reconcile timer is due
(arrivals before start-up, events the kernel's queue dropped) or when a file's grace period
ends; applies what is ready in batches; and runs the stale sweep and retention pruning on
their timers. It has no threads and reads the wall-clock time only from its callers; when
the wall clock is stepped, the caller moves its timers with `clock_stepped` (and when it last
applied an event of each session: the stale sweep spares a session seen that recently).

A batch reads: `changes = batch.plan(events)` -> `queued = queue.add(changes)` ->
`batch.commit(queued)` -> `inbox.remove(applied)`, so a follow-up is queued before its session
records it, and an event leaves the inbox only once everything it changed is saved.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sidecar import safedir
from sidecar.base.errors import SidecarError
from sidecar.base.wslog import WorkspaceLog
from sidecar.config import Config
from sidecar.coordination.base import LeaseLost, Unreachable
from sidecar.coordination.records import REMIRROR_EVERY
from sidecar.followups.queue import FollowUpQueue
from sidecar.inbox import folder as inbox
from sidecar.inbox.events import Event
from sidecar.sessions.batch import open_batch
from sidecar.sessions.model import Key
from sidecar.sessions.store import BatchResult, SessionStore
from sidecar.vocabulary import EventKind, SessionChange

log = logging.getLogger("sidecar")

BATCH_MAX = 2000  # events per batch: bounds memory and the time between state writes
RETRY_SECONDS = 1.0  # a batch that could not be saved is tried again this much later
PRUNE_INTERVAL = 3600.0
RELIABLE_RECONCILE = 600.0  # inbox listings without a wake-up, where overflows are reported
UNRELIABLE_RECONCILE = 2.0  # and where they are not


@dataclass
class Health:
    """What ingestion has done and what went wrong last, for the heartbeat and status."""

    applied: int = 0
    rejected: int = 0
    errors: int = 0
    last_error: str = ""

    def error(self, root: object, message: str) -> None:
        self.errors += 1
        self.last_error = message
        log.error("%s: %s", root, message)

    def counters(self) -> dict[str, int]:
        return {"applied": self.applied, "rejected": self.rejected, "errors": self.errors}


@dataclass
class Timers:
    reconcile: float = 0.0
    sweep: float = 0.0
    prune: float = 0.0
    remirror: float = 0.0  # in Redis mode, when the files' copy is next compared with it
    grace: float | None = None  # the earliest time a held-back file is looked at again
    retry_after: dict[str, float] = field(default_factory=dict)

    def shift(self, jump: float) -> None:
        """The wall clock was stepped by `jump` seconds: every timer keeps the time it had left."""
        self.reconcile += jump
        self.sweep += jump
        self.prune += jump
        self.remirror += jump
        if self.grace is not None:
            self.grace += jump
        for name in self.retry_after:
            self.retry_after[name] += jump


def on_redis_clock(events: list[Event], offsets: dict[str, float]) -> None:
    """In Redis mode, the events' times as Redis's clock had them: a hook stamps its machine's
    time, which may be far off, so each time gets its machine's offset where a daemon there
    measured it (a machine with no daemon is taken as it says)."""
    for event in events:
        offset = offsets.get(event.host_space or "")
        if offset is not None:
            event.ts += offset


class Ingestor:
    """Turns one workspace's inbox into session state, a batch at a time."""

    def __init__(self, sessions: SessionStore, queue: FollowUpQueue, config: Callable[[], Config],
                 report: Callable[[list[SessionChange]], None], stopping: Callable[[], bool] = lambda: False,
                 watch_reliable: bool = False) -> None:
        self.ws = sessions.ws
        self.log = WorkspaceLog(self.ws.root)  # its lines begin with the root
        self.sessions = sessions
        self.queue = queue
        self.config = config
        self.report = report  # plugins hear of every change
        self.stopping = stopping
        self.watch_reliable = watch_reliable  # the folder watch reports overflows (inotify)
        self.health = Health()
        self.timers = Timers()
        self.progress = time.monotonic()  # when a batch last finished (for the watchdog)
        self.seen: dict[Key, float] = {}  # session -> when an event of it was last applied

    def start(self, now: float) -> None:
        """Sweep, prune, then apply what waits in the inbox, as a new leader does."""
        self.sweep(now)
        self.prune(now)
        # A batch replayed after a crash must find its queue entries before anything fires;
        # trace lines a dead leader had appended are not appended again.
        self.drain(now, replay=True)
        self.timers.reconcile = now + self.reconcile_interval()
        self.timers.prune = now + PRUNE_INTERVAL

    def step(self, now: float, woken: bool = False) -> float:
        """Do what is due; returns the time of the next deadline."""
        timers = self.timers
        reconcile = now >= timers.reconcile
        if woken or reconcile or (timers.grace is not None and now >= timers.grace):
            self.drain(now)  # one listing serves a wake-up, the reconcile and a grace expiry
        if reconcile:
            timers.reconcile = now + self.reconcile_interval()
        if now >= timers.sweep:
            self.sweep(now)
        if now >= timers.prune:
            self.prune(now)
            timers.prune = now + PRUNE_INTERVAL
        if now >= timers.remirror:
            self.remirror(now)
        deadlines = [timers.reconcile, timers.sweep, timers.prune, timers.remirror]
        if timers.grace is not None:
            deadlines.append(timers.grace)
        return min(deadlines)

    def clock_stepped(self, jump: float) -> None:
        """The wall clock was stepped by `jump` seconds: every timer keeps the time it had
        left, and every session the age it had (so ages here are monotonic ones)."""
        self.timers.shift(jump)
        for key in self.seen:
            self.seen[key] += jump

    def reconcile_interval(self) -> float:
        """How often the inbox is listed without a wake-up: as configured, else rarely where
        the folder watch says when it missed something (inotify), often where it does not."""
        configured = self.config().reconcile_interval
        if configured is not None:
            return configured
        return RELIABLE_RECONCILE if self.watch_reliable else UNRELIABLE_RECONCILE

    # -- the inbox -----------------------------------------------------------------------

    def drain(self, now: float, replay: bool = False) -> None:
        """Apply everything in the inbox, in batches of at most BATCH_MAX, with the runtime
        held open (safedir.holding: a batch opens dozens of files below it)."""
        with safedir.holding(self.ws.runtime):
            self._drain(now, replay)

    def _drain(self, now: float, replay: bool) -> None:
        self.timers.grace = None
        ready = []
        for arrival in inbox.scan(self.ws):
            hold = self.timers.retry_after.get(arrival.name)
            if hold is not None and hold > now:
                self._defer(hold)
            else:
                ready.append(arrival)
        for start in range(0, len(ready), BATCH_MAX):
            if start and self.stopping():
                break  # on SIGTERM: finish the batch in hand, leave the rest in the inbox
            self.batch(ready[start : start + BATCH_MAX], now, replay)
            self.progress = time.monotonic()

    def _defer(self, at: float) -> None:
        grace = self.timers.grace
        self.timers.grace = at if grace is None else min(grace, at)

    def batch(self, arrivals: list[inbox.Arrival], now: float, replay: bool = False) -> None:
        events = self._read(arrivals, now)
        if not events:
            return
        # A batch tried before may have appended its trace lines and then failed (a full disk
        # before the record's save): its retry appends only the lines that are not there yet.
        replay = replay or any(e.file in self.timers.retry_after for e in events)
        try:
            events = self._not_applied(events)
            if not events:
                return
            with open_batch(self.sessions, replay, self.config().host_resume) as batch:
                changes = batch.plan(events)
                queued = self.queue.add(changes, now, self.config().limit_backoff_scale)
                result = batch.commit(queued, now)
        except (LeaseLost, Unreachable):
            raise  # not a batch's failure: this instance must stop leading (workspace.py)
        except (SidecarError, OSError) as exc:
            self.health.error(self.ws.root, f"batch of {len(events)} left in the inbox: {exc}")
            for event in events:
                self.timers.retry_after[event.file] = now + RETRY_SECONDS
            self._defer(now + RETRY_SECONDS)
            return
        for event in events:
            self.seen[(event.host, event.session_id)] = now
        self._finish(result, now)
        self.log.debug("applied %d event(s)", len(result.applied))

    def _not_applied(self, events: list[Event]) -> list[Event]:
        """In Redis mode, the events no leader applied yet: the files of the others (a leader
        applied them, then stopped before removing them) are removed, nothing applied twice."""
        records = self.sessions.records
        if records is None:
            return events
        fresh = set(records.unapplied([e.file for e in events]))
        done = [e.file for e in events if e.file not in fresh]
        if done:
            self.log.info("%d inbox file(s) were applied already; removed", len(done))
            inbox.remove(self.ws, done)
        return [e for e in events if e.file in fresh]

    def _read(self, arrivals: list[inbox.Arrival], now: float) -> list[Event]:
        """The batch's events, read with the inbox held open (safedir.holding)."""
        events = []
        with safedir.holding(self.ws.inbox):  # (each file then one open below it)
            for arrival in arrivals:
                outcome = inbox.read(self.ws, arrival, now)
                if isinstance(outcome, inbox.Deferred):
                    self._defer(outcome.retry_at)
                elif isinstance(outcome, inbox.Rejected):
                    self._reject(outcome, now)
                elif outcome is not None:
                    events.append(outcome)
        records = self.sessions.records
        if records is not None and events:
            on_redis_clock(events, records.machine_offsets())
        return events

    def _reject(self, rejection: inbox.Rejected, now: float) -> None:
        try:
            if inbox.reject(self.ws, rejection, now):
                self.health.rejected += 1
                self.log.warning("rejected %s: %s", inbox.shown(rejection.name),
                                 rejection.reason.replace("\n", " "))
        except OSError as exc:
            self.health.error(self.ws.root, f"cannot set {inbox.shown(rejection.name)} aside: {exc}")

    def _finish(self, result: BatchResult, now: float) -> None:
        self.sessions.fence()  # a leader deposed meanwhile leaves the files to the next one
        inbox.remove(self.ws, result.applied)
        for name, why in result.rejected:
            self._reject(inbox.Rejected(name, why), now)
        for name in result.applied:
            self.timers.retry_after.pop(name, None)
        for name in result.retry:
            self.timers.retry_after[name] = now + RETRY_SECONDS
            self._defer(now + RETRY_SECONDS)
        for error in result.errors:
            self.health.error(self.ws.root, error)
        self.health.applied += len(result.applied)
        if result.changes:
            # A session this batch touched goes stale no sooner than staleAfter from now.
            self.timers.sweep = min(self.timers.sweep, now + self.config().stale_after)
            self.report(result.changes)
        if any(c.kind in (EventKind.SESSION_START, EventKind.SESSION_RESET) for c in result.changes):
            self.sweep(now)

    # -- sweep and retention -------------------------------------------------------------

    def sweep(self, now: float) -> None:
        """Complete the sessions gone stale, and set the timer for when the next one can: no
        timer while no session is active (every batch that touches one sets it again)."""
        cfg = self.config()
        self.timers.sweep = now + cfg.sweep_interval  # a failed sweep is tried again then
        try:
            result = self.sessions.sweep(now, cfg.stale_after, lambda key: self._seen_ago(key, now))
        except (LeaseLost, Unreachable):
            raise
        except (SidecarError, OSError) as exc:
            self.health.error(self.ws.root, f"stale sweep failed: {exc}")
            return
        oldest = now - cfg.stale_after  # forgotten: `updatedAt` says as much
        self.seen = {key: at for key, at in self.seen.items() if at > oldest}
        if not result.spared:
            next_stale = math.inf if result.next_stale is None else result.next_stale
            self.timers.sweep = max(next_stale, now + cfg.sweep_interval)
        for error in result.errors:
            self.health.error(self.ws.root, error)
        if result.changes:
            self.log.info("swept %d stale session(s)", len(result.changes))
            self.report(result.changes)

    def _seen_ago(self, key: Key, now: float) -> float | None:
        """How long ago this instance applied an event of `key` (None: not since it led)."""
        seen = self.seen.get(key)
        return None if seen is None else now - seen

    def remirror(self, now: float) -> None:
        """In Redis mode, write again the files' copy of records a deposed leader's late
        rename set back (coordination/redis/records.py); nothing to do where the files are the record."""
        records = self.sessions.records
        if records is None:
            self.timers.remirror = math.inf
            return
        self.timers.remirror = now + REMIRROR_EVERY
        self.sessions.fence()  # a copy is a leader's to write
        try:
            rewritten = records.remirror()
        except (SidecarError, OSError) as exc:
            self.health.error(self.ws.root, f"cannot compare the files with Redis: {exc}")
            return
        if rewritten:
            self.log.info("wrote again %d file(s) not what Redis holds", rewritten)

    def prune(self, now: float) -> None:
        try:
            removed = inbox.clean_temporaries(self.ws, now)
        except OSError as exc:
            self.health.error(self.ws.root, f"cannot clean the inbox's temporaries: {exc}")
            removed = 0
        if removed:
            self.log.info("removed %d producer temporary file(s) over an hour old", removed)
        try:
            pruned = self.sessions.prune(now, self.config().retention)
        except OSError as exc:
            self.health.error(self.ws.root, f"retention pruning failed: {exc}")
            return
        if pruned:
            self.log.info("pruned %d completed session(s) past retention", pruned)
