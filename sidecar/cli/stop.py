"""`sidecar stop`: this user's daemons serving the registered workspaces (or the one here),
asked to stop with SIGTERM, by the pids their instance files name; `uninstall` stops them so.

Only a pid that is really a `sidecar run` of this user is signalled: a planted instance file
(the runtime is the workspace owner's to write) never makes sidecar signal another process,
and another user's daemon is named, not touched. A daemon stopped so exits cleanly, which a
service manager does not restart (`Restart=on-failure`, launchd's `SuccessfulExit`).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from contextlib import suppress
from pathlib import Path

import typer

from sidecar import config as config_mod
from sidecar.base.errors import SidecarError
from sidecar.base.proc import is_alive
from sidecar.coordination import instances
from sidecar.daemon.running import is_sidecar_run, live_here
from sidecar.layout import Workspace, find_workspace

STOP_WAIT = 10.0  # seconds a daemon gets to finish its step and let go of its workspaces


def stop() -> None:
    """Stop this user's daemons serving the registered workspaces (or the one holding this
    folder), started by hand or by the service; another user's, or a process that is not a
    `sidecar run`, is never signalled.

    Example: sidecar stop
    """
    try:
        roots = served_roots()
    except config_mod.RegistryError as exc:
        typer.echo(f"{exc}; only the workspace holding this folder is looked at", err=True)
        roots = workspace_here()
    stopped, still = stop_daemons(roots)
    if not stopped and not still:
        typer.echo("no daemon of yours serves a registered workspace")
    raise typer.Exit(1 if still else 0)


def served_roots() -> list[Path]:
    """The registered workspaces, and the one holding the current folder (a daemon started by
    hand may serve one that is not registered)."""
    roots = config_mod.load_registry()
    return roots + [root for root in workspace_here() if root not in roots]


def workspace_here() -> list[Path]:
    """The workspace holding the current folder, if any."""
    try:
        here = find_workspace(Path.cwd())
    except OSError:  # the current folder was removed
        return []
    return [] if here is None else [here.root]


def live_daemons(workspaces: list[Workspace]) -> dict[int, list[tuple[Workspace, str]]]:
    """pid -> the (workspace, instance id) it serves, for every live `sidecar run` of this
    machine that serves some of `workspaces`; a pid an instance file names that is no `sidecar
    run` (a planted file) is said and left out: it is never signalled."""
    found: dict[int, list[tuple[Workspace, str]]] = {}
    for ws in workspaces:
        try:
            served = live_here(ws)
        except (OSError, SidecarError) as exc:
            typer.echo(f"sidecar: cannot tell what serves {ws.root}: {exc}", err=True)
            continue
        for pid, instance_id in served:
            if not is_sidecar_run(pid):
                typer.echo(f"sidecar: pid {pid}, named by {ws.instances}/{instance_id}.json, is "
                           "not a `sidecar run`; not signalled", err=True)
                continue
            found.setdefault(pid, []).append((ws, instance_id))
    return found


def _mine(pid: int) -> bool:
    """Whether this user runs `pid` (sidecar stops no one else's daemon)."""
    if sys.platform.startswith("linux"):
        try:
            return os.stat(f"/proc/{pid}").st_uid == os.getuid()
        except OSError:
            return False
    try:
        os.kill(pid, 0)  # elsewhere: allowed to signal it means it is ours (or we are root)
    except OSError:
        return False
    return True


def stop_daemons(roots: list[Path]) -> tuple[int, int]:
    """SIGTERM this user's daemons serving `roots`; (stopped, still serving) counts, each said."""
    daemons = live_daemons([ws for ws in map(Workspace, roots) if ws.context.is_dir()])
    asked = [pid for pid in daemons if _mine(pid)]
    for pid in asked:
        with suppress(OSError):  # gone meanwhile: the wait below sees its lock free
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT

    def serving(pid: int) -> bool:
        return any(instances.is_alive(ws, iid) for ws, iid in daemons[pid])

    # Until each has exited, not only let go of its workspaces: it logs its last line after,
    # which a purge of its log must come later than.
    while any(serving(pid) or is_alive(pid, None) for pid in asked) and time.monotonic() < deadline:
        time.sleep(0.05)
    stopped = still = 0
    for pid, served in daemons.items():
        where = ", ".join(str(ws.root) for ws, _ in served)
        if pid in asked and not serving(pid):
            stopped += 1
            typer.echo(f"stopped the daemon serving {where} (pid {pid})")
        elif serving(pid):
            still += 1
            why = "did not stop in time" if pid in asked else "is another user's"
            typer.echo(f"pid {pid} still serves {where} ({why}): stop it with `kill {pid}`", err=True)
    return stopped, still
