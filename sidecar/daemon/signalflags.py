"""The daemon's signals, as flags its main thread acts on.

A handler only sets a flag; the C-level handler also writes a byte to a wake-up pipe
(`signal.set_wakeup_fd`), which the main thread waits on. So a flood of signals re-enters no
code and takes no lock, SIGTERM is heard whatever came before it, and any number of SIGHUPs
waiting is one reload.
"""

from __future__ import annotations

import os
import select
import signal
import threading
from contextlib import suppress


class SignalFlags:
    """SIGTERM and SIGINT: stop; SIGHUP: reload. Install from the main thread."""

    def __init__(self) -> None:
        self.stop = False
        self.reload = False
        self.pipe: int | None = None  # the wake-up pipe's read end, once installed

    def install(self) -> None:
        read_end, write_end = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)  # open while the process is
        self.pipe = read_end
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._noted)

    def _noted(self, signum: int, frame: object) -> None:
        # Only a flag: anything more (a lock, a reload) could be re-entered by the next signal.
        if signum == signal.SIGHUP:
            self.reload = True
        else:
            self.stop = True

    def wait(self, timeout: float, stopping: threading.Event) -> bool:
        """Wait up to `timeout` for a signal (or `stopping`); whether the process is to stop."""
        if self.pipe is None:
            stopping.wait(timeout)  # no signals handled (a daemon run from a test)
        elif not self.stop and not stopping.is_set():
            select.select([self.pipe], [], [], timeout)
            with suppress(BlockingIOError):
                while os.read(self.pipe, 4096):
                    pass  # the bytes only woke us; the flags say which signals came
        if self.stop:
            stopping.set()
        return stopping.is_set()
