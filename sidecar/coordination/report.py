"""The coordination row of `status`'s report (views/status.py): the backend the instances
coordinate through, and whether it answers now (asked with the configuration `status` runs
with, which the daemon's should be); and each instance's row, as that backend sees them.

Where no coordination service can be configured (no SIDECAR_COORDINATION_URL, a config.toml
that does not mention one) it is the files, said without reading anything else; the backend
and its Redis parts are imported only where one may be.
"""

from __future__ import annotations

import os

from sidecar.base.files import as_text, read_path
from sidecar.base.paths import config_home
from sidecar.base.startup import full_start
from sidecar.base.timeutil import parse_ts

TYPE_CHECKING = False  # typing costs `status` 2 ms (see base/words.py)
if TYPE_CHECKING:
    from typing import Any

    from sidecar.views.report import CoordinationRow, InstanceRow


def plainly_files() -> bool:
    """Whether the backend is certainly the files (config.py reads config.toml with tomllib:
    any mention of coordination is left to it)."""
    url = os.environ.get("SIDECAR_COORDINATION_URL")
    if url is not None:
        return not url
    try:
        config = read_path(os.path.join(config_home(), "config.toml"))
    except (OSError, ValueError):
        return False
    return b"coordination" not in (config or b"")


def file_row() -> CoordinationRow:
    return {"backend": "file", "url": None, "reachable": True, "error": None, "since": None,
            "clockOffsetSeconds": None, "persistence": None, "warnings": []}


def records_in_files(root: str) -> bool:
    """Whether the workspace's files are its store of record (else Redis is, and the files
    its copies: what the store reads is read through it)."""
    if plainly_files():
        return True
    full_start()  # (the backend may need the installed packages: redis)
    from pathlib import Path

    from sidecar.base.errors import SidecarError
    from sidecar.coordination import current
    from sidecar.layout import Workspace

    try:
        return current.get().records(Workspace(Path(root))) is None
    except SidecarError:  # a backend that cannot be made: its row says why
        return True


def coordination_row(roots: list[str], now: float) -> CoordinationRow:
    """The backend's row: the files', or the service's and whether it answers."""
    return file_row() if plainly_files() else _service_row(roots, now)


def _service_row(roots: list[str], now: float) -> CoordinationRow:
    full_start()  # (the backend may need the installed packages: redis)
    from pathlib import Path

    from sidecar.base.errors import SidecarError
    from sidecar.base.timeutil import iso
    from sidecar.coordination import current, instances
    from sidecar.coordination.base import Unreachable
    from sidecar.layout import Workspace

    try:
        backend = current.get()
    except SidecarError as exc:
        return {**file_row(), "backend": "redis", "reachable": False, "error": str(exc)}
    if not backend.distributed:
        return file_row()
    row: CoordinationRow = {**file_row(), "backend": "redis", "url": backend.shown}
    try:
        reading = backend.look()  # a ping that also reads its clock and persistence
        if reading is not None:
            row["clockOffsetSeconds"] = None if reading.skew is None else round(reading.skew.skew, 3)
            persistence: dict[str, Any] = reading.persistence.to_json()
            row["persistence"] = persistence
            row["warnings"] = reading.warnings()
    except Unreachable as exc:
        since = [i.coordination_since for root in roots
                 for i in instances.registered(Workspace(Path(root))) if i.coordination_since]
        row["reachable"], row["error"] = False, exc.why
        row["since"] = min(since) if since else iso(now)
    return row


def instance_rows(root: str, now: float) -> list[InstanceRow]:
    """Every instance that registered with the workspace, and whether it is alive, as the
    configured backend judges it (a service sees instances on other machines)."""
    full_start()

    from sidecar.coordination import instances
    from sidecar.views.hooks import workspace_of

    return [instance_row(seen.info.id, seen.info.to_json(), now, seen.live)
            for seen in instances.seen(workspace_of(root))]


def instance_row(instance_id: str, data: dict[str, Any], now: float, live: bool) -> InstanceRow:
    """InstanceInfo.from_json's reading, as status shows it (`live`: its life lock is held,
    or the coordination service says it lives)."""
    def count(key: str) -> int:
        value = data.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    pid, plugins = data.get("pid"), data.get("plugins")
    beat = parse_ts(as_text(data.get("heartbeatAt")))
    row: InstanceRow = {
        "id": instance_id, "pid": pid if isinstance(pid, int) else None,
        "hostname": as_text(data.get("hostname")), "version": as_text(data.get("version")),
        "build": as_text(data.get("build")), "role": as_text(data.get("role")),
        "startedAt": as_text(data.get("startedAt")), "heartbeatAt": as_text(data.get("heartbeatAt")),
        "heartbeatAgeSeconds": None if beat is None else round(now - beat, 3),
        "live": live,
        "applied": count("applied"), "rejected": count("rejected"), "errors": count("errors"),
        "lastError": as_text(data.get("lastError")) or "",
        "plugins": {k: v for k, v in plugins.items() if isinstance(v, dict)}
        if isinstance(plugins, dict) else {},
    }
    telemetry = data.get("telemetry")
    if isinstance(telemetry, dict):  # only while it exports (telemetry/feed.py's report)
        row["telemetry"] = telemetry
    return row
