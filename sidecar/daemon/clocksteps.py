"""Noticing that the wall clock was stepped: set by hand, stepped by NTP, or run on through a
suspend while the monotonic clock stood still.

sidecar measures durations (delays, timeouts, the stale age, the loop's sleeps) on the
monotonic clock, but it stores wall-clock times (due times, `updatedAt`) and keeps some timers
as wall-clock times too. Each workspace's step compares how far both clocks moved since its
last step; when they disagree by more than the tolerance, the wall clock was stepped by the
difference, and the workspace moves its timers and stored due times by as much.
"""

from __future__ import annotations

TOLERANCE = 2.0  # seconds a step must exceed: two clock reads are never exactly together
DRIFT = 0.001  # and the share of the time between steps NTP may slew the clock (500 ppm)


class StepDetector:
    """Tells, at each call, how far the wall clock was stepped since the previous call."""

    def __init__(self) -> None:
        self.last: tuple[float, float] | None = None  # (wall, monotonic) at the last call

    def stepped(self, wall: float, mono: float) -> float:
        """Seconds the wall clock was stepped by since the last call, given both clocks' times
        now (forward is positive); 0.0 when it only ran, and at the first call."""
        last, self.last = self.last, (wall, mono)
        if last is None:
            return 0.0
        elapsed = mono - last[1]
        jump = (wall - last[0]) - elapsed
        return jump if abs(jump) > TOLERANCE + DRIFT * elapsed else 0.0
