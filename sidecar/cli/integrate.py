"""`sidecar integrate ...` and `sidecar unregister`: in, and back out.

Every integration sidecar writes is remembered (`owned`), so `sidecar uninstall` (in
`uninstall`) can take each one back out, leaving each host's files as the user had them,
minus sidecar's entries.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer

from sidecar import config as config_mod
from sidecar import layout
from sidecar.cli.common import NOT_WORKSPACE, fail
from sidecar.followups.store import initialise
from sidecar.hosts import codex as codex_mod
from sidecar.hosts import gemini as gemini_mod
from sidecar.hosts import opencode as opencode_mod
from sidecar.hosts import owned
from sidecar.hosts import settings as integrate_mod
from sidecar.install import environment
from sidecar.install import service as service_mod
from sidecar.layout import Workspace, find_workspace
from sidecar.timeutil import now

integrate_app = typer.Typer(no_args_is_help=True,
                            help="Route an agent host's hooks through `sidecar emit`.")
RootOpt = typer.Option(None, "--root", help="The project (default: the workspace holding the "
                                            "current folder).")
UninstallOpt = typer.Option(False, "--uninstall", help="Remove sidecar's entries only.")
InitOpt = typer.Option(False, "--init", help="Make the folder a workspace first (sidecar init).")


def _sidecar() -> Path:
    return service_mod.sidecar_path()  # a ServiceError is said by main


def project_root(root: Path | None, init: bool = False, uninstall: bool = False) -> Path:
    """The workspace to integrate: events from a folder that is not one would go nowhere."""
    start = (root or Path.cwd()).resolve()
    ws = find_workspace(start)
    if ws is not None:
        return ws.root
    if uninstall:
        return start
    if not init:
        fail(f"{start} is not a sidecar workspace, so its events would go nowhere; run "
              f"`sidecar init {start}` first, or add --init", NOT_WORKSPACE)
    initialise(Workspace(start), now())
    config_mod.register(start)  # a RegistryError is said by main
    typer.echo(f"initialised and registered {start}")
    return start


def _run(host: str | None, place: Path, write: Callable[[], bool], uninstall: bool,
         shown: Path | None = None, files: list[Path] | None = None) -> None:
    """Run one host's integration, remember it (or forget it), and say what it did. (Codex
    remembers its own, with more: `host` is None for it.) `files`: what it writes, if not
    `place`; the files and folders it creates are remembered, and removed again once empty."""
    files = files or [place]
    before = owned.absent(files)
    changed = write()  # an IntegrateError is said by main
    if uninstall:
        for removed in owned.remove_created(files):
            typer.echo(f"removed {removed} (sidecar created it; nothing else is in it)")
    else:
        owned.note_created(before)
    if host is not None:
        keep = not uninstall
        owned.change(host, str(place),
                     lambda record: record.update(integrated=True) if keep else record.clear())
    verb = "removed sidecar's entries from" if uninstall else "sidecar's hooks are in"
    typer.echo(f"{verb} {shown or place}" + ("" if changed else " (already so; nothing changed)"))
    record_resume_executable(host or "codex", uninstall)
    if not uninstall:
        typer.echo("next: sidecar doctor (checks that hooks reach a daemon that serves this)")


def record_resume_executable(host: str, uninstall: bool) -> None:
    """The host's executable by absolute path in [resume]: a service's PATH may not have it."""
    try:
        said = environment.record_executable(host, config_mod.DEFAULT_RESUME[host], uninstall)
    except (OSError, ValueError) as exc:  # a config.toml tomlkit cannot read: said, not fatal
        typer.echo(f"note: the resume command for {host} was not recorded: {exc}", err=True)
        return
    if said:
        typer.echo(said)


@integrate_app.command("claude-code")
def integrate_claude(
    user: bool = typer.Option(False, "--user", help="The user's ~/.claude/settings.json "
                                                    "(every project)."),
    shared: bool = typer.Option(False, "--shared", help="The project's committed "
                                "settings.json, calling `sidecar` from PATH."),
    uninstall: bool = UninstallOpt, root: Path | None = RootOpt, init: bool = InitOpt,
) -> None:
    """Hooks for SessionStart, UserPromptSubmit, PostToolUse, Stop and SessionEnd.

    By default in the project's .claude/settings.local.json: Claude Code reads it, and projects
    do not commit it, so the absolute path of this machine's `sidecar` stays on this machine.
    """
    command: Path | str = "sidecar" if shared else _sidecar()
    if user:
        path = Path.home() / ".claude" / "settings.json"
    else:
        settings = integrate_mod.claude_settings(project_root(root, init, uninstall), Path.home())
        path = settings[1] if shared else settings[0]
        if shared and not uninstall:
            typer.echo("note: the committed settings call `sidecar` from PATH, so the hooks work "
                       "on every machine where sidecar is installed and on PATH", err=True)
    _run("claude-code", path,
         lambda: integrate_mod.claude_code(path, command, uninstall=uninstall), uninstall)


@integrate_app.command("codex")
def integrate_codex(uninstall: bool = UninstallOpt) -> None:
    """Hooks in $CODEX_HOME/hooks.json, trusted in $CODEX_HOME/config.toml (hashes from Codex)."""
    codex_home = codex_mod.home()
    _run(None, codex_home,
         lambda: codex_mod.integrate(codex_home, _sidecar(), uninstall), uninstall,
         codex_home / "hooks.json", [codex_home / "hooks.json", codex_home / "config.toml"])


@integrate_app.command("gemini")
def integrate_gemini(
    project: bool = typer.Option(False, "--project", help="The project's committed "
                                 ".gemini/settings.json, calling `sidecar` from PATH."),
    uninstall: bool = UninstallOpt, root: Path | None = RootOpt, init: bool = InitOpt,
) -> None:
    """Hooks for SessionStart, SessionEnd, BeforeAgent, AfterAgent and AfterTool."""
    command: Path | str
    if project:
        path, command = gemini_mod.project_settings(project_root(root, init, uninstall)), "sidecar"
        if not uninstall:
            typer.echo("note: the project's hooks call `sidecar` from PATH, so they work on every "
                       "machine where sidecar is installed", err=True)
    else:
        path, command = gemini_mod.user_settings(Path.home()), _sidecar()
    _run("gemini", path, lambda: gemini_mod.integrate(path, command, uninstall), uninstall)


@integrate_app.command("opencode")
def integrate_opencode(
    user: bool = typer.Option(False, "--user", help="The user's opencode plugin folder "
                                                    "(every project)."),
    uninstall: bool = UninstallOpt, root: Path | None = RootOpt, init: bool = InitOpt,
) -> None:
    """A plugin that drops opencode's session events into the inbox."""
    path = (opencode_mod.user_plugin(Path.home()) if user
            else opencode_mod.project_plugin(project_root(root, init, uninstall)))
    _run("opencode", path, lambda: opencode_mod.integrate(path, uninstall), uninstall)


def unregister(directory: Path = typer.Argument(Path("."), help="The workspace folder "
                                                                "(it may be gone already).")) -> None:
    """Stop serving a workspace: take it off the registry. Its .context/ is left as it is."""
    root = Path(directory).absolute()
    candidates = {root, root.resolve()} if root.exists() else {root}
    removed = [r for r in candidates if config_mod.unregister(r)]  # RegistryError: main says it
    if not removed:
        fail(f"{root} is not registered (see {layout.registry_file()})")
    typer.echo(f"unregistered {removed[0]}; running daemons stop serving it within seconds")
