"""Durable writes made durable together, for a batch (sessions/batch.py commits its records,
the bindings and the token totals so).

Within `together()`, in this thread, jsonfile's durable writes write their bytes at once but
leave their fsyncs, and a replace's rename, to the block's end: there every file written is
fsynced, then (the leader's fencing check passed) every replace renamed into place, then every
folder a rename changed fsynced. The same fsyncs as one write after another, and still
nothing put in place before its bytes are on disk; but issued together, the file system
commits them together (about a seventh less time, measured with bench/bench_daemon.py).

In Redis mode the fence is where the block's changes go to Redis, the store of record, all
in one script that Redis refuses to a deposed leader (coordination/redis/records.py); the
files' copy of them is written after it passed (`once_accepted`).

A failure anywhere leaves no replace half done: the renames not yet made are not made and
their temporary files are removed, and the block's caller retries (a batch leaves its events
in the inbox; appended trace lines a retry finds are not appended twice).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

_local = threading.local()


class Group:
    """What a `together` block has written and not yet made durable."""

    def __init__(self, fence: Callable[[], None]) -> None:
        self.fence = fence
        #: Set once the block's end checks its fence: a check made before it is the block's
        #: to make (in Redis mode the fence sends the block's changes, all at once).
        self.finishing = False
        self.accepted: list[Callable[[], None]] = []  # run once the fence passed
        self.files: list[int] = []  # descriptors of their own (dups) of the files to fsync
        self.renames: list[tuple[int, str, str]] = []  # (folder, temporary name, final name)

    def sync_later(self, fd: int) -> None:
        self.files.append(os.dup(fd))

    def rename_later(self, folder: int, temp: str, name: str) -> None:
        self.renames.append((os.dup(folder), temp, name))

    def once_accepted(self, then: Callable[[], None]) -> None:
        """Run `then` at the block's end, once its fence passed (a mirror of what the store of
        record accepted is written only then)."""
        self.accepted.append(then)

    def finish(self) -> None:
        for fd in self.files:
            os.fsync(fd)
        self.finishing = True
        self.fence()  # a leader deposed meanwhile puts nothing in place
        for then in self.accepted:
            then()
        folders: dict[tuple[int, int], int] = {}
        while self.renames:
            folder, temp, name = self.renames[0]
            os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
            self.renames.pop(0)
            st = os.fstat(folder)
            folders.setdefault((st.st_dev, st.st_ino), folder)
            self.files.append(folder)  # closed with the rest
        for folder in folders.values():
            os.fsync(folder)

    def abandon(self) -> None:
        """Remove the temporary files of the renames not made."""
        for folder, temp, _name in self.renames:
            with suppress(OSError):
                os.unlink(temp, dir_fd=folder)
            os.close(folder)
        self.renames.clear()

    def close(self) -> None:
        for fd in self.files:
            os.close(fd)
        self.files.clear()


def current() -> Group | None:
    """The group of the `together` block this thread is in, if any."""
    group: Group | None = getattr(_local, "group", None)
    return group


@contextmanager
def together(fence: Callable[[], None] = lambda: None,
             forget: Callable[[], None] = lambda: None) -> Iterator[None]:
    """Make the durable writes of the block durable together at its end (see the module);
    `fence`: checked before the renames; `forget`: called when the block fails, to drop what
    it had not yet sent. Inside another block, it is part of that one."""
    if current() is not None:
        yield
        return
    group = _local.group = Group(fence)
    try:
        yield
        group.finish()
    except BaseException:
        group.abandon()
        forget()
        raise
    finally:
        _local.group = None
        group.close()
