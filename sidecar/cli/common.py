"""What every command shares: how a command fails, and the exit codes users see.

An error meant for people (`SidecarError`) that a command does not catch itself reaches
`main`, which prints it as `sidecar: <message>` and exits with FAILURE; a command catches one
only to say more, or to exit with another code.
"""

from __future__ import annotations

from typing import NoReturn

import typer

from sidecar.errors import SidecarError

OK = 0
FAILURE = 1  # the command could not do what it was asked; doctor found something missing
USAGE = 2  # a bad command line, config.toml or registry (typer's own usage errors too)
UNSERVED = 3  # no live daemon serves the workspace (status, reload); the service is not running
NOT_WORKSPACE = 4  # the folder is not a workspace (no .context/)
NO_SERVICE_MANAGER = 5  # `service install`: no user service manager can be reached here
BUSY = 75  # EX_TEMPFAIL: hooks.json is locked by someone else; trying again will do


def fail(message: str, code: int = FAILURE, command: str = "sidecar") -> NoReturn:
    """Say why on stderr, as `<command>: <message>`, and exit with `code`."""
    typer.echo(f"{command}: {message}", err=True)
    raise typer.Exit(code)


def run_app(app: typer.Typer, argv: list[str] | None, prog_name: str | None) -> int:
    """Run a typer app over `argv` (None: sys.argv's arguments); its exit code. An error meant
    for people that no command caught is said here, once, as one line."""
    try:
        app(args=argv, prog_name=prog_name)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (OK if exc.code is None else FAILURE)
    except SidecarError as exc:
        typer.echo(f"sidecar: {exc}", err=True)
        return FAILURE
    return OK
