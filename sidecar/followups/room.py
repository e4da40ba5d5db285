"""Follow-ups on a disk that cannot take a write (full, over quota, read-only).

A claim is a write of hooks.json, and so are an action's start and its outcome: on such a
disk a claim could be made and its action never started, nor the claim given back, and it
would end `error: interrupted` at the next start. So nothing is claimed while the file system
holding the runtime says it has no room (storage.py); a claim refused, or whose action could
not be started, for want of room is given back (in memory first, where even that cannot be
written, and written at the next step); an outcome that cannot be recorded is recorded at a
later step. Each firing then runs once there is room again. Said once, and once when over.
"""

from __future__ import annotations

from collections.abc import Callable

from sidecar.base import storage
from sidecar.base.wslog import WorkspaceLog
from sidecar.followups.queue import Claimed, FollowUpQueue
from sidecar.layout import Workspace

WAIT = 2.0  # seconds between looks at a file system that had no room


class Room:
    """Whether the follow-ups of one workspace may claim now, and the claims to give back."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.log = WorkspaceLog(ws.root)  # its lines begin with the root
        self.waiting = False  # said that follow-ups wait, and not yet that they go on
        self.until = 0.0  # no claim before this time: the disk had no room at the last look
        self.unreleased: set[str] = set()  # claims given back in memory only, so far

    def lacks(self, now: float) -> bool:
        """Whether nothing may be claimed now (the disk has no room, or had none just now)."""
        if now < self.until:
            return True
        why = storage.trouble(self.ws.runtime)
        if why is None:
            return False
        self._wait(f"{self.ws.runtime} {why}", now)
        return True

    def refused(self, exc: BaseException, now: float) -> bool:
        """Whether `exc` came of a disk without room: then follow-ups wait, as `lacks` says."""
        if not storage.no_room(exc):
            return False
        self._wait(f"{self.ws.runtime} cannot be written ({exc})", now)
        return True

    def _wait(self, why: str, now: float) -> None:
        if not self.waiting:
            self.log.warning("%s; follow-ups wait until there is room", why)
        self.waiting = True
        self.until = now + WAIT

    def written(self, now: float, write: Callable[..., object], *args: object) -> bool:
        """`write(*args)`, a write of the queue's; False where there was no room (said)."""
        try:
            write(*args)
        except OSError as exc:
            if not self.refused(exc, now):
                raise
            return False
        return True

    def claim(self, queue: FollowUpQueue, entry_id: str, now: float, log_path: str) -> Claimed | None:
        """The queue's claim; None where it is not had, a refusal for want of room included."""
        try:
            claimed = queue.claim(entry_id, now, log_path)
        except OSError as exc:
            if not self.refused(exc, now):
                raise
            return None
        if self.waiting:
            self.log.info("there is room again; the follow-ups go on")
            self.waiting = False
        return claimed

    def give_back(self, queue: FollowUpQueue, entry_id: str, now: float) -> None:
        """Release a claim whose action did not start for want of room: it comes due again.
        Where even that cannot be written, it is kept, and released at a later step."""
        try:
            queue.release(entry_id, now)
        except OSError as exc:
            if not self.refused(exc, now):
                raise
            self.unreleased.add(entry_id)
            return
        self.unreleased.discard(entry_id)

    def retry(self, queue: FollowUpQueue, now: float) -> None:
        """Give back the claims kept in memory, once there is room to."""
        if self.unreleased and not self.lacks(now):
            for entry_id in sorted(self.unreleased):
                self.give_back(queue, entry_id, now)
