"""`sidecar top`: the live view. Textual is imported here only when the command runs, so no
other command (and never `emit` or the daemon) loads it."""

from __future__ import annotations

from pathlib import Path

import typer

from sidecar.cli.common import fleet_source, registry_roots, workspace_at
from sidecar.layout import Workspace


def top(
    root: Path | None = typer.Option(
        None, "--root", metavar="DIR",
        help="Show only this workspace's sessions. Without it, every registered workspace's."),
    fleet: bool = typer.Option(False, "--fleet", help="Every machine's sessions, from [fleet] in "
                               "config.toml, with a MACHINE column."),
) -> None:
    """A live, full-screen view of every session, its state and its follow-ups, with the
    selected session's detail beside the list in a terminal of 140 columns or more.

    Keys: / filter, a active only, s sort, g group by workspace, space fold a workspace,
    d detail beside or not, enter open a session, c cancel its queued follow-up,
    f fire it now, q quit.

    Example: sidecar top --root ~/project, or sidecar top --fleet
    """
    notes: list[str] = []
    if fleet:
        from sidecar.top.app import run_source

        raise typer.Exit(run_source(fleet_source(root), notes))
    if root is not None:
        roots = [workspace_at(root).root]
    else:
        registered = registry_roots()
        roots = [r for r in registered if Workspace(r).context.is_dir()]
        notes += [f"{r} is registered but is not a workspace (sidecar unregister {r})"
                  for r in registered if r not in roots]
    from sidecar.top.app import run

    raise typer.Exit(run(roots, notes))
