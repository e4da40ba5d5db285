"""`sidecar web`: the live web view, served in the foreground. The web stack (Starlette,
uvicorn: the `web` extra) is imported only when the command runs."""

from __future__ import annotations

from pathlib import Path

import typer

from sidecar import config as config_mod
from sidecar.base.errors import SidecarError
from sidecar.base.exitcodes import FAILURE, USAGE
from sidecar.cli.common import fail, fleet_source, registry_roots, workspace_at
from sidecar.layout import Workspace
from sidecar.live.source import RowSource
from sidecar.web import settings
from sidecar.web.secret import TokenError, ensure_token, read_token


def web(
    root: list[Path] | None = typer.Option(
        None, "--root", metavar="DIR",
        help="Show this workspace's sessions (give it more than once for several). Without it, "
        "every registered workspace's."),
    address: str | None = typer.Option(
        None, "--address", metavar="ADDRESS", show_default=settings.DEFAULT_ADDRESS,
        help="The address to listen on. Only a loopback address listens without TLS (or "
        "--allow-plain-http-on-network). With --show-token: [web] address in config.toml."),
    port: int | None = typer.Option(
        None, "--port", metavar="PORT", min=0, max=65535, show_default=str(settings.DEFAULT_PORT),
        help="The port to listen on; 0 for any free one. With --show-token: [web] port in "
        "config.toml."),
    fleet: bool = typer.Option(False, "--fleet", help="Every machine's sessions, from [fleet] in "
                               "config.toml."),
    certfile: Path | None = typer.Option(None, "--certfile", metavar="FILE",
                                         help="Serve over TLS with this PEM certificate (with --keyfile)."),
    keyfile: Path | None = typer.Option(None, "--keyfile", metavar="FILE", help="The certificate's key."),
    allow_plain: bool = typer.Option(False, "--allow-plain-http-on-network",
                                     help="Listen on a network address without TLS: the token then "
                                     "crosses the network in the clear."),
    show_token: bool = typer.Option(False, "--show-token", help="Print the address with the token "
                                    "that signs a browser in, and exit."),
) -> None:
    """A live view of every session in the browser, on this machine's loopback address by
    default, behind a token that is printed once (see docs/web.md).

    Example: sidecar web --port 8765
    """
    if (certfile is None) != (keyfile is None):
        fail("--certfile and --keyfile go together", USAGE)
    if show_token:
        _show_token(address, port, certfile is not None)
    address = settings.DEFAULT_ADDRESS if address is None else address
    port = settings.DEFAULT_PORT if port is None else port
    refused = settings.refusal(address, certfile is not None, allow_plain)
    if refused:
        fail(refused, USAGE)
    try:
        from sidecar.web import serve
    except ImportError as exc:
        fail(f"the web view needs the `web` extra (pip install 'agent-sidecar[web]'): {exc}", FAILURE)
    source = _source(root, fleet)
    try:
        stale = config_mod.load_config().stale_after
    except config_mod.ConfigError as exc:
        fail(str(exc), USAGE)
    try:
        made = ensure_token()
        listen = serve.Listen(address, port, _text(certfile), _text(keyfile))
        sock = serve.bind(listen)
    except SidecarError as exc:  # the token file, or the address
        fail(str(exc))
    where = serve.address_of(sock, listen.tls)

    def ready() -> None:
        typer.echo(f"sidecar web: serving on {where}")
        if made.created:
            typer.echo(f"open {where}?token={made.value} to sign in (shown this once; kept in "
                       f"the config folder's web-token, 0600)")
        else:
            typer.echo("open the address `sidecar web --show-token` prints to sign in (a browser "
                       "signed in before stays signed in)")

    serve.server(source, made.value, stale, sock, listen, ready).run(sockets=[sock])


def _show_token(address: str | None, port: int | None, tls: bool) -> None:
    """The address to sign in with, where the view is served: what is not given, as `[web]`
    says (the daemon's view; `sidecar web`'s defaults where it says nothing)."""
    try:
        table = config_mod.load_config().web
    except config_mod.ConfigError as exc:
        fail(str(exc), USAGE)
    try:
        token = read_token()
    except TokenError as exc:
        fail(f"{exc} (`sidecar web` makes a token when it first starts)")
    address = table.get("address", settings.DEFAULT_ADDRESS) if address is None else address
    port = table.get("port", settings.DEFAULT_PORT) if port is None else port
    scheme = "https" if tls or table.get("certfile") else "http"
    if port == 0:
        typer.echo("sidecar web: [web] port = 0: the daemon's view listens on a port it chose; its "
                   "log names the address (\"the web view is served on …\"): open it with "
                   f"?token={token}", err=True)
        typer.echo(f"{scheme}://{_shown(address)}:PORT/?token={token}")
    else:
        typer.echo(f"{scheme}://{_shown(address)}:{port}/?token={token}")
    raise typer.Exit()


def _text(path: Path | None) -> str | None:
    return None if path is None else str(path)


def _shown(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def _source(root: list[Path] | None, fleet: bool) -> RowSource:
    """Where the sessions come from: this machine's workspaces, or with --fleet every machine's."""
    from sidecar.live.feed import Feed

    if fleet:
        return fleet_source(root)
    if root:
        roots = [workspace_at(r).root for r in root]
    else:
        roots = [r for r in registry_roots() if Workspace(r).context.is_dir()]
    return Feed(roots)
