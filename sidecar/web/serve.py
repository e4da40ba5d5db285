"""Serving the web view: the listening socket, then uvicorn over it, in the foreground
(`sidecar web`) or on a thread of the daemon (`[web] serve = true`).

The socket is bound here, before uvicorn starts, so that a port of 0 (any free one) is known
and said, and a port in use is one clear error.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import uvicorn

from sidecar.base.errors import SidecarError
from sidecar.live.source import RowSource
from sidecar.web.app import build

log = logging.getLogger("sidecar")


@dataclass(frozen=True)
class Listen:
    """Where and how the view listens."""

    address: str
    port: int
    certfile: str | None = None
    keyfile: str | None = None

    @property
    def tls(self) -> bool:
        return self.certfile is not None


def bind(listen: Listen) -> socket.socket:
    """The listening socket; SidecarError says why it cannot be had."""
    try:
        infos = socket.getaddrinfo(listen.address, listen.port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
        family, kind, proto, _, where = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise SidecarError(f"cannot listen on {listen.address}:{listen.port}: {exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(where)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise SidecarError(f"cannot listen on {listen.address}:{listen.port}: {exc.strerror}") from None
    return sock


def address_of(sock: socket.socket, tls: bool) -> str:
    """The view's address as a browser opens it: `http://127.0.0.1:8765/`."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"{'https' if tls else 'http'}://{shown}:{port}/"


class _IntoSidecarLog(logging.Handler):
    """uvicorn's own errors (a failed start's traceback) into the daemon's log."""

    def emit(self, record: logging.LogRecord) -> None:
        record.msg = f"the web view: {record.msg}"
        log.handle(record)


def _route_uvicorn_errors() -> None:
    errors = logging.getLogger("uvicorn.error")
    if not any(isinstance(h, _IntoSidecarLog) for h in errors.handlers):
        errors.addHandler(_IntoSidecarLog(logging.WARNING))
    errors.setLevel(logging.WARNING)
    errors.propagate = False


def server(source: RowSource, token: str, stale: float | None, sock: socket.socket, listen: Listen,
           on_ready: Callable[[], None] = lambda: None, hosted: bool = False) -> uvicorn.Server:
    """The server; `hosted` (by the daemon): uvicorn's errors go to the daemon's log, through
    the "sidecar" logger, rather than to a handler uvicorn would set up of its own."""
    app = build(source, token, stale, listen.tls, on_ready)
    extra: dict[str, Any] = {"log_config": None} if hosted else {}
    config = uvicorn.Config(
        app, lifespan="on", log_level="warning", access_log=False, proxy_headers=False,
        server_header=False, timeout_graceful_shutdown=1,
        ssl_certfile=listen.certfile, ssl_keyfile=listen.keyfile, **extra)
    if hosted:
        _route_uvicorn_errors()
    return uvicorn.Server(config)


class Background:
    """The view served on a thread of the daemon, until `stop`."""

    def __init__(self, running: uvicorn.Server, sock: socket.socket) -> None:
        self.server = running
        self.sock = sock
        self.thread = threading.Thread(target=self._run, name="web", daemon=True)

    def _run(self) -> None:
        try:
            self.server.run(sockets=[self.sock])
        except SystemExit as exc:  # uvicorn's word for a start that failed (its lifespan's)
            log.error("the web view is not served: it could not start (uvicorn exited with %s; "
                      "the lines above say why)", exc.code)
        except BaseException:  # the daemon goes on without its web view, and says why
            log.exception("the web view stopped")
        finally:
            self.sock.close()  # its address is free again

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout)
