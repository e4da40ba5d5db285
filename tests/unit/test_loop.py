"""The step loop's clock: a wake of a target already due steps it, and a loop that leaves due
work waiting says so, to the watchdog too.

The loop's clock is a parameter; these tests move it by hand to stand for a clock that jumps
while a worker sleeps on a wait it computed before (real threads, a real notify socket).

In process; those that start real processes are in tests/daemon/test_loop_daemon.py.
"""

from __future__ import annotations

from helpers import wait_until
from sidecar.daemon.loop import StepLoop
from support.loops import HandClock, sleeping_loop


def test_a_wake_of_a_target_due_already_steps_it_while_the_worker_slept_on():
    clock, stepped = HandClock(), []
    loop = sleeping_loop(clock, stepped)
    try:
        clock.now = 7200.0  # its deadline passed, yet the worker sleeps on its hour's wait
        loop.wake("t")
        wait_until(lambda: stepped == [7200.0], 10)
    finally:
        loop.stop(5)


def test_a_loop_that_leaves_due_work_waiting_says_for_how_long():
    clock, stepped = HandClock(), []
    loop = sleeping_loop(clock, stepped)
    try:
        assert loop.stalled_for() == 0.0  # nothing due yet
        clock.now = 3700.0  # due for 100s, and nobody takes it
        assert loop.stalled_for() == 100.0
        assert stepped == []
    finally:
        loop.stop(5)


def test_a_step_that_raises_leaves_the_worker_stepping_the_rest():
    """One worker: if a failing step ended it, the other target would never be stepped."""
    stepped: list[str] = []

    def step(name: str, at: float) -> float | None:
        stepped.append(name)
        if name == "bad" and stepped.count("bad") == 1:
            raise OSError("a tampered runtime, closing")
        return None

    loop: StepLoop[str] = StepLoop(step, workers=1)
    loop.start()
    try:
        loop.add("bad", 0.0)
        wait_until(lambda: "bad" in stepped, 5)
        loop.add("good", 0.0)
        wait_until(lambda: "good" in stepped and stepped.count("bad") == 2, 5)
    finally:
        loop.stop(5)
