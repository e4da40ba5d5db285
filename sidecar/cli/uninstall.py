"""`sidecar uninstall`: the service, every integration, and what still serves, taken out.

What it undoes is what sidecar remembered doing (`owned`): each host's entries come out of
the files as the user had them; files and folders sidecar created go once nothing else is in
them; daemons of this user still serving a workspace (started by hand, say) are asked to
stop (SIGTERM), and any that cannot be are named with their pids. Workspaces' `.context/`
folders stay: they hold the user's records.
"""

from __future__ import annotations

import shutil
from contextlib import suppress
from pathlib import Path

import typer

from sidecar import config as config_mod
from sidecar import layout
from sidecar.cli.integrate import record_resume_executable
from sidecar.cli.stop import served_roots, stop_daemons, workspace_here
from sidecar.daemon.logfile import rotated
from sidecar.hosts import registry
from sidecar.hosts.base import Host, IntegrateError
from sidecar.hosts.files import owned
from sidecar.install import environment
from sidecar.install import service as service_mod

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
        roots = served_roots()  # read before a purge takes the registry away
    except config_mod.RegistryError as exc:  # which daemons to stop cannot be told: no purge
        typer.echo(f"{exc}; daemons serving its workspaces are not looked for, and nothing is "
                   "purged", err=True)
        roots, failures = workspace_here(), failures + 1
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
    if purge and not failures:
        done += _purge_state()
    if not done:
        typer.echo("nothing left to remove: no service, no integration, no daemon serving"
                   + (f", and {home} is gone" if not home.exists() else ""))
    else:
        typer.echo("workspaces keep their .context/ folders; remove them by hand if you wish")
    typer.echo(REMOVE_COMMAND)
    raise typer.Exit(1 if failures else 0)


def _purge_state() -> int:
    """Remove the daemon's log (and its rotations and lock) from the state folder, and the
    folder once nothing else is in it; 1 if anything was there, else 0."""
    log = layout.daemon_log()
    written = [*rotated(log), log.with_name(log.name + ".lock")]
    gone = [path for path in written if path.is_file() and not path.is_symlink()]
    for path in gone:
        path.unlink(missing_ok=True)
    with suppress(OSError):  # not empty: something of the user's is in it
        log.parent.rmdir()
        gone.append(log.parent)
    if gone:
        typer.echo(f"removed {log.name} and its rotations from {log.parent}")
    return 1 if gone else 0


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
