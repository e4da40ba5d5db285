"""`sidecar service`, `sidecar integrate` and `sidecar doctor`: installing and explaining."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import typer

from . import codex as codex_mod
from . import doctor as doctor_mod
from . import gemini as gemini_mod
from . import integrate as integrate_mod
from . import opencode as opencode_mod
from . import service as service_mod
from .layout import find_workspace

service_app = typer.Typer(no_args_is_help=True,
                          help="Install sidecar as a user service (systemd on Linux, launchd on macOS).")
integrate_app = typer.Typer(no_args_is_help=True,
                            help="Route an agent host's hooks through `sidecar emit`.")


def _fail(message: str, code: int = 1) -> NoReturn:
    typer.echo(f"sidecar: {message}", err=True)
    raise typer.Exit(code)


def _show(plan: service_mod.Plan, printing: bool) -> None:
    if printing:
        if plan.content is not None:
            typer.echo(f"# {plan.path}")
            typer.echo(plan.content, nl=False)
        else:
            typer.echo(f"# remove {plan.path}")
        for argv in plan.commands:
            typer.echo("# then: " + " ".join(argv))
        return
    for note in plan.notes:
        typer.echo(f"note: {note}", err=True)


@service_app.command("install")
def service_install(
    print_only: bool = typer.Option(False, "--print", help="Show the file and commands; change nothing."),
    no_start: bool = typer.Option(False, "--no-start", help="Install and enable, but do not start it now."),
) -> None:
    """Write the unit (or LaunchAgent), enable it and start it. Safe to run again."""
    try:
        plan = service_mod.install(start=not no_start, dry_run=print_only)
    except service_mod.ServiceError as exc:
        _fail(str(exc))
    _show(plan, print_only)
    if not print_only:
        typer.echo(f"installed {plan.path}" + ("" if no_start else " and started it"))


@service_app.command("uninstall")
def service_uninstall(
    print_only: bool = typer.Option(False, "--print", help="Show what would be done; change nothing."),
) -> None:
    """Stop the service and remove its file."""
    try:
        plan = service_mod.uninstall(dry_run=print_only)
    except service_mod.ServiceError as exc:
        _fail(str(exc))
    _show(plan, print_only)
    if not print_only and not plan.notes:
        typer.echo(f"removed {plan.path}")


@service_app.command("status")
def service_status() -> None:
    """Whether the service is installed, and what the service manager says of it."""
    installed, state = service_mod.state()
    typer.echo(state)
    raise typer.Exit(0 if installed and state in ("active", "loaded") else 3)


def _sidecar() -> Path:
    try:
        return service_mod.sidecar_path()
    except service_mod.ServiceError as exc:
        _fail(str(exc))


@integrate_app.command("claude-code")
def integrate_claude(
    user: bool = typer.Option(False, "--user", help="The user's ~/.claude/settings.json (every project)."),
    uninstall: bool = typer.Option(False, "--uninstall", help="Remove sidecar's hooks only."),
    root: Path | None = typer.Option(None, "--root", help="The project (default: the current workspace)."),
) -> None:
    """Hooks for SessionStart, UserPromptSubmit, PostToolUse, Stop and SessionEnd."""
    if user:
        path = Path.home() / ".claude" / "settings.json"
    else:
        ws = find_workspace(root or Path.cwd())
        base = ws.root if ws is not None else (root or Path.cwd()).resolve()
        path = base / ".claude" / "settings.json"
    _integrate(lambda: integrate_mod.claude_code(path, _sidecar(), uninstall=uninstall), path,
               uninstall)


@integrate_app.command("codex")
def integrate_codex(
    uninstall: bool = typer.Option(False, "--uninstall", help="Remove sidecar's hooks only."),
) -> None:
    """Hooks in $CODEX_HOME/hooks.json, trusted in $CODEX_HOME/config.toml (hashes from Codex)."""
    codex_home = codex_mod.home()
    _integrate(lambda: codex_mod.integrate(codex_home, _sidecar(), uninstall),
               codex_home / "hooks.json", uninstall)


@integrate_app.command("gemini")
def integrate_gemini(
    project: bool = typer.Option(False, "--project", help="The project's committed "
                                 ".gemini/settings.json, calling `sidecar` from PATH."),
    uninstall: bool = typer.Option(False, "--uninstall", help="Remove sidecar's hooks only."),
    root: Path | None = typer.Option(None, "--root", help="The project (default: the current workspace)."),
) -> None:
    """Hooks for SessionStart, SessionEnd, BeforeAgent, AfterAgent and AfterTool."""
    if project:
        path = gemini_mod.project_settings(_project(root))
        command: Path | str = "sidecar"
        if not uninstall:
            typer.echo("note: the project's hooks call `sidecar` from PATH, so they work on every "
                       "machine where sidecar is installed", err=True)
    else:
        path, command = gemini_mod.user_settings(Path.home()), _sidecar()
    _integrate(lambda: gemini_mod.integrate(path, command, uninstall), path, uninstall)


@integrate_app.command("opencode")
def integrate_opencode(
    user: bool = typer.Option(False, "--user", help="The user's opencode plugin folder (every project)."),
    uninstall: bool = typer.Option(False, "--uninstall", help="Remove sidecar's plugin."),
    root: Path | None = typer.Option(None, "--root", help="The project (default: the current workspace)."),
) -> None:
    """A plugin that drops opencode's session events into the inbox."""
    path = (opencode_mod.user_plugin(Path.home()) if user
            else opencode_mod.project_plugin(_project(root)))
    _integrate(lambda: opencode_mod.integrate(path, uninstall), path, uninstall)


def _project(root: Path | None) -> Path:
    ws = find_workspace(root or Path.cwd())
    return ws.root if ws is not None else (root or Path.cwd()).resolve()


def _integrate(write: Callable[[], bool], shown: Path, uninstall: bool) -> None:
    """Run one host's integration and say what it did."""
    try:
        changed = write()
    except integrate_mod.IntegrateError as exc:
        _fail(str(exc))
    verb = "removed sidecar's hooks from" if uninstall else "sidecar's hooks are in"
    typer.echo(f"{verb} {shown}" + ("" if changed else " (already so; nothing changed)"))


def doctor() -> None:
    """Say what is missing and how to fix it; exit 1 if anything is."""
    findings = doctor_mod.check(Path.cwd(), Path.home(), sys.platform)
    typer.echo(doctor_mod.render(findings), nl=False)
    raise typer.Exit(0 if all(f.ok for f in findings) else 1)
