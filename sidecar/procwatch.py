"""Processes: who is alive, and a watch that says when one exits.

A process is named by its pid and its start time (base/proc.py reads both from /proc): a pid
the kernel reused for another process is not the same process.
On Linux the watch holds a pidfd per process (`os.pidfd_open`) and polls them all from one
thread, so an exit is noticed at once; elsewhere it checks every second.
"""

from __future__ import annotations

import logging
import os
import select
import threading
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass

from sidecar.base import proc as base_proc

log = logging.getLogger("sidecar")

FALLBACK_INTERVAL = 1.0  # seconds between checks where pidfds are not available


@dataclass(frozen=True)
class Proc:
    pid: int
    start: int | None = None  # None where the start time cannot be read (not Linux)


def is_alive(proc: Proc) -> bool:
    return base_proc.is_alive(proc.pid, proc.start)


def current(pid: int) -> Proc:
    return Proc(pid, base_proc.start_time(pid))


class ProcessWatch:
    """Calls `on_exit(proc)` once for every watched process that exits (or is already gone)."""

    def __init__(self, on_exit: Callable[[Proc], None]) -> None:
        self.on_exit = on_exit
        self.lock = threading.Lock()
        self.by_fd: dict[int, Proc] = {}
        self.polled: set[Proc] = set()  # watched without a pidfd
        self.watched: set[Proc] = set()
        self.poller = select.poll()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        self.poller.register(self.wake_r, select.POLLIN)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="procwatch", daemon=True)
        self.thread.start()

    def watch(self, proc: Proc) -> None:
        with self.lock:
            if proc in self.watched:
                return
            self.watched.add(proc)
        fd = self._pidfd(proc.pid)
        if fd is not None and proc.start is not None and base_proc.start_time(proc.pid) != proc.start:
            os.close(fd)  # the pid belongs to another process now: ours is gone
            fd = None
            self._exited(proc)
            return
        if fd is None:
            if not is_alive(proc):
                self._exited(proc)
                return
            with self.lock:
                self.polled.add(proc)
        else:
            with self.lock:
                self.by_fd[fd] = proc
            self.poller.register(fd, select.POLLIN)
        os.write(self.wake_w, b"x")

    @staticmethod
    def _pidfd(pid: int) -> int | None:
        opener = getattr(os, "pidfd_open", None)
        if opener is None:
            return None
        try:
            fd: int = opener(pid)
        except OSError:
            return None  # gone already (ESRCH), or not allowed: the caller checks liveness
        return fd

    def _exited(self, proc: Proc) -> None:
        with self.lock:
            self.watched.discard(proc)
            self.polled.discard(proc)
        try:
            self.on_exit(proc)
        except Exception:
            log.exception("process watch: handling the exit of %s failed", proc.pid)

    def _run(self) -> None:
        while not self.stopped.is_set():
            with self.lock:
                timeout = FALLBACK_INTERVAL * 1000 if self.polled else None
            for fd, _ in self.poller.poll(timeout):
                if fd == self.wake_r:
                    with suppress(BlockingIOError):
                        os.read(self.wake_r, 4096)
                    continue
                self.poller.unregister(fd)
                os.close(fd)
                with self.lock:
                    proc = self.by_fd.pop(fd)
                self._exited(proc)
            with self.lock:
                polled = list(self.polled)
            for proc in polled:
                if not is_alive(proc):
                    self._exited(proc)

    def stop(self) -> None:
        self.stopped.set()
        os.write(self.wake_w, b"x")
        self.thread.join(5)
