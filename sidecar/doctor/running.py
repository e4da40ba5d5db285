"""What `doctor` reads of the running daemon: its report (followups/run/environment.py), once
it has taken up the settings files as they are now.

A daemon reads config.toml and the environment file again within a couple of seconds of a
change (daemon/settings.py), and `reload` waits until it has. A doctor run just after an edit
or an `integrate` waits as long, so that it checks what the daemon runs follow-ups with now,
not its report of before; a daemon that still has not read them is named, since its report
(and its follow-ups) then follow what the files said before.
"""

from __future__ import annotations

import time
from pathlib import Path

from sidecar import layout
from sidecar.config import settings_files_now
from sidecar.envfile import env_file
from sidecar.followups.run.environment import Reported, reported
from sidecar.hosts.base import Finding, note
from sidecar.layout import Workspace

TAKE_UP = 3.0  # seconds: longer than the daemon's look at the files (REGISTRY_INTERVAL)
LOOK = 0.1


def running(ws: Workspace | None, registered: list[Path]) -> Reported | None:
    """What the running daemon reports of the environment follow-ups get, once it has read
    the settings files as they are (or TAKE_UP has passed): the one serving this workspace,
    else the first that serves a registered one."""
    found = _first(ws, registered)
    deadline = time.monotonic() + TAKE_UP
    while found is not None and behind(found) and time.monotonic() < deadline:
        time.sleep(LOOK)
        found = _first(ws, registered)
    return found


def _first(ws: Workspace | None, registered: list[Path]) -> Reported | None:
    roots = ([ws.root] if ws is not None and ws.root in registered else []) + registered
    for root in roots:
        found = reported(Workspace(root))
        if found is not None:
            return found
    return None


def behind(found: Reported) -> bool:
    """Whether the daemon last read this user's settings files before they changed. Only a
    daemon of this machine that reads this user's config folder can be compared."""
    read = found.settings
    if read is None or not found.here or read.get("folder") != str(layout.config_home()):
        return False
    return read.get("files") != [None if s is None else list(s) for s in settings_files_now()]


def findings(found: Reported | None) -> list[Finding]:
    """The running daemon's settings: not read as they are now, or not readable."""
    if found is None or found.error is not None:
        return []  # none runs, or it cannot run follow-ups at all (said with the hosts)
    if found.resume is None:
        return [note(f"the running sidecar (pid {found.pid}) is older than this one: it does not "
                     "report what its follow-ups resolve, nor read config.toml again when it "
                     "changes", "restart it (sidecar service restart, or stop and start "
                     "`sidecar run`)")]
    error = (found.settings or {}).get("error")
    if isinstance(error, str):
        return [Finding(False, f"the running sidecar (pid {found.pid}) could not read its settings "
                               f"again, and runs with those it had: {error}",
                        "correct the file: the running sidecar reads it again once it changes")]
    if behind(found):
        return [Finding(False, f"the running sidecar (pid {found.pid}) has not read "
                               f"{layout.config_file()} and {env_file()} since they changed: "
                               "it runs follow-ups with what they said before", "sidecar reload")]
    return []
