"""The fleet row of `status`'s report (views/status.py): whether this machine publishes its
sessions to the fleet now, judged by its heartbeat in the fleet's Redis (asked with the
configuration `status` runs with, which the daemon's should be).

The heartbeat key names the daemon that holds the machine's name (publish.py): where that is
not a daemon of this user on this host (and, where `status` was given workspaces served here,
not one of theirs), this machine's name is held by another daemon and that is said.

Where config.toml does not mention a fleet, that is said without reading anything else; the
configuration and redis-py are imported only where one may be configured.
"""

from __future__ import annotations

import os
import socket

from sidecar.base.files import read_path
from sidecar.base.paths import config_home
from sidecar.base.startup import full_start

TYPE_CHECKING = False  # typing costs `status` 2 ms (see base/words.py)
if TYPE_CHECKING:
    from sidecar.views.report import FleetRow


def plainly_none() -> bool:
    """Whether no fleet is configured, certainly (config.py judges any mention of one)."""
    try:
        config = read_path(os.path.join(config_home(), "config.toml"))
    except (OSError, ValueError):
        return False
    return b"fleet" not in (config or b"")


def is_ours(holder: str, roots: list[str]) -> bool:
    """Whether the holder ("<host> <uid> <pid> …") is this user's daemon here, and one that
    serves `roots` where any of them is served here."""
    host, uid, pid = (holder.split(" ") + ["", "", ""])[:3]
    if host != socket.gethostname() or uid != str(os.getuid()):
        return False
    from pathlib import Path

    from sidecar.base.errors import SidecarError
    from sidecar.daemon.running import live_here
    from sidecar.layout import Workspace

    serving: set[str] = set()
    for root in roots:
        try:
            serving.update(str(p) for p, _ in live_here(Workspace(Path(root))))
        except (OSError, SidecarError):
            continue
    return not serving or pid in serving


def fleet_row(roots: list[str] | None = None) -> FleetRow | None:
    """None without a fleet; else where it publishes, as which machine, and whether its
    heartbeat is there now (a daemon publishing), or why it cannot be said."""
    if plainly_none():
        return None
    full_start()  # (redis-py: the installed packages)
    from sidecar.config import ConfigError, load_config
    from sidecar.coordination.url import masked, scrub
    from sidecar.fleet import keys
    from sidecar.fleet.settings import resolve

    try:
        settings = resolve(load_config().fleet)
    except ConfigError as exc:
        return {"url": None, "machine": None, "publishing": False, "error": str(exc)}
    if settings is None:
        return None
    row: FleetRow = {"url": masked(settings.url), "machine": settings.machine, "publishing": False,
                     "error": None}
    try:
        client = keys.connect(settings.url)
        try:
            holder = client.get(keys.alive(settings.machine))
        finally:
            client.close()
    except (ConfigError, *keys.FAILURES) as exc:
        row["error"] = scrub(str(exc) or type(exc).__name__, settings.url)
    else:
        row["publishing"] = holder is not None and is_ours(str(holder), roots or [])
        if holder is not None and not row["publishing"]:
            row["error"] = keys.held_words(settings.machine)
    if not row["publishing"] and row["error"] is None:
        row["error"] = f"no heartbeat from {settings.machine}: is its daemon running?"
    return row
