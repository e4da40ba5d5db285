"""`sidecar run`: serve the registered workspaces (or the given ones) in the foreground.

A module of its own with an entry of its own: the launcher (`bin/sidecar`, `python -m sidecar`)
sends `run` here as it sends `emit` to `sidecar.emit`, so the daemon's process never imports
the rest of the command line (the integration code, tomlkit, doctor, the service templates).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import typer

from sidecar import config as config_mod
from sidecar.base.exitcodes import NOT_WORKSPACE, USAGE
from sidecar.cli.common import fail, run_app
from sidecar.layout import find_workspace


def load_config() -> config_mod.Config:
    try:
        return config_mod.load_config()
    except config_mod.ConfigError as exc:
        fail(str(exc), USAGE)


def run(
    root: list[Path] | None = typer.Option(None, "--root", metavar="DIR",
                                           help="Serve this workspace (repeatable)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log every batch."),
) -> None:
    """Serve the registered workspaces (or the given ones) in the foreground.

    Example: sidecar run --root ~/project -v
    """
    from sidecar.daemon.logfile import configure_logging
    from sidecar.daemon.process import serve

    configure_logging(logging.DEBUG if verbose else logging.INFO)
    # The files as they are before they are read: one changed meanwhile is read again.
    read = config_mod.SettingsRead(time.time(), config_mod.settings_files_now())
    config = load_config()
    roots = None
    if root:
        roots = []
        for folder in root:
            ws = find_workspace(folder)
            if ws is None:
                fail(f"{folder} is not in a workspace (no .context/); run `sidecar init "
                     f"{folder}`", NOT_WORKSPACE)
            roots.append(ws.root)
    raise typer.Exit(serve(roots, config, read))


def main(argv: list[str] | None = None) -> int:
    """`sidecar run ARGS...` (`argv`: the arguments after `run`; sys.argv's by default)."""
    import sys

    alone = typer.Typer(add_completion=False)
    alone.command()(run)
    return run_app(alone, sys.argv[2:] if argv is None else argv, "sidecar run")
