"""The Redis backend: machines that share a workspace coordinate through one standalone Redis.

Imported only when `[coordination] url` names a Redis (the `redis` extra: redis-py and
portalocker's `RedisLock`). What lives in Redis, under `sidecar:`:

- `<ws>:leader` — the lead, a `RedisLock` (a subscription on that channel: freed when the
  holder's connection dies) with fencing: every grant draws the next number of the lock's
  fence key, and the holder writes `<instance>:<number>` to `<ws>:leader-holder`. A leader
  checks both before every write (`check`), so one that lost the lead (its connection
  killed, or stopped so long that a stand-by reaped it) writes nothing more.
- `instance:<id>` — an instance lives while this key does: a keeper thread renews it every
  `KEEP_EVERY` seconds with a time to live of `INSTANCE_TTL` (the lease).
- `<ws>:lock:<store>` — a store's short lock: a key set only if absent, holding
  `<instance or "cmd">:<random>`, deleted by its holder only, renewed while held by a daemon,
  and broken by a waiter when the instance that holds it no longer lives.
- `<ws>:run:<entry>` — a running follow-up's lease, kept by its runner (followups/run/lease.py).
- `wake:<ws>` — a channel: a machine that saw the workspace's files change publishes on it, so
  the leader (wherever it runs) lists the inbox at once.
- `<ws>:doc:<name>` and the rest of the store of record (redis/records.py): the records a
  leader keeps, whose changes Redis applies only for the lead's current holder.

`<ws>` is `base.workspace_key`. A stand-by looks cheaply (who holds the lead, and whether that
instance's key lives) and only then tries the lock, which asks the holder and reaps it if it
does not answer within `PROBE_TIMEOUT`: a leader SIGSTOPped past its lease is taken over within
a second of the lease's end; one that died is taken over at the stand-by's next look.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

import redis

from sidecar.base.timeutil import now
from sidecar.coordination.base import MANY_MACHINES, RunLease, Unreachable, workspace_key
from sidecar.coordination.redis.client import (
    COMPARE_AND_DELETE,
    INSTANCE_TTL,
    KEEP_EVERY,
    PREFIX,
    Lease,
    connect,
    instance_key,
    library,
    unreachable,
)
from sidecar.coordination.redis.clock import Reading, RedisClock, read
from sidecar.coordination.redis.lead import RedisLeadership
from sidecar.coordination.redis.records import RedisRecords
from sidecar.coordination.url import masked
from sidecar.layout import Workspace
from sidecar.locks import LockTimeout

log = logging.getLogger("sidecar")
# portalocker logs each reaping with the whole client record; sidecar says what it did itself.
logging.getLogger("portalocker").setLevel(logging.ERROR)

STORE_LOCK_TTL = 10_000  # ms; renewed while a daemon holds it, broken when its holder died
BREAK_AFTER = int(2 * INSTANCE_TTL * 1000)  # ms without a renewal before a dead holder's lock breaks
LISTEN_POLL = 0.25  # how often the wake-up listener looks whether the process stops

_COMPARE_AND_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""


class RedisCoordination:
    implements = MANY_MACHINES
    look_every = 0.005  # seconds: a try is a round trip (and a probe of a silent holder)
    distributed = True

    def __init__(self, url: str) -> None:
        self.url = url
        self.shown = masked(url)
        self.said = f", through {self.shown}"
        self.client = connect(url)
        self.members: set[str] = set()  # instance ids whose keys this process renews
        self.held_locks: dict[str, str] = {}  # store lock key -> token, renewed while held
        self.leads: dict[str, RedisLeadership] = {}  # workspace key -> this process's claim
        self.wakes: set[str] = set()  # workspace keys to announce
        self.state = threading.Lock()
        self.poke = threading.Event()
        self.stopping = threading.Event()
        self.keeper: threading.Thread | None = None
        self.listener: threading.Thread | None = None
        self.trouble: tuple[float, str] | None = None  # (since, why) while unreachable
        # The records (redis/records.py): bytes, not decoded; a change never sent twice (a
        # script retried after its answer was lost would apply twice: the step is retried).
        self.raw = connect(url, decoded=False, retries=0)
        self.kept_records: dict[str, RedisRecords] = {}
        self.lease = Lease()  # this process's instance lease, which a lead is held within
        self.delete_if = self.client.register_script(COMPARE_AND_DELETE)
        self._renew = self.client.register_script(_COMPARE_AND_RENEW)
        # Redis's clock, which `now()` keeps to, and its persistence (redis/clock.py); a
        # stand-by takes no lead before the clock is known (`RedisClock.steady`).
        self.clock = RedisClock(self.client)

    # -- errors --------------------------------------------------------------------------

    def unreachable(self, exc: BaseException) -> Unreachable:
        return unreachable(self.url, exc)

    def _noted(self, exc: BaseException | None) -> None:
        """Remember since when the service cannot be reached (status shows it)."""
        with self.state:
            if exc is None:
                if self.trouble is not None:
                    log.info("coordination %s reachable again", self.shown)
                self.trouble = None
            elif self.trouble is None:
                self.trouble = (now(), str(self.unreachable(exc)))
                log.warning("%s", self.trouble[1])

    # -- the keeper thread: leases, held locks, wake-ups ---------------------------------

    def _start_keeper(self) -> None:
        with self.state:
            if self.keeper is None:
                self.keeper = threading.Thread(target=self._keep, name="coordination", daemon=True)
                self.keeper.start()
                # The clock's readings take round trips of their own: on a thread of their own,
                # they never hold a renewal back (a lease counts from the renewal sent).
                threading.Thread(target=self.clock.run, args=(self.stopping, KEEP_EVERY),
                                 name="coordination-clock", daemon=True).start()

    def _keep(self) -> None:
        while not self.stopping.is_set():
            self.poke.wait(KEEP_EVERY)
            self.poke.clear()
            with self.state:
                members, held, wakes = list(self.members), dict(self.held_locks), self.wakes
                self.wakes = set()
            sent = time.monotonic()
            try:
                pipe = self.client.pipeline(transaction=False)
                for member in members:
                    pipe.set(instance_key(member), "1", px=int(INSTANCE_TTL * 1000))
                for key in wakes:
                    pipe.publish(PREFIX + "wake:" + key, "1")
                pipe.execute()
                if members:
                    self.lease.renewed(sent)
                for key, token in held.items():
                    self._renew(keys=[key], args=[token, STORE_LOCK_TTL])
            except redis.RedisError as exc:
                self._noted(exc)
                continue
            except Exception:  # noqa: BLE001 - a dead keeper would let every lease lapse
                log.exception("coordination %s: the keeper's round failed", self.shown)
                continue
            self._noted(None)

    # -- membership ----------------------------------------------------------------------

    def join(self, ws: Workspace, instance_id: str) -> None:
        """The instance's lease, taken at once (a lead is taken only under a lease confirmed
        in time: redis/lead.py), then renewed by the keeper."""
        with self.state:
            self.members.add(instance_id)
        sent = time.monotonic()
        try:
            self.client.set(instance_key(instance_id), "1", px=int(INSTANCE_TTL * 1000))
            self.lease.renewed(sent)
        except redis.RedisError as exc:
            self._noted(exc)  # the keeper tries again
        self._start_keeper()
        self.poke.set()

    def leave(self, ws: Workspace, instance_id: str) -> None:
        """An instance serves many workspaces: its key goes when the process leaves them all
        (`close`), or expires after its death."""

    def is_alive(self, ws: Workspace, instance_id: str) -> bool:
        try:
            return bool(self.client.exists(instance_key(instance_id)))
        except redis.RedisError as exc:
            raise self.unreachable(exc) from None

    # -- store locks ---------------------------------------------------------------------

    @contextmanager
    def store_lock(self, ws: Workspace, name: str, timeout: float = 10.0) -> Iterator[None]:
        key = f"{PREFIX}{workspace_key(ws)}:lock:{name}"
        with self.state:  # a leader's locks name its term: they break once it is deposed
            lead = self.leads.get(workspace_key(ws))
            tag = (lead.term if lead is not None else "") or (min(self.members) if self.members else "cmd")
        token = f"{tag}:{uuid.uuid4().hex}"
        deadline = time.monotonic() + timeout
        delay, next_look = 0.0005, 0.0
        try:
            while not self.client.set(key, token, nx=True, px=STORE_LOCK_TTL):
                if time.monotonic() >= next_look:
                    self._break_if_dead(key)
                    next_look = time.monotonic() + 0.1
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"could not lock {name} of {ws.root} within {timeout:g}s "
                                      f"(coordination {self.shown})")
                time.sleep(delay)
                delay = min(delay * 2, 0.01)
        except redis.RedisError as exc:
            raise self.unreachable(exc) from None
        if tag != "cmd":
            with self.state:
                self.held_locks[key] = token
        try:
            yield
        finally:
            with self.state:
                self.held_locks.pop(key, None)
            with suppress(redis.RedisError):  # it expires; a waiter also breaks it once this instance is gone
                self.delete_if(keys=[key], args=[token])

    def _break_if_dead(self, key: str) -> None:
        """Break a store lock whose holder is gone: its instance's lease has lapsed AND the
        lock itself has not been renewed for BREAK_AFTER (a live holder's keeper renews both
        every KEEP_EVERY), so a holder that is merely slow keeps its lock."""
        token = self.client.get(key)
        if not isinstance(token, str) or ":" not in token:
            return
        holder = token.split(":", 1)[0]
        if self._deposed(key, holder):
            if self.delete_if(keys=[key], args=[token]):
                log.info("a store lock held by a deposed leader (%s) was broken", holder)
            return
        holder = holder.split(".", 1)[0]  # the instance, of a term
        if holder == "cmd" or self.client.exists(instance_key(holder)):
            return
        left = self.client.pttl(key)
        if isinstance(left, int) and 0 <= left <= STORE_LOCK_TTL - BREAK_AFTER:
            if self.delete_if(keys=[key], args=[token]):
                log.info("a store lock held by instance %s, which is gone, was broken", holder)

    def _deposed(self, key: str, holder: str) -> bool:
        """Whether the lock's holder is a leader of an earlier term (`<instance>.<fence>.<nonce>`
        below the lead's current fence): its fencing check fails before any write it makes,
        so the new leader need not wait for its lease (its death, say) to run out."""
        parts = holder.split(".")
        if len(parts) != 3 or not parts[1].isdigit():
            return False
        fence = self.client.get(key.rsplit(":lock:", 1)[0] + ":leader-fence")
        return isinstance(fence, str) and fence.isdigit() and int(parts[1]) < int(fence)

    # -- the store of record ------------------------------------------------------------

    def records(self, ws: Workspace) -> RedisRecords:
        """The workspace's records in Redis, shared by its stores and its lead (redis/lead.py)."""
        key = workspace_key(ws)
        with self.state:
            found = self.kept_records.get(key)
            if found is None:
                found = self.kept_records[key] = RedisRecords(self.raw, ws)
            return found

    # -- the lead ------------------------------------------------------------------------

    def leadership(self, ws: Workspace, instance_id: str, on_lost: Callable[[], None]) -> RedisLeadership:
        self.clock.first()  # before the daemon's first step, which then keeps to Redis's clock
        lead = RedisLeadership(self.client, self.url, self.lease, self.clock, self.records(ws),
                               instance_id, on_lost)
        with self.state:
            self.leads[workspace_key(ws)] = lead
        return lead

    # -- runners and wake-ups ------------------------------------------------------------

    def run_key(self, ws: Workspace, entry_id: str) -> str:
        return f"{PREFIX}{workspace_key(ws)}:run:{entry_id}"

    def run_lease(self, ws: Workspace, entry_id: str) -> RunLease:
        """The runner runs without `site`: it is told where redis-py is (followups/run/)."""
        return RunLease({"SIDECAR_RUN_LEASE": self.run_key(ws, entry_id),
                         "SIDECAR_RUN_WAKE": PREFIX + "wake:" + workspace_key(ws),
                         "SIDECAR_RUN_LIBRARY": library()},
                        self.url.encode())

    def run_alive(self, ws: Workspace, entry_id: str) -> bool:
        try:
            return bool(self.client.exists(self.run_key(ws, entry_id)))
        except redis.RedisError as exc:
            raise self.unreachable(exc) from None

    def changed(self, ws: Workspace) -> None:
        """Announced by the keeper thread: a watch thread never waits on the network."""
        with self.state:
            self.wakes.add(workspace_key(ws))
        self._start_keeper()
        self.poke.set()

    def listen(self, woken: Callable[[str], None]) -> None:
        """Call `woken(workspace key)` (on a thread of its own) for every announced change,
        reconnecting after a failure for as long as the process runs."""
        self.listener = threading.Thread(target=self._listen, args=(woken,),
                                         name="coordination-wake", daemon=True)
        self.listener.start()

    def _listen(self, woken: Callable[[str], None]) -> None:
        while not self.stopping.is_set():
            pubsub = self.client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call, unused-ignore]
            try:
                pubsub.psubscribe(PREFIX + "wake:*")
                _tell(woken, "")  # (re)connected: what was announced meanwhile is listed now
                while not self.stopping.is_set():
                    message = pubsub.get_message(timeout=LISTEN_POLL)
                    if message is not None and message.get("type") == "pmessage":
                        _tell(woken, str(message["channel"])[len(PREFIX + "wake:"):])
            except (redis.RedisError, OSError, ValueError) as exc:
                if self.stopping.is_set():
                    return  # closed under it, as the process stops
                self._noted(exc)
                self.stopping.wait(0.5)
            finally:
                with suppress(redis.RedisError, OSError, ValueError):
                    pubsub.close()

    def ping(self) -> None:
        try:
            self.client.ping()
        except redis.RedisError as exc:
            raise self.unreachable(exc) from None

    def look(self) -> Reading:
        try:
            return read(self.client)
        except redis.RedisError as exc:
            raise self.unreachable(exc) from None

    def close(self) -> None:
        self.stopping.set()
        self.poke.set()
        if self.listener is not None:
            self.listener.join(LISTEN_POLL * 2)
        with self.state:
            members = list(self.members)
            self.members.clear()
        with suppress(redis.RedisError):  # they expire
            if members:
                self.client.delete(*[instance_key(m) for m in members])
        self.client.close()
        self.raw.close()
        self.clock.close()


def _tell(woken: Callable[[str], None], key: str) -> None:
    """A wake-up's listener must outlive a failure of what it wakes."""
    try:
        woken(key)
    except Exception:  # noqa: BLE001
        log.exception("a wake-up for %s failed", key or "every workspace")
