"""The fleet's keys in Redis, and its client.

    sidecar:fleet:machines         hash: machine -> when it last beat (epoch seconds, its clock)
    sidecar:fleet:alive:<machine>  its heartbeat: lives a beat and 1.5 s, renewed at every beat;
                                   holds the owner id of the daemon that holds the name
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


# Set where absent; renewed only by its holder. Answers "" (claimed now), or the holder's id.
CLAIM = """
local held = redis.call('GET', KEYS[1])
if not held then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return ''
end
if held == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return held
"""
# Deleted only by its holder.
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def claim(client: redis.Redis, machine: str, owner: str, ttl_ms: int) -> str:
    """Hold (or keep holding) the machine's name for `ttl_ms`: "" where it was free and is
    `owner`'s now, `owner` where it was already, else who holds it."""
    held = client.eval(CLAIM, 1, alive(machine), owner, ttl_ms)
    return held.decode(errors="replace") if isinstance(held, bytes) else str(held)


def release(client: redis.Redis, machine: str, owner: str) -> None:
    """The machine's heartbeat gone at once, where `owner` holds it (never another's)."""
    client.eval(RELEASE, 1, alive(machine), owner)


def held_words(machine: str) -> str:
    """What a daemon whose name another daemon holds says (its log, `status`)."""
    return (f"the fleet name {machine} is held by another daemon (set [fleet] machine = … to "
            "publish this one too)")


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
