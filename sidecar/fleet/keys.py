"""The fleet's keys in Redis, and its client.

    sidecar:fleet:machines         hash: machine -> when it last beat (epoch seconds, its clock)
    sidecar:fleet:alive:<machine>  its heartbeat: lives a beat and 1.5 s, renewed at every beat
    sidecar:fleet:rows:<machine>   hash: "<harness id> <workspace>" -> the row's JSON (rowjson)
    sidecar:fleet:changed          channel: a machine's name, whenever its rows changed
    sidecar:fleet:actions:<machine>  stream: cancel / fire requests for its sessions
    sidecar:fleet:reply:<token>    list: the owner's answer to one request (lives 30 s)

Reachability is the heartbeat key's TTL, Redis's own clock: no machine's clock is compared
with another's.
"""

from __future__ import annotations

from pathlib import Path

import redis

from sidecar.config import ConfigError
from sidecar.coordination.redis import client

PREFIX = "sidecar:fleet:"
MACHINES = PREFIX + "machines"
CHANNEL = PREFIX + "changed"
REPLY_TTL = 30  # seconds an answer waits for its asker
ACTIONS_KEPT = 1000  # a stream of requests nobody reads (its machine is gone) stays this small


def alive(machine: str) -> str:
    return PREFIX + "alive:" + machine


def rows(machine: str) -> str:
    return PREFIX + "rows:" + machine


def actions(machine: str) -> str:
    return PREFIX + "actions:" + machine


def reply(token: str) -> str:
    return PREFIX + "reply:" + token


def field(root: Path, harness_id: str) -> str:
    """A row's field in its machine's hash (a harness id holds no space)."""
    return f"{harness_id} {root}"


# What a lost or refused connection raises: the fleet waits and tries again.
FAILURES = (redis.RedisError, OSError)


def connect(url: str, decoded: bool = True) -> redis.Redis:
    """The coordination's client (named, short timeouts, one quick retry) for the fleet's URL;
    TLS (rediss://, its ssl_* options in the query) and ACL users as redis-py reads them.
    `decoded=False`: answers as bytes, for what other machines wrote (fetch.py decodes it)."""
    try:
        return client.connect(url, decoded=decoded, retries=1)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("[coordination] url", "[fleet] url", 1)) from None
