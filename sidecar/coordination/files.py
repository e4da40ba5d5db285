"""The file backend, the default: every instance on one machine, coordinated by the kernel.

The leader holds `locks/leader.lock` (flock) and the stores lock their own lock files; each
instance holds `locks/instance-<id>.lock` for its whole life, freed by the kernel at its
death; a runner's liveness is its process (pidfd); the folder watch (inotify) is the wake-up.
The kernel keeps a flock until the process dies, so a held lead cannot be lost: its check
asks nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import IO

from sidecar import locks
from sidecar.coordination.base import ONE_MACHINE, RunLease
from sidecar.layout import PLAIN_NAME, Workspace


def life_lock_name(instance_id: str) -> str:
    return f"instance-{instance_id}"


def instance_lives(ws: Workspace, instance_id: str) -> bool:
    """Whether that instance holds its life lock. An id that is not a plain name (read from a
    hand-edited `claimedBy`) names no instance, and never a path."""
    if not PLAIN_NAME.fullmatch(instance_id):
        return False
    return locks.is_held(ws.lock(life_lock_name(instance_id)))


class FileLeadership:
    term = ""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.handle: IO[bytes] | None = None

    def try_acquire(self) -> bool:
        self.handle = locks.try_lock(self.ws.lock("leader"))
        return self.handle is not None

    def check(self) -> None:
        return None  # a flock is the kernel's until the process dies

    def held(self) -> bool:
        return self.handle is not None

    def claim_lives(self, claimer: str) -> bool:
        return instance_lives(self.ws, claimer)

    def release(self) -> None:
        locks.release(self.handle)
        self.handle = None


class FileCoordination:
    shown = "file"
    said = ""
    implements = ONE_MACHINE
    look_every = 0.0
    distributed = False

    def __init__(self) -> None:
        self.life_locks: dict[tuple[str, str], IO[bytes] | None] = {}

    def store_lock(self, ws: Workspace, name: str, timeout: float = 10.0) -> AbstractContextManager[None]:
        return locks.locked(ws.lock(name), timeout)

    def leadership(self, ws: Workspace, instance_id: str, on_lost: Callable[[], None]) -> FileLeadership:
        return FileLeadership(ws)

    def join(self, ws: Workspace, instance_id: str) -> None:
        self.life_locks[(str(ws.root), instance_id)] = locks.try_lock(ws.lock(life_lock_name(instance_id)))

    def leave(self, ws: Workspace, instance_id: str) -> None:
        locks.release(self.life_locks.pop((str(ws.root), instance_id), None))

    def is_alive(self, ws: Workspace, instance_id: str) -> bool:
        return instance_lives(ws, instance_id)

    def changed(self, ws: Workspace) -> None:
        return None  # every instance has its own folder watch

    def records(self, ws: Workspace) -> None:
        return None  # the files are the record

    def run_lease(self, ws: Workspace, entry_id: str) -> RunLease | None:
        return None

    def run_alive(self, ws: Workspace, entry_id: str) -> bool:
        raise AssertionError("the file backend watches runners by their process")

    def ping(self) -> None:
        return None  # the kernel always answers

    def look(self) -> None:
        return None

    def close(self) -> None:
        return None
