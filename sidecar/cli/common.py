"""What every command shares: how a command fails, and the exit codes users see.

An error meant for people (`SidecarError`) that a command does not catch itself reaches
`main`, which prints it as `sidecar: <message>` and exits with FAILURE; a command catches one
only to say more, or to exit with another code.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from sidecar import config as config_mod
from sidecar.base.errors import SidecarError
from sidecar.base.exitcodes import FAILURE, NOT_WORKSPACE, OK, USAGE
from sidecar.layout import Workspace, find_workspace

if TYPE_CHECKING:
    from sidecar.fleet.read import FleetFeed


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


def workspace_at(root: Path | None) -> Workspace:
    """The workspace holding `root` (default: the current folder); fails the command
    (NOT_WORKSPACE) where there is none."""
    found = find_workspace(root or Path.cwd())
    if found is None:
        fail(f"{root or Path.cwd()} is not a workspace (no .context/)", NOT_WORKSPACE)
    return found


def registry_roots() -> list[Path]:
    """The registered roots; a registry that cannot be read fails the command (USAGE)."""
    try:
        return config_mod.load_registry()
    except config_mod.RegistryError as exc:
        fail(str(exc), USAGE)


def registered_workspaces() -> list[Workspace]:
    """The registered workspaces (`status --all`, `sessions`): a folder registered that is no
    workspace any more is said on stderr, with how to forget it, and skipped; a registry that
    cannot be read fails the command (USAGE)."""
    found = []
    for root in registry_roots():
        if Workspace(root).context.is_dir():
            found.append(Workspace(root))
        else:
            typer.echo(f"sidecar: {root} is registered but is not a workspace (any more); "
                       f"skipped. To forget it: sidecar unregister {root}", err=True)
    return found


# -- help text --------------------------------------------------------------------------------
# typer (0.2x) shows a type name after every option (`--verbose <bool>`, `--root <list[Path]>`)
# and keeps a docstring's hard line breaks inside its paragraphs. Once, for every command of
# every sidecar app: a flag shows no value, an option its metavar (or its name in capitals),
# an argument only its name; a paragraph is joined into one, which the terminal then wraps.


def _option_value(param: Any, ctx: object) -> str | None:
    if param.metavar is not None:
        return str(param.metavar)
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return None
    return str(param.name).upper() + ("..." if param.nargs != 1 else "")


def reflowed(text: str) -> str:
    """`text` with each paragraph on one line (click's `\\b` paragraphs kept as they are)."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split("\n")) for p in paragraphs)


def _plain_help() -> None:
    try:
        from typer import core
    except ImportError:
        return
    typer_core: Any = core  # its internals change between versions: each is looked for first
    if hasattr(core, "TyperOption") and hasattr(core.TyperOption, "display_type_rich"):
        typer_core.TyperOption.display_type_rich = _option_value
    if hasattr(core, "TyperArgument") and hasattr(core.TyperArgument, "display_type_rich"):
        typer_core.TyperArgument.display_type_rich = lambda param, ctx: None
        typer_core.TyperArgument.display_name_raw = property(
            lambda param: param.metavar or param.name.upper())
        typer_core.TyperArgument._usage_display_name = lambda param: (
            (param.display_name_raw if param.required else f"[{param.display_name_raw}]")
            + ("..." if param.nargs != 1 else ""))
    for cls in (typer_core.TyperCommand, typer_core.TyperGroup):
        original = cls.format_help

        def format_help(self: Any, ctx: Any, formatter: Any, _original: Any = original) -> None:
            # a group lists its commands by their help's first paragraph: reflowed too
            for command in (self, *getattr(self, "commands", {}).values()):
                if command.help:
                    command.help = reflowed(command.help)
            _original(self, ctx, formatter)

        cls.format_help = format_help


_plain_help()


def fleet_source(root: object = None) -> FleetFeed:
    """Every machine's sessions as `[fleet]` in config.toml names their Redis (`top`, `web` and
    `sessions` with `--fleet`, `root` their `--root`); says why not and exits 1 where no fleet
    is configured, 2 where a --root was given too."""
    if root:
        fail("--fleet shows every machine's sessions; it takes no --root", USAGE)
    try:
        from sidecar.fleet.read import source_from_config  # (redis-py: only for the fleet)
    except ImportError as exc:
        fail(f"--fleet needs agent-sidecar[redis] ({exc})")
    try:
        return source_from_config(config_mod.load_config())
    except config_mod.ConfigError as exc:
        fail(str(exc))
