"""`sidecar sessions`'s options and help, over cli/sessions.py, which lists them (and answers
without the command line framework too: the dispatch in sidecar/__init__.py)."""

from __future__ import annotations

from pathlib import Path

import typer

from sidecar.base.exitcodes import USAGE
from sidecar.base.timeutil import parse_duration
from sidecar.cli.common import fail, fleet_source
from sidecar.cli.sessions import DEFAULT_LIMIT, listed, workspaces


def sessions(
    root: list[Path] | None = typer.Option(
        None, "--root", metavar="DIR",
        help="List this workspace's sessions instead of every registered workspace's. "
        "Give it more than once for several."),
    active: bool = typer.Option(False, "--active", help="Only sessions that have not ended."),
    since: str | None = typer.Option(
        None, "--since", metavar="DURATION",
        help="Only sessions with activity in this last stretch of time, like 90s, 2h or 1d."),
    limit: int | None = typer.Option(
        None, "--limit", metavar="N", min=1,
        help=f"Show at most this many sessions, newest first. The default is {DEFAULT_LIMIT}, "
        "and with --json every one."),
    json_out: bool = typer.Option(False, "--json", help="Print one versioned JSON document."),
    fleet: bool = typer.Option(
        False, "--fleet", help="Every machine's sessions, as they publish them to the fleet's "
        "Redis ([fleet] in config.toml), with a MACHINE column."),
) -> None:
    """List sessions across the workspaces, newest activity first: host, workspace, id, state,
    when it started and ended and why, tokens, and its latest follow-up.

    A unique start of an id names the session in `status --session` and `hooks history`.

    Example: sidecar sessions --active --since 2h
    """
    try:
        window = None if since is None else parse_duration(since)
    except ValueError as exc:
        fail(f"--since: {exc}", USAGE)
    if fleet:
        from sidecar.cli.sessions_fleet import listed_fleet  # (redis-py: only for the fleet)

        raise typer.Exit(listed_fleet(fleet_source(root), active, window, limit, json_out))
    errors: list[str] = []
    found = workspaces(root, errors)
    raise typer.Exit(listed(found, errors, active, window, limit, json_out))
