"""In Redis mode a leader reads the times a machine's hooks stamped on Redis's clock: each
event's time gets the offset its machine's daemon measured (daemon/ingest.py)."""

from __future__ import annotations

from sidecar.daemon.ingest import on_redis_clock
from sidecar.inbox.events import parse


def event(space: str | None, ts: float):
    meta = f',"hostSpace":"{space}"' if space else ""
    data = (f'{{"event":"Stop","session_id":"s","host":"chaos","ts":{ts}'
            f'{meta}}}').encode()
    return parse(data, f"{ts}-{space}.json", ts)


def test_each_event_gets_its_machines_offset_and_an_unknown_machine_none():
    ahead, behind, unknown, bare = (event("boot-a/1", 1000.0), event("boot-b/2", 1000.0),
                                    event("boot-c/3", 1000.0), event(None, 1000.0))
    on_redis_clock([ahead, behind, unknown, bare], {"boot-a/1": -90_000.0, "boot-b/2": 120.0})
    assert ahead.ts == 1000.0 - 90_000.0  # a machine 25 h ahead stamped 25 h too late
    assert behind.ts == 1120.0
    assert unknown.ts == 1000.0 and bare.ts == 1000.0  # no daemon there measured it
