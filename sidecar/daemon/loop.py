"""Steps every workspace from a few threads and one timer heap.

Each workspace is a steppable object: `step(now) -> deadline`. The heap holds each one's next
deadline; a wake-up (an inbox arrival, a finished process, a signal) moves it to now. A small
fixed pool of threads takes whatever is due, earliest first, and never steps one workspace in
two threads at once, so a workspace that blocks for a while (a lock another program holds)
delays only itself. Nothing wakes for a workspace that has nothing due.

Deadlines are on the monotonic clock: a wall clock set back or forward (by hand, by NTP, by a
suspend) neither stretches a sleep nor makes the heap's order lie.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger("sidecar")

T = TypeVar("T")

WORKERS = 4


class StepLoop(Generic[T]):
    """`add` a target with its first deadline; `wake` it; `run_step(target, now)` is called from
    the pool when due and returns the target's next deadline (None: drop the target)."""

    def __init__(self, run_step: Callable[[T, float], float | None],
                 clock: Callable[[], float] = time.monotonic, workers: int = WORKERS) -> None:
        self.run_step = run_step
        self.clock = clock
        self.cond = threading.Condition()
        self.heap: list[tuple[float, int, T]] = []
        self.due: dict[T, float] = {}  # each target's live heap entry (others are stale)
        self.busy: dict[T, float] = {}  # target -> when its step began (monotonic)
        self.woken: set[T] = set()  # woken while busy: stepped again at once after
        self.order = itertools.count()
        self.stopped = False
        self.threads = [threading.Thread(target=self._work, name=f"step-{i}", daemon=True)
                        for i in range(workers)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def add(self, target: T, when: float) -> None:
        with self.cond:
            self._schedule(target, when)

    def wake(self, target: T) -> None:
        with self.cond:
            if target in self.busy:
                self.woken.add(target)
            elif target in self.due:
                self._schedule(target, self.clock())

    def __len__(self) -> int:
        with self.cond:
            return len(self.due) + len(self.busy)

    def busy_since(self) -> dict[T, float]:
        """The targets being stepped now, and since when (monotonic)."""
        with self.cond:
            return dict(self.busy)

    def stalled_for(self) -> float:
        """How long a due target has waited while a worker sat idle (0.0: none has): a loop
        that stopped stepping, which no hung step shows. While every worker is busy, waiting
        is the steps' doing, and `busy_since` tells whether they hang."""
        with self.cond:
            if self.stopped or len(self.busy) >= len(self.threads) or not self.due:
                return 0.0
            return max(0.0, self.clock() - min(self.due.values()))

    def stop(self, timeout: float) -> None:
        """Let steps in hand finish (up to `timeout`), then return; nothing new starts."""
        with self.cond:
            self.stopped = True
            self.cond.notify_all()
        end = time.monotonic() + timeout
        for thread in self.threads:
            if thread.is_alive():
                thread.join(max(0.0, end - time.monotonic()))

    def _schedule(self, target: T, when: float) -> None:
        current = self.due.get(target)
        if current is None or when < current:
            self.due[target] = when
            heapq.heappush(self.heap, (when, next(self.order), target))
        # An idle worker looks again, even when the deadline stands: it may be due already
        # while a worker still sleeps on a wait computed before.
        self.cond.notify()

    def _take(self) -> T | None:
        """The earliest due target, taken out of the heap; None once stopped."""
        with self.cond:
            while not self.stopped:
                while self.heap and self.due.get(self.heap[0][2]) != self.heap[0][0]:
                    heapq.heappop(self.heap)  # stale: the target was rescheduled or removed
                if not self.heap:
                    self.cond.wait()
                    continue
                when, _, target = self.heap[0]
                wait = when - self.clock()
                if wait > 0:
                    self.cond.wait(wait)
                    continue
                heapq.heappop(self.heap)
                del self.due[target]
                self.busy[target] = time.monotonic()
                if self.heap:
                    self.cond.notify()  # another worker takes what else is due
                return target
            return None

    def _work(self) -> None:
        while (target := self._take()) is not None:
            try:
                deadline = self.run_step(target, self.clock())
            except Exception:  # a step that escapes its own handling must not end the worker
                log.exception("a step failed; tried again in a second")
                deadline = self.clock() + 1.0
            with self.cond:
                del self.busy[target]
                if target in self.woken:
                    self.woken.discard(target)
                    deadline = self.clock() if deadline is not None else None
                if deadline is not None and not self.stopped:
                    self._schedule(target, deadline)
