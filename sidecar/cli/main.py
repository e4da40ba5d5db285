"""The `sidecar` command line: thin commands over the modules that do the work."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import typer

from sidecar import config as config_mod
from sidecar import layout
from sidecar.base.errors import SidecarError
from sidecar.base.exitcodes import OK, of_status
from sidecar.base.timeutil import now
from sidecar.cli import status as status_mod
from sidecar.cli.common import fail, registered_workspaces, run_app, workspace_at
from sidecar.cli.hooks import hooks_app
from sidecar.cli.integrate import integrate_app, unregister
from sidecar.cli.jsonout import print_json
from sidecar.cli.logs import logs
from sidecar.cli.notify_setup import notify_app
from sidecar.cli.reload import reload
from sidecar.cli.run import run
from sidecar.cli.sessions_command import sessions
from sidecar.cli.setup import doctor, service_app
from sidecar.cli.stop import stop
from sidecar.cli.top import top
from sidecar.cli.uninstall import uninstall
from sidecar.cli.web import web
from sidecar.followups import trust
from sidecar.followups.model import Hook
from sidecar.followups.store import HookStore, initialise
from sidecar.hosts import registry
from sidecar.install import foreign
from sidecar.layout import Workspace
from sidecar.sessions.lookup import AmbiguousSession
from sidecar.views import session as session_view
from sidecar.views import status as status_view
from sidecar.views.status_text import render_text

app = typer.Typer(
    add_completion=True,  # typer's own: --install-completion, --show-completion
    no_args_is_help=True,
    help="sidecar: owns the session lifecycle of AI coding agents, beside them.",
    epilog="Example: sidecar init ~/project && sidecar status",
)


def _print_version(value: bool) -> None:
    if value:
        version()
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_print_version,
                                          is_eager=True, help="Print the version and exit.")) -> None:
    """sidecar: owns the session lifecycle of AI coding agents, beside them."""


@app.command()
def init(directory: Path = typer.Argument(Path("."), metavar="DIR", help="The workspace folder.")) -> None:
    """Create the layout, the default hook and prompt, and register the workspace.

    Example: sidecar init ~/project
    """
    root = directory.resolve()
    if not root.is_dir():
        fail(f"{root} is not a folder")
    ws = Workspace(root)
    fresh = not ws.is_initialised()
    try:
        registered_before = root in config_mod.load_registry()
        ws.check_runtime()
        moved = foreign.set_aside(ws, registered_before, now())
        wrote = initialise(ws, now())
        untrusted = trust.untrusted(ws, HookStore(ws).snapshot(now()).hooks.values())
    except (OSError, SidecarError) as exc:
        fail(f"cannot initialise {root}: {exc}")
    try:
        registered = config_mod.register(root)
    except config_mod.RegistryError as exc:
        fail(f"{ws.context} is initialised but not registered: {exc}")
    typer.echo(f"{'initialised' if fresh else 'already initialised'}: {ws.context}")
    if moved is not None:
        _say_moved(ws, *moved)
    for path in wrote:
        typer.echo(f"wrote {'the default hooks to ' if path.endswith('.json') else ''}.context/{path}")
    _say_untrusted(untrusted)
    typer.echo(f"{'registered' if registered else 'already registered'} in {layout.registry_file()}")
    *others, last = [host.name for host in registry.integrable()]
    typer.echo(f"next: sidecar integrate <host> ({', '.join(others)} or {last}), so the "
               "host's hooks drop its events here")


def _say_moved(ws: Workspace, found: foreign.Found, aside: Path) -> None:
    typer.echo("found state in .context/runtime that this machine's sidecar did not write:")
    for what in found.what:
        typer.echo(f"  - {what}")
    typer.echo(f"moved it to {aside.relative_to(ws.root)}/; none of it runs")
    if found.hooks:
        typer.echo(f"kept its hook definitions ({', '.join(found.hooks)}) without their queue, as untrusted")


def _say_untrusted(hooks: list[Hook]) -> None:
    """The hooks that do not run until trusted: found here, not written by this sidecar, or
    changed since they were trusted."""
    if not hooks:
        return
    typer.echo("not trusted on this machine as they stand (found here, or changed since they "
               "were trusted), so they do not run:")
    for hook in hooks:
        typer.echo(f"  {hook.id}: {trust.described(hook)}")
    typer.echo(f"to see exactly what they run and trust them: sidecar hooks trust "
               f"{' '.join(h.id for h in hooks)}")


app.command()(run)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def emit(ctx: typer.Context) -> None:
    """Drop one event: EVENT --session-id ID, or a host's hook JSON on stdin.

    Example: sidecar emit session-end --session-id 1234
    """
    from sidecar.emit import main as emit_main

    raise typer.Exit(emit_main(list(ctx.args)))


@app.command()
def status(
    root: Path | None = typer.Option(None, "--root", metavar="DIR", help="The workspace to show."),
    all_: bool = typer.Option(False, "--all", help="Every registered workspace."),
    as_json: bool = typer.Option(False, "--json", help="One versioned JSON document."),
    session: str | None = typer.Option(None, "--session", metavar="ID", help="One host session's timeline "
                                       "and follow-ups instead."),
    line: bool = typer.Option(False, "--line", help="One short line for a status bar: the state of the "
                              "session whose JSON comes on standard input (a host's status line command), "
                              "else counts across the registered workspaces (tmux's status-right). It also "
                              "takes --source NAME, --then COMMAND and --cost (the session's cost so far; see"
                              " the status line guide)."),
) -> None:
    """Instances, inbox, rejected files, sessions, bindings, hooks and queue.

    Example: sidecar status --all
    """
    if line:  # the launcher runs `status --line` before typer; this is the same, in process
        from sidecar.views.line import main as line_main

        raise typer.Exit(line_main(["--root", str(root)] if root is not None else []))
    if session is not None:
        _session_status(root, session, as_json)
    if all_:
        workspaces = registered_workspaces()
    else:
        workspaces = [workspace_at(root)]
    report = status_view.build([str(ws.root) for ws in workspaces], now())
    if as_json:
        print_json(report)
    else:
        typer.echo(render_text(report), nl=False, color=True)
    raise typer.Exit(of_status(report))


def _session_status(root: Path | None, session: str, as_json: bool) -> NoReturn:
    try:
        found, report = session_view.find_session(session, root)
    except session_view.SessionNotFound as exc:
        fail(str(exc), exc.code)
    except (AmbiguousSession, config_mod.RegistryError) as exc:
        fail(str(exc))
    except (OSError, ValueError, SidecarError) as exc:
        fail(f"cannot read session {session}: {exc}")
    status_mod.write_session(report, found, as_json)
    raise typer.Exit(OK)


app.add_typer(hooks_app, name="hooks")
app.add_typer(service_app, name="service")
app.add_typer(integrate_app, name="integrate")
app.add_typer(notify_app, name="notify")
app.command()(doctor)
app.command()(unregister)
app.command()(reload)
app.command()(top)
app.command()(stop)
app.command()(uninstall)
app.command()(logs)
app.command()(sessions)
app.command()(web)


@app.command()
def version() -> None:
    """Print the version and the commit it was built from.

    Example: sidecar version
    """
    from sidecar.base.version import shown

    typer.echo(shown())


def main(argv: list[str] | None = None) -> int:
    """Run the command line (`argv`: sys.argv's arguments by default); its exit code."""
    # The program name is the command line's own (`sidecar`, `python -m sidecar`), or
    # `sidecar` where the arguments are given (in process).
    return run_app(app, argv, None if argv is None else "sidecar")
