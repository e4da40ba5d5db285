"""`sidecar uninstall`: the service, every integration, and what still serves, taken out.

What it undoes is what sidecar remembered doing (`owned`): each host's entries come out of
the files as the user had them; files and folders sidecar created go once nothing else is in
them; daemons of this user still serving a workspace (started by hand, say) are asked to
stop (SIGTERM), and any that cannot be are named with their pids. Workspaces' `.context/`
folders stay: they hold the user's records.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from contextlib import suppress
from pathlib import Path

import typer

from sidecar import config as config_mod
from sidecar import layout
from sidecar.base.errors import SidecarError
from sidecar.cli.integrate import record_resume_executable
from sidecar.coordination import instances
from sidecar.daemon.running import is_sidecar_run, live_here
from sidecar.hosts import registry
from sidecar.hosts.base import Host, IntegrateError
from sidecar.hosts.files import owned
from sidecar.install import environment
from sidecar.install import service as service_mod
from sidecar.layout import Workspace, find_workspace

STOP_WAIT = 10.0  # seconds a daemon gets to finish its step and let go of its workspaces
REMOVE_COMMAND = ("sidecar itself is still installed: `pipx uninstall agent-sidecar` (or "
                  "`pip uninstall agent-sidecar`, as it was installed) removes the command")

def uninstall(purge: bool = typer.Option(False, "--purge", help="Also remove the registry, "
                                         "config.toml and the rest of sidecar's own folder.")) -> None:
    """Remove the service and every integration sidecar wrote (each host's files as the user had
    them, minus sidecar's entries), and stop this user's daemons still serving a workspace.
    Workspaces' .context/ folders are left alone.

    Example: sidecar uninstall --purge
    """
    done, failures = _remove_service()
    try:
        roots = _served_roots()  # read before a purge takes the registry away
    except config_mod.RegistryError as exc:  # which daemons to stop cannot be told: no purge
        typer.echo(f"{exc}; daemons serving its workspaces are not looked for, and nothing is "
                   "purged", err=True)
        roots, failures = _here(), failures + 1
    for host in registry.integrable():
        for place in owned.places(host.name):
            done += 1
            failures += _take_out(host, place)
    for removed in owned.remove_created():
        done += 1
        typer.echo(f"removed {removed} (sidecar created it; nothing else is in it)")
    stopped, still = stop_daemons(roots)
    done += stopped + still
    failures += still
    home = layout.config_home()
    if purge and not failures and home.exists():
        done += 1
        shutil.rmtree(home, ignore_errors=True)
        typer.echo(f"removed {home} (registry, config.toml, integrations)")
    if not done:
        typer.echo("nothing left to remove: no service, no integration, no daemon serving"
                   + (f", and {home} is gone" if not home.exists() else ""))
    else:
        typer.echo("workspaces keep their .context/ folders; remove them by hand if you wish")
    typer.echo(REMOVE_COMMAND)
    raise typer.Exit(1 if failures else 0)


def _remove_service() -> tuple[int, int]:
    """(things done, failures) of taking the service out."""
    try:
        plan = service_mod.uninstall()
    except service_mod.ServiceError as exc:
        typer.echo(f"service: {exc}", err=True)
        return 1, 1
    if any(note.startswith("not installed") for note in plan.notes):
        return 0, 0
    typer.echo(f"service: {'; '.join(plan.notes) or f'removed {plan.path}'}")
    return 1, 0


def _take_out(host: Host, place: str) -> int:
    """Take one integration out; 1 if it could not be (said why), else 0."""
    if place == environment.RESUME_PLACE:
        record_resume_executable(host, uninstall=True)
        return 0
    try:
        host.integrate(Path(place), "sidecar", uninstall=True)
    except IntegrateError as exc:
        typer.echo(f"{host.name}: {exc}", err=True)
        return 1
    owned.change(host.name, place, lambda record: record.clear())
    typer.echo(f"{host.name}: removed sidecar's entries from {place}")
    return 0


def _served_roots() -> list[Path]:
    """The registered workspaces, and the one holding the current folder (a daemon started by
    hand may serve one that is not registered)."""
    roots = config_mod.load_registry()
    return roots + [root for root in _here() if root not in roots]


def _here() -> list[Path]:
    """The workspace holding the current folder, if any."""
    try:
        here = find_workspace(Path.cwd())
    except OSError:  # the current folder was removed
        return []
    return [] if here is None else [here.root]


def _live_daemons(roots: list[Path]) -> dict[int, list[tuple[Workspace, str]]]:
    """pid -> the (workspace, instance id) it serves, for every live instance on this host."""
    found: dict[int, list[tuple[Workspace, str]]] = {}
    for root in roots:
        ws = Workspace(root)
        if not ws.context.is_dir():
            continue
        try:
            served = live_here(ws)
        except (OSError, SidecarError) as exc:
            typer.echo(f"cannot tell what serves {root}: {exc}", err=True)
            continue
        for pid, instance_id in served:
            if not is_sidecar_run(pid):  # a planted file: its pid is never signalled
                typer.echo(f"pid {pid}, named by {ws.instances}/{instance_id}.json, is not a "
                           "`sidecar run`; not signalled", err=True)
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
    daemons = _live_daemons(roots)
    asked = [pid for pid in daemons if _mine(pid)]
    for pid in asked:
        with suppress(OSError):  # gone meanwhile: the wait below sees its lock free
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT

    def serving(pid: int) -> bool:
        return any(instances.is_alive(ws, iid) for ws, iid in daemons[pid])

    while any(serving(pid) for pid in asked) and time.monotonic() < deadline:
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
