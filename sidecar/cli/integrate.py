"""`sidecar integrate ...` and `sidecar unregister`: in, and back out.

`sidecar integrate <host>` is made for each host of the registry that has settings to write:
its flags are the host's scopes (`Host.scopes`), and the host's `integrate` does the writing.

Every integration sidecar writes is remembered (`owned`), so `sidecar uninstall` (in
`uninstall`) can take each one back out, leaving each host's files as the user had them,
minus sidecar's entries.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import typer

from sidecar import config as config_mod
from sidecar import layout
from sidecar.base.exitcodes import NOT_WORKSPACE
from sidecar.base.timeutil import now
from sidecar.cli.common import fail
from sidecar.followups.store import initialise
from sidecar.hosts import registry
from sidecar.hosts.base import Extra, Host
from sidecar.hosts.files import owned
from sidecar.install import environment, launcher
from sidecar.install import service as service_mod
from sidecar.layout import Workspace, find_workspace

integrate_app = typer.Typer(no_args_is_help=True,
                            help="Route an agent host's hooks through `sidecar emit`.\n\n"
                            "Example: sidecar integrate --help")
RootOpt = typer.Option(None, "--root", metavar="DIR", help="The project (default: the workspace holding the "
                                            "current folder).")
UninstallOpt = typer.Option(False, "--uninstall", help="Remove sidecar's entries only.")
InitOpt = typer.Option(False, "--init", help="Make the folder a workspace first (sidecar init).")


def _start_without_site() -> None:
    """From now on the launcher the hooks run starts Python without `site`, where it may be
    rewritten (install/launcher.py; where not, it works as it is and `doctor` says why)."""
    # No `sidecar` beside this Python: hooks call the one on PATH, as it is.
    with suppress(service_mod.ServiceError):
        launcher.prepare(service_mod.sidecar_path())


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


def _run(host: Host, place: Path, write: Callable[[], bool], uninstall: bool) -> None:
    """Run one host's integration, remember it (or forget it), and say what it did. (A host
    that `records_itself` remembers its own, with more.) The files and folders it creates are
    remembered, and removed again once empty."""
    files = host.written(place)
    before = owned.absent(files)
    changed = write()  # an IntegrateError is said by main
    if uninstall:
        for removed in owned.remove_created(files):
            typer.echo(f"removed {removed} (sidecar created it; nothing else is in it)")
    else:
        owned.note_created(before)
    if not host.records_itself:
        keep = not uninstall
        owned.change(host.name, str(place),
                     lambda record: record.update(integrated=True) if keep else record.clear())
    verb = "removed sidecar's entries from" if uninstall else "sidecar's hooks are in"
    typer.echo(f"{verb} {host.shown(place)}" + ("" if changed else " (already so; nothing changed)"))
    record_resume_executable(host, uninstall)
    if not uninstall:
        typer.echo("next: sidecar doctor (checks that hooks reach a daemon that serves this)")


def record_resume_executable(host: Host, uninstall: bool) -> None:
    """The host's executable by absolute path in [resume]: a service's PATH may not have it."""
    try:
        said = environment.record_executable(host, uninstall)
    except (OSError, ValueError) as exc:  # a config.toml tomlkit cannot read: said, not fatal
        typer.echo(f"note: the resume command for {host.name} was not recorded: {exc}", err=True)
        return
    if said:
        typer.echo(said)


def integrate(host: Host, flags: dict[str, bool], uninstall: bool, root: Path | None, init: bool,
              values: dict[str, int | None] | None = None) -> None:
    """`sidecar integrate <host>`: its hooks where the flags given choose (the first one the
    host declares), calling `sidecar` by absolute path unless that file is one teams commit;
    `values`: the numbers given to its extras' settings, by option name."""
    values = values or {}
    for extra in host.extras:
        setting = extra.setting
        if setting is not None and values.get(_option_name(setting.flag)) is not None \
                and (uninstall or not flags.get(_option_name(extra.flag))):
            fail(f"{setting.flag} goes with {extra.flag}")
    given = [scope for scope in host.scopes if scope.flag and flags.get(_option_name(scope.flag))]
    scope = given[0] if given else host.scopes[0]
    on_path = any(s.on_path for s in given) or scope.on_path
    # Found before anything is written (or --init registers a workspace): a `sidecar` that
    # cannot be found stops the integration at its start (main says its ServiceError).
    command = "sidecar" if on_path or not host.calls_sidecar else str(service_mod.sidecar_path())
    if host.calls_sidecar and not uninstall:
        _start_without_site()
    project = project_root(root, init, uninstall) if scope.in_project else None
    place = host.place(scope, project, Path.home())
    if scope.note and not uninstall:
        typer.echo(f"note: {scope.note}", err=True)

    extras = [e for e in host.extras if flags.get(_option_name(e.flag))] if not uninstall else []

    def write() -> bool:
        # The extras first: one that cannot be set stops the integration before any hook is
        # written (and so before any is left unremembered).
        said = [host.integrate_extra(extra.flag, place, command, _value(extra, values))
                for extra in extras]
        changed = host.integrate(place, command, uninstall=uninstall)
        for sentence in said:
            typer.echo(sentence)
        return changed

    _run(host, place, write, uninstall)


def _option_name(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def _value(extra: Extra, values: dict[str, int | None]) -> int | None:
    """The number `extra`'s setting was given, else its default (None: it has no setting)."""
    if extra.setting is None:
        return None
    given = values.get(_option_name(extra.setting.flag))
    return extra.setting.default if given is None else given


def _command(host: Host) -> Callable[..., None]:
    """The typer command of one host: its scopes' flags, --uninstall, and --root and --init
    where it writes into a project."""
    flagged = [(scope.flag, scope.help) for scope in host.scopes if scope.flag]
    flagged += [(extra.flag, extra.help) for extra in host.extras]
    flags = [flag for flag, _help in flagged]
    params = [inspect.Parameter(_option_name(flag), inspect.Parameter.KEYWORD_ONLY,
                                default=typer.Option(False, flag, help=text), annotation=bool)
              for flag, text in flagged]
    settings = [extra.setting for extra in host.extras if extra.setting is not None]
    params += [inspect.Parameter(_option_name(setting.flag), inspect.Parameter.KEYWORD_ONLY,
                                 default=typer.Option(None, setting.flag, metavar=setting.metavar,
                                                      min=setting.least, help=setting.help),
                                 annotation=int | None)
               for setting in settings]
    params.append(inspect.Parameter("uninstall", inspect.Parameter.KEYWORD_ONLY,
                                    default=UninstallOpt, annotation=bool))
    in_project = any(scope.in_project for scope in host.scopes)
    if in_project:
        params += [inspect.Parameter("root", inspect.Parameter.KEYWORD_ONLY, default=RootOpt,
                                     annotation=Path | None),
                   inspect.Parameter("init", inspect.Parameter.KEYWORD_ONLY, default=InitOpt,
                                     annotation=bool)]

    def command(**given: Any) -> None:
        integrate(host, {_option_name(f): bool(given[_option_name(f)]) for f in flags},
                  bool(given["uninstall"]), given.get("root"), bool(given.get("init")),
                  {_option_name(s.flag): given[_option_name(s.flag)] for s in settings})

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__doc__ = f"{host.integrate_help}\n\nExample: sidecar integrate {host.name}"
    command.__name__ = f"integrate_{_option_name(host.name)}"
    return command


for _host in registry.integrable():
    integrate_app.command(_host.name)(_command(_host))


def unregister(directory: Path = typer.Argument(Path("."), help="The workspace folder "
                                                                "(it may be gone already).",
                                              metavar="DIR")) -> None:
    """Stop serving a workspace: take it off the registry. Its .context/ is left as it is.

    Example: sidecar unregister ~/old-project
    """
    root = Path(directory).absolute()
    candidates = {root, root.resolve()} if root.exists() else {root}
    removed = [r for r in candidates if config_mod.unregister(r)]  # RegistryError: main says it
    if not removed:
        fail(f"{root} is not registered (see {layout.registry_file()})")
    typer.echo(f"unregistered {removed[0]}; running daemons stop serving it within seconds")
