"""A step loop on a clock moved by hand; shared by tests/unit/test_loop.py and
tests/daemon/test_loop_daemon.py."""

from __future__ import annotations

from helpers import wait_until
from sidecar.daemon.loop import StepLoop


class HandClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


def sleeping_loop(clock: HandClock, stepped: list[float]) -> StepLoop[str]:
    """A loop with one worker asleep until "t" is due at 3600 by `clock`."""
    def step(name: str, at: float) -> float | None:
        stepped.append(at)
        return at + 3600

    loop: StepLoop[str] = StepLoop(step, clock, workers=1)
    loop.start()
    loop.add("t", 3600.0)
    wait_until(lambda: clock.reads, 5)  # the worker read the clock, holding the lock...
    with loop.cond:
        pass  # ...until it began its wait
    return loop
