"""`sidecar reload`: SIGHUP to every live daemon that serves the workspaces, which re-reads
config.toml and the environment file and looks at the registry again.

It then waits (up to ACKNOWLEDGED) until each daemon's instance files say it has read them
again, with the time of that read, or that the read failed and why: once `reload` returns,
what `status` and `doctor` read is what the daemon runs with. (A daemon reads the files again
by itself within seconds of a change; `reload` is for now, and for the registry.)

A daemon is found by its instance files (`runtime/instances/`), live only while its life lock
is held. The pid in such a file is signalled only if it is this machine's and its process is a
`sidecar run`: a file in a workspace cannot make `reload` (perhaps run as root) signal some
other process.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import typer

from sidecar.base.errors import SidecarError
from sidecar.base.exitcodes import UNSERVED, USAGE
from sidecar.cli.common import fail, registry_roots, workspace_at
from sidecar.cli.stop import live_daemons
from sidecar.coordination import instances
from sidecar.layout import Workspace


def _workspaces(root: Path | None) -> list[Workspace]:
    if root is not None:
        return [workspace_at(root)]
    return [Workspace(r) for r in registry_roots() if Workspace(r).context.is_dir()]


def reload(root: Path | None = typer.Option(None, "--root", metavar="DIR", help="Only the daemons that serve "
                                            "this workspace (default: every registered one)."),
           ) -> None:
    """Tell the running daemons to re-read config.toml and the environment file (SIGHUP).

    Example: sidecar reload
    """
    daemons = {pid: [ws.root for ws, _ in served]
               for pid, served in live_daemons(_workspaces(root)).items()}
    signalled: dict[int, list[Path]] = {}
    since = time.time()
    for pid, roots in sorted(daemons.items()):
        try:
            os.kill(pid, signal.SIGHUP)
        except ProcessLookupError:
            continue  # it ended meanwhile
        except PermissionError:
            typer.echo(f"sidecar: pid {pid} is another user's daemon; not signalled (run "
                       f"`sidecar reload` as that user, or `systemctl reload` its service)",
                       err=True)
            continue
        signalled[pid] = roots
        typer.echo(f"sent SIGHUP to the daemon with pid {pid} (serving {len(roots)} of these workspace(s))")
    if not signalled:
        fail("no running daemon of yours serves " + (str(root) if root else
              "the registered workspaces") + "; nothing to reload", UNSERVED)
    said = [_acknowledged(pid, roots, since) for pid, roots in sorted(signalled.items())]
    for error in said:
        if error is not None:
            fail(error, USAGE)


ACKNOWLEDGED = 10.0  # seconds to wait for a daemon to say it read its settings again
LOOK = 0.05


def _acknowledged(pid: int, roots: list[Path], since: float) -> str | None:
    """Wait until the daemon's instance file in each of `roots` reports a read of its settings
    begun after `since`, and say how it went; the error, if that read failed."""
    deadline = time.monotonic() + ACKNOWLEDGED
    while True:
        reads = [_read_of(Workspace(r), pid) for r in roots]
        if any(read is None for read in reads):  # a daemon of an earlier version
            typer.echo(f"the daemon with pid {pid} does not say when it has read them (an "
                       "earlier version); its log does")
            return None
        done = [read for read in reads if read and _number(read.get("readAt")) >= since]
        if len(done) == len(reads):
            break
        if time.monotonic() >= deadline:
            typer.echo(f"sidecar: the daemon with pid {pid} has not said within {ACKNOWLEDGED:g}s "
                       "that it read them again; its log may say why", err=True)
            return None
        time.sleep(LOOK)
    error = next((read["error"] for read in done if isinstance(read.get("error"), str)), None)
    if error is not None:
        return (f"the daemon with pid {pid} could not read its settings again, and runs with "
                f"those it had: {error}")
    typer.echo(f"the daemon with pid {pid} read config.toml and the environment file again")
    return None


def _read_of(ws: Workspace, pid: int) -> dict[str, object] | None:
    """The last read of its settings that `pid`'s instance file in `ws` reports: {} while it
    has none to read (being replaced, say), None if it reports none (an earlier version)."""
    here = socket.gethostname()
    try:
        mine = [seen.info for seen in instances.seen(ws)
                if seen.live and seen.info.pid == pid and seen.info.hostname == here]
    except (OSError, SidecarError):  # cannot be told now: looked at again
        return {}
    if not mine:
        return {}
    settings = (mine[0].environment or {}).get("settings")
    return settings if isinstance(settings, dict) else None


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
