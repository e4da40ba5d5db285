"""The lead of one workspace in Redis: a fenced portalocker `RedisLock` (backend.py says what
lives in Redis, and how a stand-by looks for a lead that is free).

The lead is a lease: a stand-by may take it once the holder's instance key has expired,
`INSTANCE_TTL` after Redis received its last renewal, which is no sooner than that renewal was
sent. So the holder counts its lease from when it *sent* the last renewal Redis confirmed, on
its monotonic clock, and stops `LEASE_MARGIN` before the end: an answer that comes late
(a slow link) never extends it. Within the lease the holder's changes still go through Redis's
own check of its term (records.py); the lease, checked again once Redis answered, keeps
what Redis cannot check (the files' copy written, an inbox file removed) to the holder's time.
A firing's start is guarded by its runner's exclusive start token (followups/run/remote.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import suppress

import portalocker
import redis
from portalocker import exceptions as lock_errors

from sidecar.base.errors import SidecarError
from sidecar.coordination.base import Conflict, LeaseLost
from sidecar.coordination.redis.client import (
    COMPARE_AND_DELETE,
    INSTANCE_TTL,
    PROBE_TIMEOUT,
    Lease,
    instance_key,
    unreachable,
)
from sidecar.coordination.redis.clock import RedisClock
from sidecar.coordination.redis.records import RedisRecords
from sidecar.together import current as block_in_hand

LEASE_MARGIN = 0.3  # seconds before the lease's end that its holder stops

# Whether the lead's channel has a subscriber whose holder record names a live instance: one
# round trip for a stand-by's every look.
_HOLDER_LIVES = """
if redis.call('pubsub', 'numsub', KEYS[1])[2] == 0 then return 0 end
local holder = redis.call('get', KEYS[2])
local instance = holder and string.match(holder, '^([^:]+):')
if not instance then return 0 end
return redis.call('exists', ARGV[1] .. instance)
"""


class RedisLeadership:
    """The lead of one workspace, held through a fenced `RedisLock`."""

    def __init__(self, client: redis.Redis, url: str, lease: Lease, clock: RedisClock,
                 records: RedisRecords, instance_id: str, on_lost: Callable[[], None]) -> None:
        """`client` decodes its replies; `lease` is this process's instance lease, which the
        lead is held within; `records` are the workspace's, whose changes need the lead."""
        self.client = client
        self.url = url
        self.lease = lease
        self.instance_id = instance_id
        self.on_lost = on_lost
        self.channel = records.base + ":leader"
        self.holder_key = records.holder_key
        self.records = records
        self.records.fenced = True  # a daemon's changes need the lead from now on
        # The stand-by's look at who holds the lead, which says "held" while Redis's clock is
        # not steady yet (clock.py).
        self.looked = clock.gate(client.register_script(_HOLDER_LIVES))
        self.delete_if = client.register_script(COMPARE_AND_DELETE)
        self.lock: portalocker.RedisLock | None = None
        self.me: str | None = None  # `<instance>:<fence token>:<nonce>` while held
        self.term = ""

    def _lost(self, lock: portalocker.RedisLock) -> None:
        if lock is self.lock:
            self.on_lost()

    def _holder_lives(self) -> bool:
        """Whether someone holds the lead and its instance's lease runs: then it is left
        alone without asking it (a probe costs the holder an answer, and time)."""
        return bool(self.looked(keys=[self.channel, self.holder_key], args=[instance_key("")]))

    def try_acquire(self) -> bool:
        if not self._lease_runs():  # its own renewals are not confirmed in time: no lead
            try:
                self.client.ping()
            except redis.RedisError as exc:  # Redis does not answer at all
                raise unreachable(self.url, exc) from None
            return False
        try:
            if self._holder_lives():
                return False
            lock = portalocker.RedisLock(
                self.channel, connection=self.client, fail_when_locked=True, timeout=0,
                unavailable_timeout=PROBE_TIMEOUT, fencing=True, interrupt_on_lost=False,
                on_lost=self._lost)
            try:
                lock.acquire()
            except lock_errors.AlreadyLocked:
                lock.release()
                return False
            if not self._lease_runs():  # its round trips took the lease's time: not fit to lead
                lock.release()
                return False
            self.lock = lock
            # The fencing counter starts again at a Redis restart without persistence: the
            # nonce keeps a term's name (and its claims) its own all the same.
            nonce = uuid.uuid4().hex[:8]
            self.me = f"{self.instance_id}:{lock.fence_token}:{nonce}"
            self.term = f"{self.instance_id}.{lock.fence_token}.{nonce}"
            self.client.set(self.holder_key, self.me)
            self.records.me = self.me
            return True
        except (redis.RedisError, lock_errors.LockException) as exc:
            self.release()
            raise unreachable(self.url, exc) from None

    def check(self) -> None:
        """The lease still runs (by this process's clock), then this thread's changes are sent
        to Redis, which applies them only if the lead is still this term's: LeaseLost if not.
        Within a `together` block the changes wait for the block's end, one script for all."""
        lock, me = self.lock, self.me
        try:
            if lock is None or me is None or lock.lost:
                raise LeaseLost("this instance no longer leads the workspace")
            self._within_lease()
        except LeaseLost:
            self.records.discard()  # what this thread put is never sent by a later check
            raise
        block = block_in_hand()
        if block is not None and not block.finishing:
            return
        try:
            self.records.flush()
        except (LeaseLost, Conflict):
            raise  # (a record changed since it was read: its change is made again)
        except SidecarError as exc:
            raise LeaseLost(f"the lead cannot be confirmed: {exc}") from None
        self._within_lease()  # a slow answer: what follows it (the files' copy) is not written

    def _lease_runs(self) -> bool:
        return self.lease.age() <= INSTANCE_TTL - LEASE_MARGIN

    def _within_lease(self) -> None:
        if not self._lease_runs():
            since = self.lease.age()
            raise LeaseLost(f"the lease ran out: its last confirmed renewal was sent {since:.1f}s ago")

    def held(self) -> bool:
        return self.lock is not None and not self.lock.lost

    def claim_lives(self, claimer: str) -> bool:
        return bool(self.term) and claimer == self.term

    def release(self) -> None:
        lock, me = self.lock, self.me
        self.lock = self.me = None
        self.records.me = None
        self.records.discard()
        self.term = ""
        if lock is None:
            return
        with suppress(redis.RedisError):
            if me is not None:
                self.delete_if(keys=[self.holder_key], args=[me])
        with suppress(Exception):  # a dead connection: Redis frees the lock with it
            lock.release()
