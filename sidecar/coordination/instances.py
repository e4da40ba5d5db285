"""Instances: who serves a workspace, and whether they are alive.

Each instance registers in `runtime/instances/<id>.json` (rewritten at every heartbeat) and
holds `locks/instance-<id>.lock` for its whole life; the kernel frees the lock when the process
dies, which is how the daemon, the scheduler's recovery and `status` tell live from dead. This
module is the only reader and writer of the instance files.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from sidecar import jsonfile, safedir
from sidecar.base.timeutil import iso, now
from sidecar.base.version import __version__, build_id
from sidecar.base.wslog import WorkspaceLog
from sidecar.coordination import current as coordination
from sidecar.coordination.base import Unreachable
from sidecar.coordination.files import life_lock_name
from sidecar.layout import PLAIN_NAME, Workspace

Json = dict[str, Any]


class Reportable(NamedTuple):
    """What the instance file says besides who and when."""

    role: str
    counters: dict[str, int]
    last_error: str
    hooks_error: str | None
    plugins: dict[str, dict[str, int]]
    environment: dict[str, Any]  # what its follow-ups get (followups/run/environment.py): for doctor
    coordination: str | None  # why the coordination service cannot be reached, while so
    telemetry: dict[str, Any] | None = None  # OpenTelemetry export, where configured (telemetry/feed.py)


@dataclass(frozen=True)
class Identity:
    """This process, as other processes and `status` see it."""

    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    pid: int = field(default_factory=os.getpid)
    started: float = field(default_factory=now)
    hostname: str = field(default_factory=socket.gethostname)
    build: str = field(default_factory=build_id)  # version and commit: two builds told apart


@dataclass
class InstanceInfo:
    """`runtime/instances/<id>.json`: what an instance does, and when it last said so."""

    id: str
    pid: int | None
    hostname: str | None
    version: str | None
    started_at: str | None
    heartbeat_at: str | None
    role: str | None  # "leader" or "standby"
    build: str | None = None  # `0.1.0+<commit>`; the version alone if the commit is unknown
    applied: int = 0
    rejected: int = 0
    errors: int = 0
    last_error: str = ""
    hooks_error: str | None = None
    plugins: dict[str, dict[str, int]] = field(default_factory=dict)
    # The environment its follow-ups get: PATH, user, names of host variables set
    # (followups/run/environment.py).
    environment: Json | None = None
    # Why the coordination service could not be reached, and since when, while so.
    coordination_error: str | None = None
    coordination_since: str | None = None
    # OpenTelemetry export, where configured: endpoint, spans exported and dropped, last error.
    telemetry: Json | None = None

    @classmethod
    def from_json(cls, instance_id: str, data: Json) -> InstanceInfo:
        def count(key: str) -> int:
            value = data.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else 0

        def text(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) else None

        pid = data.get("pid")
        plugins = data.get("plugins")
        environment = data.get("environment")
        telemetry = data.get("telemetry")
        return cls(
            id=instance_id, pid=pid if isinstance(pid, int) else None,
            hostname=text("hostname"), version=text("version"), started_at=text("startedAt"),
            heartbeat_at=text("heartbeatAt"), role=text("role"), build=text("build"),
            applied=count("applied"),
            rejected=count("rejected"), errors=count("errors"), last_error=text("lastError") or "",
            hooks_error=text("hooksError"),
            plugins={k: v for k, v in plugins.items() if isinstance(v, dict)}
            if isinstance(plugins, dict) else {},
            environment=environment if isinstance(environment, dict) else None,
            coordination_error=text("coordinationError"),
            coordination_since=text("coordinationSince"),
            telemetry=telemetry if isinstance(telemetry, dict) else None,
        )

    def to_json(self) -> Json:
        return {"id": self.id, "pid": self.pid, "hostname": self.hostname,
                "version": self.version, "startedAt": self.started_at,
                "heartbeatAt": self.heartbeat_at, "role": self.role, "build": self.build,
                "lastError": self.last_error,
                "hooksError": self.hooks_error, "plugins": self.plugins, "applied": self.applied,
                "rejected": self.rejected, "errors": self.errors, "environment": self.environment,
                "coordinationError": self.coordination_error,
                "coordinationSince": self.coordination_since, "telemetry": self.telemetry}


@dataclass(frozen=True)
class Seen:
    """An instance as `status` shows it: its file, and whether its life lock is held."""

    info: InstanceInfo
    live: bool


def life_lock(ws: Workspace, instance_id: str) -> Path:
    return ws.lock(life_lock_name(instance_id))


def is_alive(ws: Workspace, instance_id: str) -> bool:
    """Whether that instance lives (its life lock, or its lease in the coordination service:
    Unreachable if that cannot say); an id that is not a plain name (read from a hand-edited
    `claimedBy`) names no instance, and never a path."""
    if not PLAIN_NAME.fullmatch(instance_id):
        return False
    return coordination.get().is_alive(ws, instance_id)


class Membership:
    """This instance's registration with one workspace."""

    def __init__(self, ws: Workspace, identity: Identity) -> None:
        self.ws = ws
        self.log = WorkspaceLog(ws.root)  # its lines begin with the root
        self.identity = identity
        self.trouble_since: str | None = None  # when the coordination error began
        self.unwritten: str | None = None  # why the instance file cannot be written, while so

    @property
    def file(self) -> Path:
        return self.ws.instances / f"{self.identity.id}.json"

    def join(self) -> None:
        """Say that this instance lives (its life lock, or its lease in the coordination
        service), until `leave` or the process's death."""
        coordination.get().join(self.ws, self.identity.id)

    def heartbeat(self, role: str, counters: dict[str, int], last_error: str,
                  hooks_error: str | None, plugins: dict[str, dict[str, int]],
                  environment: Json | None = None, coordination_error: str | None = None,
                  telemetry: Json | None = None) -> None:
        """Rewrite this instance's file: who it is, what it does, when it last did it."""
        me = self.identity
        if coordination_error is None:
            self.trouble_since = None
        elif self.trouble_since is None:
            self.trouble_since = iso(now())
        info = InstanceInfo(
            id=me.id, pid=me.pid, hostname=me.hostname, version=__version__,
            started_at=iso(me.started), heartbeat_at=iso(now()), role=role, build=me.build,
            applied=counters.get("applied", 0), rejected=counters.get("rejected", 0),
            errors=counters.get("errors", 0), last_error=last_error, hooks_error=hooks_error,
            plugins=plugins, environment=environment, coordination_error=coordination_error,
            coordination_since=self.trouble_since, telemetry=telemetry,
        )
        try:
            jsonfile.write_json_atomic(self.file, info.to_json(), durable=False)
        except OSError as exc:  # said once (a full disk fails every heartbeat), not each time
            if self.unwritten != str(exc):
                self.log.warning("cannot write heartbeat: %s", exc)
            self.unwritten = str(exc)
            return
        if self.unwritten is not None:
            self.log.info("heartbeat written again")
            self.unwritten = None

    def leave(self) -> None:
        """Remove this instance's file and lock; its registration ends."""
        _unlink(self.file)
        coordination.get().leave(self.ws, self.identity.id)
        _unlink(life_lock(self.ws, self.identity.id))

    def clean_dead(self) -> None:
        """Remove the files of instances that no longer live (none while the coordination
        service cannot say who lives)."""
        for instance_id in _registered(self.ws):
            try:
                dead = instance_id != self.identity.id and not is_alive(self.ws, instance_id)
            except Unreachable:
                return
            if dead:
                _unlink(self.ws.instances / f"{instance_id}.json")
                _unlink(life_lock(self.ws, instance_id))


def _registered(ws: Workspace) -> list[str]:
    try:
        names = sorted(os.listdir(ws.instances))
    except FileNotFoundError:
        return []
    return [n[: -len(".json")] for n in names if n.endswith(".json") and not n.startswith(".")]


def _unlink(path: Path) -> None:
    safedir.unlink(path)  # never through a symlinked folder


def registered(ws: Workspace) -> list[InstanceInfo]:
    """What every instance that registered with the workspace last said of itself."""
    found = []
    for instance_id in _registered(ws):
        try:
            data = jsonfile.read_json(ws.instances / f"{instance_id}.json")
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            found.append(InstanceInfo.from_json(instance_id, data))
    return found


def seen(ws: Workspace) -> list[Seen]:
    """Every instance that registered with the workspace, and whether it is alive
    (Unreachable where the coordination service cannot say)."""
    return [Seen(info, is_alive(ws, info.id)) for info in registered(ws)]


def leader(ws: Workspace, me: str) -> InstanceInfo | None:
    """The live instance, other than `me`, whose file says it leads the workspace."""
    for other in seen(ws):
        if other.live and other.info.role == "leader" and other.info.id != me:
            return other.info
    return None
