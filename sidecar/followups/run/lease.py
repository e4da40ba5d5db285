"""The liveness lease of a running follow-up, kept in Redis by the follow-up's runner itself.

When several machines share a workspace, the instance that leads may run on another machine
than the one where an action runs, and there the runner's pid means nothing. So in Redis mode
the runner keeps a key that expires `TTL_MS` after its last refresh: while the key exists the
action runs; once `LOG.status` exists it has ended; a `LOG.started` with neither means the
machine (or the runner) died, known within `TTL_MS`.

`take(url, key, value)` sets the key (`SET key value PX TTL_MS`) and starts a daemon thread
that refreshes it every third of its lifetime (`PEXPIRE`; the key is set again if it has
vanished, after a restart of Redis, say), reconnecting quietly after a failure until it is
stopped. `Lease.end()` stops the thread, deletes the key and publishes the key's name on the
wake-up channel given to `take`, each best effort: an expiry says the same, only later.

It talks to Redis through redis-py, which reads the same URL as the daemon. The runner runs
without `site`, so the daemon names the folder redis-py is imported from (runner.py). No
message of this module holds a password: errors name the server by host:port or socket path.
"""

import threading
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

TTL_MS = 3000  # a dead machine's follow-up is known dead within 3 s
TIMEOUT_S = 1.0  # to connect, and for each reply
SCHEMES = ("redis://", "rediss://", "unix://")


class LeaseError(Exception):
    """Redis cannot be reached, refused a command, or the URL is not one; never holds a
    password."""


class Refused(LeaseError):
    """The server answered with an error (a wrong password, say): trying again will not help."""


def connect(url: str) -> "redis.Redis":
    """A client for the URL with the runner's own short timeouts and no retries of its own
    (the lease retries at its pace); LeaseError if the URL is not a Redis URL."""
    if not url.startswith(SCHEMES):
        raise LeaseError(f"the coordination URL must start with {', '.join(SCHEMES)}")
    try:
        return redis.Redis.from_url(url, socket_connect_timeout=TIMEOUT_S,
                                    socket_timeout=TIMEOUT_S, retry=Retry(NoBackoff(), 0))
    except ValueError as exc:
        raise LeaseError(_masked(str(exc), url)) from None


def where(client: "redis.Redis") -> str:
    """The server, for messages: host:port or the socket's path (never the password)."""
    options = client.connection_pool.connection_kwargs
    if "path" in options:
        return str(options["path"])
    host = str(options.get("host", "localhost"))
    return f"[{host}]:{options.get('port', 6379)}" if ":" in host else f"{host}:{options.get('port', 6379)}"


def _masked(text: str, url: str, client: "redis.Redis | None" = None) -> str:
    secrets = [url]
    if client is not None:
        options = client.connection_pool.connection_kwargs
        secrets += [str(options[name]) for name in ("password",) if options.get(name)]
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def failure(client: "redis.Redis", url: str, exc: "redis.RedisError") -> LeaseError:
    """Redis's error in the runner's words: a refusal (Refused) or a server out of reach."""
    said = _masked(str(exc) or type(exc).__name__, url, client)
    if isinstance(exc, (redis.ResponseError, redis.AuthenticationError)):
        return Refused(f"Redis at {where(client)}: {said}")
    return LeaseError(f"cannot reach Redis at {where(client)}: {said}")


class Lease:
    """A key that lives while its holder refreshes it: see the module's docstring."""

    def __init__(self, url: str, key: str, value: str, ttl_ms: int = TTL_MS, wake: str | None = None) -> None:
        self.url, self.key, self.value = url, key, value
        self.ttl_ms, self.wake = ttl_ms, wake
        self.refresh_s = ttl_ms / 3 / 1000  # three a lifetime: one lost never lets it lapse
        self.client = connect(url)
        self._lock = threading.Lock()  # one command at a time; and none after end()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._keep, name="lease", daemon=True)

    def set(self) -> None:
        """Set the key now, connecting if need be; LeaseError if that cannot be done."""
        try:
            self.client.set(self.key, self.value, px=self.ttl_ms)
        except redis.RedisError as exc:
            raise failure(self.client, self.url, exc) from None

    def start(self) -> None:
        self._thread.start()

    def _keep(self) -> None:
        while not self._stopped.wait(self.refresh_s):
            with self._lock:
                if self._stopped.is_set():
                    return
                try:
                    if not self.client.pexpire(self.key, self.ttl_ms):
                        self.set()  # gone (Redis restarted, say): the runner runs, so say so
                except (redis.RedisError, LeaseError):
                    self.client.connection_pool.disconnect()  # quietly: the next reconnects

    def end(self, publish: bool = True) -> None:
        """Stop refreshing, delete the key and (with `publish`) publish its name on the
        wake-up channel: best effort, an expiry says the same later."""
        self._stopped.set()
        with self._lock:
            try:
                self.client.delete(self.key)
                if publish and self.wake:
                    self.client.publish(self.wake, self.key)
            except redis.RedisError:
                pass
            finally:
                self.client.close()


def take(url: str, key: str, value: str, ttl_ms: int = TTL_MS, wake: str | None = None,
         within: float = 2.0) -> Lease:
    """Set `key` to `value` for `ttl_ms` and keep it refreshed until `Lease.end()`, trying
    to reach Redis for up to `within` seconds; LeaseError (naming no password) if it cannot."""
    lease = Lease(url, key, value, ttl_ms, wake)
    deadline = time.monotonic() + within
    while True:
        try:
            lease.set()
            break
        except LeaseError as exc:
            lease.client.connection_pool.disconnect()
            # Connection-level failures may pass (a server starting); a refusal will not.
            if isinstance(exc, Refused) or time.monotonic() + 0.1 >= deadline:
                lease.client.close()
                raise
            time.sleep(0.1)
    lease.start()
    return lease
