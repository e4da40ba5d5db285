"""The daemon's log as a file, for `sidecar logs`: size-capped, rotated, shared by instances.

stderr stays the daemon's main log (journald and launchd keep it), but where no service manager
keeps it, nothing would. So every record is also appended to `daemon.log` in the user's state
folder (layout.daemon_log): one line per record, `<UTC time> <pid> <LEVEL> <message>`, the
lines after a message's first (a traceback) indented, so a reader can tell records apart.

Several daemons of one user (instances serving the same workspaces, a `sidecar run` beside the
service) append to the same file: each line is one `write` on an O_APPEND descriptor, so lines
never mix. At MAX_BYTES the file is rotated (daemon.log -> daemon.log.1 ... .BACKUPS) under a
lock, by whichever daemon gets there first; the others see the file they hold was renamed and
reopen the new one. The file is private (0600, its folder 0700) and opened without following
a link, and only if the folder and the file are the daemon's user's: root never writes (or
makes) a log in a user's tree (layout.is_mine). A log that cannot be written is said once on
stderr and tried again RETRY_SECONDS later (a full disk, a folder briefly gone): logging never
stops the daemon, and a passing failure does not lose the file for the daemon's life.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import sys
import time
from contextlib import suppress
from pathlib import Path

from sidecar import layout
from sidecar.base.timeutil import iso

MAX_BYTES = 2 * 1024 * 1024
BACKUPS = 3  # so at most 8 MiB of log
RETRY_SECONDS = 60.0


class LineFormatter(logging.Formatter):
    """`2026-12-01T20:05:36.123Z 4242 INFO message`, continuation lines indented."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record).replace("\n", "\n  ")
        return f"{iso(record.created)} {record.process} {record.levelname} {text}"


class SharedLogFile(logging.Handler):
    """Appends each record to `path`, rotating it at `max_bytes` (see the module's doc)."""

    def __init__(self, path: Path, max_bytes: int = MAX_BYTES, backups: int = BACKUPS) -> None:
        super().__init__()
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self.fd: int | None = None
        self.retry_seconds = RETRY_SECONDS
        self.retry_at: float | None = None  # monotonic; set while the file cannot be written
        self.setFormatter(LineFormatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if self.retry_at is not None and time.monotonic() < self.retry_at:
            return
        try:
            data = (self.format(record) + "\n").encode("utf-8", "replace")
            fd = self._current()
            if os.fstat(fd).st_size + len(data) > self.max_bytes:
                self._rotate()
                fd = self._current()
            os.write(fd, data)
        except OSError as exc:
            if self.retry_at is None:  # said once per failure, not at every retry
                sys.stderr.write(f"WARNING cannot write the log file {self.path}: {exc.strerror or exc}; "
                                 f"logging to stderr only, trying again every {self.retry_seconds:g} s\n")
            self.retry_at = time.monotonic() + self.retry_seconds
            return
        if self.retry_at is not None:
            self.retry_at = None
            sys.stderr.write(f"INFO the log file {self.path} is written again\n")

    def _current(self) -> int:
        """The descriptor of the file now at `path` (reopened if another daemon rotated it)."""
        if self.fd is not None:
            with suppress(FileNotFoundError):
                at_path = os.stat(self.path)
                held = os.fstat(self.fd)
                if (at_path.st_dev, at_path.st_ino) == (held.st_dev, held.st_ino):
                    return self.fd
            os.close(self.fd)
            self.fd = None
        if not layout.is_mine(self.path.parent):
            raise PermissionError(errno.EACCES, f"{self.path.parent} is not this user's "
                                  f"(uid {os.geteuid()}); nothing is written there")
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        if os.fstat(fd).st_uid != os.geteuid():
            os.close(fd)
            raise PermissionError(errno.EACCES, f"{self.path} is not this user's "
                                  f"(uid {os.geteuid()}); nothing is written there")
        self.fd = fd
        return fd

    def _rotate(self) -> None:
        lock_path = self.path.with_name(self.path.name + ".lock")
        lock = os.open(lock_path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if os.stat(self.path).st_size <= self.max_bytes // 2:
                    return  # another daemon rotated it while this one waited for the lock
            except FileNotFoundError:
                return
            for n in range(self.backups - 1, 0, -1):
                older = self.path.with_name(f"{self.path.name}.{n}")
                if older.exists():
                    os.replace(older, self.path.with_name(f"{self.path.name}.{n + 1}"))
            os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))
        finally:
            os.close(lock)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        super().close()


def rotated(path: Path, backups: int = BACKUPS) -> list[Path]:
    """The log's files, oldest first: daemon.log.3, .2, .1, daemon.log."""
    return [path.with_name(f"{path.name}.{n}") for n in range(backups, 0, -1)] + [path]


def configure_logging(level: int = logging.INFO) -> None:
    """Plain lines on stderr (journald and launchd add their own timestamps), and the same
    records, timed, in the user's daemon.log for `sidecar logs` (daemon/logfile.py)."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    root = logging.getLogger("sidecar")
    root.handlers[:] = [handler, SharedLogFile(layout.daemon_log())]
    root.setLevel(level)
