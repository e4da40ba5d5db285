"""`sidecar hooks ... --global`: the user's global hooks (followups/globalhooks.py), which every
workspace their daemon serves has as a copy named `global.NAME`.

The commands edit the global file as they edit a workspace's hooks.json (cli/hooks.py); here
is what differs: which store, what a workspace's copy may not be told to do, and the history
of a global hook, which is each workspace's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import typer

from sidecar.base import words
from sidecar.base.exitcodes import FAILURE
from sidecar.base.outcome import Outcome
from sidecar.base.timeutil import now
from sidecar.base.trustcheck import global_id
from sidecar.cli import hooks_text
from sidecar.cli.common import fail, registered_workspaces
from sidecar.cli.jsonout import print_json
from sidecar.followups.globalhooks import GlobalStore, copy_id
from sidecar.followups.model import Hook
from sidecar.followups.run import logtail
from sidecar.followups.store import HookStore

GlobalOpt = typer.Option(False, "--global",
                         help="Your global hooks (notify hooks every workspace has), kept in "
                              "your config folder, instead of a workspace's.")


def _fail(message: str) -> NoReturn:
    fail(message, FAILURE, "sidecar hooks")


def store(root: Path | None) -> GlobalStore:
    if root is not None:
        _fail("--global hooks are yours, in every workspace: give no --root with --global")
    return GlobalStore()


def added(hook: Hook) -> str:
    """What `hooks add --global` says it did."""
    return f"added {hook.id}: a global hook, which every workspace your daemon serves has as " \
           f"{copy_id(hook.id)}"


def refuse_copy(hook_id: str, what: str) -> None:
    """A workspace's copy of a global hook is kept as the global hook is: refused here."""
    original = global_id(hook_id)
    if original is not None:
        _fail(f"{hook_id} is this workspace's copy of your global hook {original}, kept as that "
              f"is: {what} it for every workspace with `sidecar hooks {what} --global {original}`")


def history(hook_id: str | None, session: str | None, as_json: bool) -> None:
    """A global hook's firings (every global hook's, with no name), in each registered
    workspace, oldest first."""
    if hook_id is not None and hook_id not in GlobalStore().snapshot(now()).hooks:
        _fail(f"no global hook {hook_id!r} (sidecar hooks list --global)")
    found: list[tuple[Any, list[dict[str, Any]]]] = []
    for ws in registered_workspaces():
        if not ws.runtime.is_dir():
            continue
        view = HookStore(ws).snapshot(now())
        rows = sorted(
            ({"workspace": str(ws.root), "hookId": h.id, **f.to_json(),
              "lastLine": f.line if f.kept else logtail.last_line(ws, h.id, f.log)
              if Outcome.parse(f.status).failed else None}
             for h in view.hooks.values()
             if global_id(h.id) is not None and hook_id in (None, global_id(h.id))
             for f in h.history if session is None or (f.session_id or "").startswith(session)),
            key=lambda row: str(row["at"]))
        if rows:
            found.append((ws, rows))
    if as_json:
        print_json({"firings": [row for _, rows in found for row in rows]})
        return
    if not found:
        typer.echo("no firings yet")
    for ws, rows in found:
        typer.echo(f"{ws.root}:")
        typer.echo(hooks_text.render_history(ws, rows, now(), words.style_for()), nl=False, color=True)
