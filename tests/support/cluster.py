"""Several "machines" (support/machines.py) serving one workspace through a real Redis
(support/redis_server.py): its configuration, its sidecars, who leads, and what each said.

Every daemon of a test shares the test's XDG_STATE_HOME, so `lead_changes` reads one log:
each line is timed to the millisecond and names the instance that took or lost the lead.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import orjson

from helpers import SIDECAR, instance_docs, wait_until
from sidecar.base.ids import harness_id
from sidecar.base.timeutil import parse_ts
from sidecar.layout import Workspace, daemon_log
from support.machines import Machine
from support.redis_server import RedisServer

LEADING = re.compile(r"^(\S+) \d+ \w+ (\S+): leading \(instance (\w+)")
STEPPED_DOWN = re.compile(r"^(\S+) \d+ \w+ (\S+): no longer leading \(instance (\w+)\)")


def coordinate_through(config_home: Path, server: RedisServer) -> None:
    """Make the test's config.toml name the server (every daemon and command reads it)."""
    with open(config_home / "config.toml", "a") as config:
        config.write(f'\n[coordination]\nurl = "{server.url}"\n')


def start_sidecar(machine: Machine, ws: Workspace) -> Machine:
    """Boot `machine` running `sidecar run -v` for the workspace."""
    return machine.start([SIDECAR, "run", "--root", str(ws.root), "-v"], cwd=ws.root)


def leader_of(ws: Workspace, server: RedisServer, machines: list[Machine]) -> Machine | None:
    """The machine whose live instance holds the lead now, by Redis's own word (the holder
    key), and its instance file's hostname (each machine has its own)."""
    with server.client(decode_responses=True) as client:
        holders = [client.get(key) for key in client.keys("sidecar:*:leader-holder")]
        alive = {h.split(":", 1)[0] for h in holders if h and client.exists(
            "sidecar:instance:" + h.split(":", 1)[0])}
    hostnames = {i.get("hostname") for i in instance_docs(ws) if i.get("id") in alive}
    return next((m for m in machines if m.name in hostnames and m.up), None)


def wait_for_leader(ws: Workspace, server: RedisServer, machines: list[Machine],
                    timeout: float = 15) -> Machine:
    return wait_until(lambda: leader_of(ws, server, machines), timeout)


def lead_changes(ws: Workspace) -> list[tuple[float, str, str]]:
    """(time, "lead" or "stepped down", instance) for the workspace, in the log's order."""
    changes = []
    for line in daemon_log().read_text(errors="replace").splitlines():
        for pattern, what in ((LEADING, "lead"), (STEPPED_DOWN, "stepped down")):
            found = pattern.match(line)
            if found and found.group(2) == str(ws.root):
                at = parse_ts(found.group(1))
                assert at is not None, line
                changes.append((at, what, found.group(3)))
    return changes


def inbox_events(ws: Workspace) -> list[str]:
    return [n for n in os.listdir(ws.inbox) if n.endswith(".json")]


def trace_of(ws: Workspace, session: str) -> list[dict]:
    """The trace of a session chaos_emitter.py drove (its host is `chaos`)."""
    path = ws.session_dir(harness_id("chaos", session)) / "trace.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []
