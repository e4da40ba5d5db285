"""`sidecar reload`: SIGHUP to every live daemon that serves the workspaces, which re-reads
config.toml and the environment file and looks at the registry again.

A daemon is found by its instance files (`runtime/instances/`), live only while its life lock
is held. The pid in such a file is signalled only if it is this machine's and its process is a
`sidecar run`: a file in a workspace cannot make `reload` (perhaps run as root) signal some
other process.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import typer

from sidecar import config as config_mod
from sidecar.base.errors import SidecarError
from sidecar.base.exitcodes import NOT_WORKSPACE, UNSERVED, USAGE
from sidecar.cli.common import fail
from sidecar.daemon.running import is_sidecar_run, live_here
from sidecar.layout import Workspace, find_workspace


def live_daemons(workspaces: list[Workspace]) -> dict[int, list[Path]]:
    """Each live daemon of this machine that serves some of the workspaces: pid -> roots."""
    found: dict[int, list[Path]] = {}
    for ws in workspaces:
        try:
            served = live_here(ws)
        except (OSError, SidecarError) as exc:
            typer.echo(f"sidecar: cannot tell what serves {ws.root}: {exc}", err=True)
            continue
        for pid, _ in served:
            found.setdefault(pid, []).append(ws.root)
    return found


def _workspaces(root: Path | None) -> list[Workspace]:
    if root is not None:
        ws = find_workspace(root)
        if ws is None:
            fail(f"{root} is not a workspace (no .context/)", NOT_WORKSPACE)
        return [ws]
    try:
        roots = config_mod.load_registry()
    except config_mod.RegistryError as exc:
        fail(str(exc), USAGE)
    return [Workspace(r) for r in roots if Workspace(r).context.is_dir()]


def reload(root: Path | None = typer.Option(None, "--root", metavar="DIR", help="Only the daemons that serve "
                                            "this workspace (default: every registered one)."),
           ) -> None:
    """Tell the running daemons to re-read config.toml and the environment file (SIGHUP).

    Example: sidecar reload
    """
    daemons = live_daemons(_workspaces(root))
    signalled = 0
    for pid, roots in sorted(daemons.items()):
        if not is_sidecar_run(pid):
            typer.echo(f"sidecar: pid {pid} (named by {roots[0]}/.context/runtime/instances) is "
                       f"not a `sidecar run`; not signalled", err=True)
            continue
        try:
            os.kill(pid, signal.SIGHUP)
        except ProcessLookupError:
            continue  # it ended meanwhile
        except PermissionError:
            typer.echo(f"sidecar: pid {pid} is another user's daemon; not signalled (run "
                       f"`sidecar reload` as that user, or `systemctl reload` its service)",
                       err=True)
            continue
        signalled += 1
        typer.echo(f"sent SIGHUP to the daemon with pid {pid} (serving {len(roots)} of these workspace(s))")
    if not signalled:
        fail("no running daemon of yours serves " + (str(root) if root else
              "the registered workspaces") + "; nothing to reload", UNSERVED)
