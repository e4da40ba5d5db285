"""The web view served by the daemon, when config.toml asks for it (`[web] serve = true`):
on a thread of its own, over the workspaces served at start, with the same token as
`sidecar web`. Off by default; the web stack is imported only then.

The token is never written to the daemon's log: the log says where the view is served and
that `sidecar web --show-token` prints the address to sign in with.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sidecar.base.errors import SidecarError
from sidecar.web.secret import ensure_token

if TYPE_CHECKING:
    from sidecar.web.serve import Background

log = logging.getLogger("sidecar")


def start(table: Mapping[str, Any], roots: list[Path], stale: float) -> Background | None:
    """Serve the view as `[web]` says (checked by config.py), or None: not asked for, or it
    cannot be served (said in the log; the daemon goes on without it)."""
    if not table.get("serve"):
        return None
    try:
        from sidecar.live.feed import Feed
        from sidecar.web import serve
    except ImportError as exc:
        log.error("[web] serve = true, but the web view needs the web extra "
                  "(pip install 'agent-sidecar[web]'): %s", exc)
        return None
    listen = serve.Listen(table["address"], table["port"], table.get("certfile"), table.get("keyfile"))
    try:
        token = ensure_token()
        sock = serve.bind(listen)
    except SidecarError as exc:
        log.error("the web view is not served: %s", exc)
        return None
    where = serve.address_of(sock, listen.tls)
    running = serve.server(Feed(roots), token.value, stale, sock, listen, lambda: log.info(
        "the web view is served on %s (sidecar web --show-token prints the address to sign in "
        "with)", where), hosted=True)
    background = serve.Background(running, sock)
    background.start()
    return background
