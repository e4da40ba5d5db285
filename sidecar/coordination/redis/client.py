"""How sidecar talks to its Redis: the keys' prefix, the timeouts, the clients, and this
process's instance lease as Redis confirmed it. The backend (backend.py), the lead (lead.py),
the clock (clock.py) and the records (records.py) all build on it; it builds on none of them.
"""

from __future__ import annotations

import math
import os
import socket
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from sidecar.config import ConfigError
from sidecar.coordination.base import Unreachable
from sidecar.coordination.url import masked, scrub

PREFIX = "sidecar:"
INSTANCE_TTL = 1.5  # seconds an instance's key outlives its last renewal: the lease
KEEP_EVERY = 0.3  # seconds between renewals (several per lease: a busy machine keeps it)
PROBE_TIMEOUT = 0.5  # how long a stand-by's try waits for a silent holder before reaping it
CONNECT_TIMEOUT = 1.0
COMMAND_TIMEOUT = 2.0

COMPARE_AND_DELETE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


def library() -> str:
    """The folder redis-py is imported from, for a process that runs without `site`."""
    return os.path.dirname(os.path.dirname(os.path.abspath(redis.__file__)))


def instance_key(instance_id: str) -> str:
    """The key that lives while the instance does (renewed by its keeper)."""
    return PREFIX + "instance:" + instance_id


def _driver_options() -> dict[str, object]:
    """The client's name and version for CLIENT SETINFO, given once: redis-py 7 and later,
    left to find its own version, read it from the package's metadata at every new
    connection (about a millisecond: a lead's lock opens one for its subscription)."""
    try:
        from redis.driver_info import DriverInfo
    except ImportError:  # redis-py 5 and 6 read their version once, at import
        return {}
    return {"driver_info": DriverInfo(lib_version=redis.__version__)}


def connect(url: str, decoded: bool = True, retries: int = 1) -> redis.Redis:
    """redis-py's client for the URL, named (`sidecar@<host>:<pid>`) so that CLIENT LIST tells
    whose connection is whose. `retries` quick retries of a failed command, without a back-off:
    sidecar retries at its own pace (a stand-by every 200 ms, the keeper every KEEP_EVERY), and
    `status` must not wait one out. A URL it cannot read is a configuration error (named without
    its password), not a traceback wherever it is first used."""
    try:
        return redis.Redis.from_url(
            url, **_driver_options(), socket_connect_timeout=CONNECT_TIMEOUT,
            socket_timeout=COMMAND_TIMEOUT, decode_responses=decoded, health_check_interval=10,
            retry=Retry(NoBackoff(), retries),
            client_name=f"sidecar@{socket.gethostname()}:{os.getpid()}")
    except ValueError as exc:
        raise ConfigError(f"[coordination] url {masked(url)}: {scrub(str(exc), url)}") from None


def unreachable(url: str, exc: BaseException) -> Unreachable:
    """Redis's failure as sidecar says it: the URL masked, no password in the words."""
    return Unreachable(masked(url), scrub(str(exc) or type(exc).__name__, url))


class Lease:
    """This process's instance lease: it runs `INSTANCE_TTL` from when the last renewal that
    Redis confirmed was *sent* (by the monotonic clock), however late the answer came. The
    keeper renews it; a lead is held only within it (lead.py)."""

    def __init__(self) -> None:
        self.sent = -math.inf

    def renewed(self, sent: float) -> None:
        self.sent = max(self.sent, sent)

    def age(self) -> float:
        """Seconds since the last confirmed renewal was sent."""
        return time.monotonic() - self.sent
