"""`[fleet]` in config.toml: the Redis every machine publishes its sessions to, the name this
machine publishes under, and how often it says it is alive.

Standard library only: config.py checks the table with it, and a daemon with no `[fleet]`
learns here that it publishes nothing, without importing redis-py.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KEYS = frozenset(("url", "machine", "heartbeat"))
SCHEMES = ("redis://", "rediss://", "unix://")
DEFAULT_HEARTBEAT = 2.0
LATE_BEAT = 1.5  # seconds a beat may come late before its machine is unreachable
# A machine's name is a key's part and a column's cell: a host name's characters, no more.
MACHINE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


class FleetTableError(ValueError):
    """`[fleet]` holds a key or a value it cannot take; the message says which."""


@dataclass(frozen=True)
class FleetSettings:
    """Where this machine publishes, under which name, and its heartbeat (seconds)."""

    url: str
    machine: str
    heartbeat: float = DEFAULT_HEARTBEAT

    @property
    def unreachable_after(self) -> float:
        """How long a machine's heartbeat key outlives its beat: a beat and LATE_BEAT more, so a
        busy machine's late beat does not make it unreachable, and a dead one is seen within its
        heartbeat and 2 s (a reader looks every half second)."""
        return self.heartbeat + LATE_BEAT


def parse_table(value: Any) -> dict[str, Any]:
    """`[fleet]` as config.toml gives it, checked: FleetTableError names what is wrong."""
    if not isinstance(value, dict) or set(value) - KEYS:
        raise FleetTableError(f"[fleet] takes {', '.join(sorted(KEYS))}")
    url = value.get("url", "")
    if not isinstance(url, str) or (url and not url.startswith(SCHEMES)):
        raise FleetTableError(f"fleet.url must start with {', '.join(SCHEMES)}")
    machine = value.get("machine", "")
    if not isinstance(machine, str) or (machine and not MACHINE_NAME.fullmatch(machine)):
        raise FleetTableError("fleet.machine must be a host name's letters, digits, '.', '_' "
                              "and '-' (at most 63)")
    heartbeat = value.get("heartbeat", DEFAULT_HEARTBEAT)
    if isinstance(heartbeat, bool) or not isinstance(heartbeat, (int, float)) \
            or not 0.1 <= heartbeat <= 3600:
        raise FleetTableError("fleet.heartbeat must be a number of seconds from 0.1 to 3600")
    return {"url": url, "machine": machine, "heartbeat": float(heartbeat)}


def this_machine() -> str:
    """The host name, cut to what a machine's name may hold (its first label if it is long)."""
    name = socket.gethostname()
    if not MACHINE_NAME.fullmatch(name):
        name = re.sub(r"[^A-Za-z0-9._-]", "-", name.split(".")[0])[:63].lstrip("._-")
    return name or "localhost"


def resolve(table: Mapping[str, Any]) -> FleetSettings | None:
    """The settings in force, None where no URL asks for a fleet."""
    url = table.get("url")
    if not url:
        return None
    return FleetSettings(str(url), str(table.get("machine") or this_machine()),
                         float(table.get("heartbeat", DEFAULT_HEARTBEAT)))
