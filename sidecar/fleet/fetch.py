"""What a reader of the fleet reads from Redis in one go: every machine's heartbeat, and the
rows of the machines asked for.

Read as bytes and decoded here, one value at a time: bytes another machine (or anyone who can
write to that Redis) left that are not UTF-8 make one bad row or one skipped name, named in
`bad`, never a reader that stops. It runs on the reader's own thread (read.py), never on a
view's: a Redis that hangs stalls no screen and no web page.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import redis

from sidecar.coordination.url import masked, scrub
from sidecar.fleet import keys

NOT_UTF8 = None  # a row's value that is not UTF-8: read.py names it as a row that cannot be read


@dataclass(frozen=True)
class Fetched:
    heard: dict[str, str] = field(default_factory=dict)  # machine -> "<last heard> <silent after>"
    alive: dict[str, bool] = field(default_factory=dict)  # machine -> its heartbeat key lives
    published: dict[str, dict[str, str | None]] = field(default_factory=dict)  # machine -> rows
    bad: dict[str, str] = field(default_factory=dict)  # what could not be decoded, in words
    error: str | None = None  # the fleet's Redis could not be read: why (its password masked)


def _text(value: bytes | str) -> str | None:
    if isinstance(value, str):
        return value
    try:
        return value.decode()
    except UnicodeDecodeError:
        return None


def fetch(client: redis.Redis, url: str, machines: set[str] | None, known: set[str]) -> Fetched:
    """Every heartbeat, and the rows of `machines` (None: of every one) and of any machine not
    in `known`; a Fetched with `error` where Redis cannot be read."""
    try:
        return _fetch(client, machines, known)
    except keys.FAILURES as exc:
        return Fetched(error=f"the fleet's Redis {masked(url)} cannot be read: "
                             f"{scrub(str(exc) or type(exc).__name__, url)}")


def _fetch(client: redis.Redis, machines: set[str] | None, known: set[str]) -> Fetched:
    bad: dict[str, str] = {}
    heard: dict[str, str] = {}
    for raw, value in client.hgetall(keys.MACHINES).items():
        name = _text(raw)
        if name is None:
            bad[f"name:{raw!r}"] = f"a machine whose name is not UTF-8 ({raw!r}) is left out"
        else:
            heard[name] = _text(value) or ""
    names = sorted(heard)
    with client.pipeline(transaction=False) as pipe:
        for name in names:
            pipe.exists(keys.alive(name))
        alive = dict(zip(names, (bool(n) for n in pipe.execute()), strict=True))
    wanted = [n for n in names if machines is None or n in machines or n not in known]
    with client.pipeline(transaction=False) as pipe:
        for name in wanted:
            pipe.hgetall(keys.rows(name))
        hashes = pipe.execute()
    published = {name: {(_text(k) or repr(k)): _text(v) for k, v in found.items()}
                 for name, found in zip(wanted, hashes, strict=True)}
    return Fetched(heard, alive, published, bad)
