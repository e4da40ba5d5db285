"""Advisory file locks (flock), always on dedicated lock files.

A lock file is never replaced or deleted while in use, so a lock cannot be lost to an atomic
replace; the kernel releases it when its process dies. Callers keep the returned handle:
dropping it releases the lock.

The standard library's `fcntl.flock` is all a lock on one machine needs: importing portalocker
(which this once used) loads redis-py wherever the `redis` extra is installed, and the Redis
lock is imported by the Redis backend alone.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from sidecar import safedir
from sidecar.base.errors import SidecarError


class LockTimeout(SidecarError):
    """A lock could not be taken in time."""


def _open(path: Path) -> IO[bytes]:
    # A lock file (or a folder above it) replaced by a symlink is refused (ELOOP), never
    # opened (and created) wherever the link points.
    fd = safedir.open_file(path, os.O_RDWR | os.O_CREAT)
    return os.fdopen(fd, "r+b", buffering=0)


def try_lock(path: Path) -> IO[bytes] | None:
    """Take the lock without waiting; the open handle holds it, or None if it is held."""
    handle = _open(path)
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held (EWOULDBLOCK), or no lock to be had there (ENOLCK): not taken
        handle.close()
        return None
    return handle


def release(handle: IO[bytes] | None) -> None:
    if handle is not None and not handle.closed:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        finally:
            handle.close()


@contextmanager
def locked(path: Path, timeout: float = 10.0) -> Iterator[None]:
    """Hold an exclusive lock for a short read-modify-write."""
    deadline = time.monotonic() + timeout
    delay = 0.0005
    while True:
        handle = try_lock(path)
        if handle is not None:
            break
        if time.monotonic() >= deadline:
            raise LockTimeout(f"could not lock {path} within {timeout:g}s")
        time.sleep(delay)
        delay = min(delay * 2, 0.02)
    try:
        yield
    finally:
        release(handle)


def is_held(path: Path) -> bool:
    """Whether some open file description holds a lock on `path` (any process, this one too).
    It is only read: a look creates nothing and needs no write access (a live daemon's lock on
    a file system that turned read-only under it is still held)."""
    try:
        # (a FIFO's open never waits, and nothing becomes a controlling terminal)
        fd = safedir.open_file(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:  # held (EWOULDBLOCK), or no lock to be had there (ENOLCK), as try_lock
        return True
    finally:
        os.close(fd)  # (closing lets the lock taken go)
    return False
