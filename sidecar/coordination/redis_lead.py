"""The lead of one workspace in Redis: a fenced portalocker `RedisLock` (redis_backend.py
says what lives in Redis, and how a stand-by looks for a lead that is free)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import portalocker
import redis
from portalocker import exceptions as lock_errors

from sidecar.coordination.base import LeaseLost, workspace_key
from sidecar.coordination.redis_backend import PREFIX, PROBE_TIMEOUT, RedisCoordination
from sidecar.layout import Workspace


class RedisLeadership:
    """The lead of one workspace, held through a fenced `RedisLock`."""

    def __init__(self, coord: RedisCoordination, ws: Workspace, instance_id: str,
                 on_lost: Callable[[], None]) -> None:
        self.coord = coord
        self.instance_id = instance_id
        self.on_lost = on_lost
        self.key = workspace_key(ws)
        base = PREFIX + self.key
        self.channel = base + ":leader"
        self.holder_key = base + ":leader-holder"
        self.lock: portalocker.RedisLock | None = None
        self.me: str | None = None  # `<instance>:<fence token>:<nonce>` while held
        self.term = ""

    def _lost(self, lock: portalocker.RedisLock) -> None:
        if lock is self.lock:
            self.on_lost()

    def _holder_lives(self) -> bool:
        """Whether someone holds the lead and its instance's lease runs: then it is left
        alone without asking it (a probe costs the holder an answer, and time)."""
        return bool(self.coord.holder_lives(keys=[self.channel, self.holder_key],
                                            args=[PREFIX + "instance:"]))

    def try_acquire(self) -> bool:
        try:
            if self._holder_lives():
                return False
            lock = portalocker.RedisLock(
                self.channel, connection=self.coord.client, fail_when_locked=True, timeout=0,
                unavailable_timeout=PROBE_TIMEOUT, fencing=True, interrupt_on_lost=False,
                on_lost=self._lost)
            try:
                lock.acquire()
            except lock_errors.AlreadyLocked:
                lock.release()
                return False
            self.lock = lock
            # The fencing counter starts again at a Redis restart without persistence: the
            # nonce keeps a term's name (and its claims) its own all the same.
            nonce = uuid.uuid4().hex[:8]
            self.me = f"{self.instance_id}:{lock.fence_token}:{nonce}"
            self.term = f"{self.instance_id}.{lock.fence_token}.{nonce}"
            with self.coord.state:
                self.coord.terms[self.key] = self.term
            self.coord.client.set(self.holder_key, self.me)
            return True
        except (redis.RedisError, lock_errors.LockException) as exc:
            self.release()
            raise self.coord.unreachable(exc) from None

    def check(self) -> None:
        lock, me = self.lock, self.me
        if lock is None or me is None or lock.lost:
            raise LeaseLost("this instance no longer leads the workspace")
        try:
            fence, holder = self.coord.client.mget(lock.fence_key, self.holder_key)
        except redis.RedisError as exc:
            raise LeaseLost(f"the lead cannot be confirmed: {self.coord.unreachable(exc)}") from None
        if holder != me or str(fence) != me.split(":")[1]:
            raise LeaseLost(f"another instance leads the workspace now ({holder!r})")

    def held(self) -> bool:
        return self.lock is not None and not self.lock.lost

    def release(self) -> None:
        lock, me = self.lock, self.me
        self.lock = self.me = None
        self.term = ""
        with self.coord.state:
            self.coord.terms.pop(self.key, None)
        if lock is None:
            return
        try:
            if me is not None:
                self.coord.delete_if(keys=[self.holder_key], args=[me])
        except redis.RedisError:
            pass
        try:
            lock.release()
        except Exception:  # noqa: BLE001 - a dead connection: Redis frees the lock with it
            pass
