"""The exit codes users see, in a module of their own: the commands answered without typer
(sidecar/__init__.py) use them without loading the command line framework common.py brings."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs the fast commands 2 ms (see base/words.py)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

OK = 0
FAILURE = 1  # the command could not do what it was asked; doctor found something missing
USAGE = 2  # a bad command line, config.toml or registry (typer's own usage errors too)
UNSERVED = 3  # no live daemon serves the workspace (status, reload); the service is not running
NOT_WORKSPACE = 4  # the folder is not a workspace (no .context/)
NO_SERVICE_MANAGER = 5  # `service install`: no user service manager can be reached here
NO_ROOM = 6  # status: a served workspace's runtime is on a full disk or a read-only mount
BUSY = 75  # EX_TEMPFAIL: hooks.json is locked by someone else; trying again will do


def of_status(report: Mapping[str, Any]) -> int:
    """`status`'s exit code for its report (the full command's and the fast one's): unserved
    or unreachable first, then a runtime without room."""
    if not all(w["served"] for w in report["workspaces"]) or not report["coordination"]["reachable"]:
        return UNSERVED
    return NO_ROOM if any(w["storage"] for w in report["workspaces"]) else OK
