"""The step loop's clock: a wake of a target already due steps it, and a loop that leaves due
work waiting says so, to the watchdog too.

The loop's clock is a parameter; these tests move it by hand to stand for a clock that jumps
while a worker sleeps on a wait it computed before (real threads, a real notify socket).

Those that start real processes; the rest run in process in tests/unit/test_loop.py.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from helpers import wait_until
from sidecar.config import Config
from sidecar.daemon.process import Daemon
from sidecar.daemon.sdnotify import Notifier
from support.loops import HandClock, sleeping_loop


@pytest.mark.slow
def test_the_watchdog_is_not_fed_while_the_loop_leaves_due_work_waiting(tmp_path: Path,
                                                                        config_home):
    address = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    sock.settimeout(0.1)
    daemon = Daemon([], Config())
    daemon.notifier = Notifier({"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "400000"})
    clock, stepped = HandClock(), []
    daemon.loop = sleeping_loop(clock, stepped)
    watchdog = threading.Thread(target=daemon._watchdog)
    watchdog.start()

    def pinged() -> bool:
        try:
            while True:
                if b"WATCHDOG=1" in sock.recv(4096):
                    return True
        except TimeoutError:
            return False

    try:
        wait_until(pinged, 10)  # fed while the loop keeps up
        clock.now = 3700.0
        pinged()  # a ping sent before the clock moved
        assert not any(pinged() for _ in range(10)), "fed while due work waited"
        clock.now = 0.0  # caught up again
        wait_until(pinged, 10)
    finally:
        daemon.stop.set()
        watchdog.join(5)
        daemon.loop.stop(5)
        sock.close()
