"""What a workspace's failed step leads to: set aside (said once, looked at again every
SET_ASIDE_RETRY) where the cause is known, else an unexpected error (logged with its
traceback, retried in a second).

A workspace deleted while it is served is one of the known causes: every step would fail on
its missing folders, and a traceback a second would fill the log. It is said once, its lead is
let go (its lock files went with it: a lead kept on them would not stop another instance from
leading the new ones), and nothing is made again in its place while its `.context/` is gone;
once `sidecar init` (or a restore) brings that back, it is opened and served anew, its
runtime made again where only the runtime was deleted.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import NamedTuple

from sidecar.daemon.watch import WatchError
from sidecar.daemon.workspace import WorkspaceServer
from sidecar.layout import TamperedRuntime, Workspace
from sidecar.safedir import LinkRefused

SET_ASIDE_RETRY = 2.0  # how often a workspace set aside (a tampered runtime) is looked at again
UNEXPECTED_RETRY = 1.0


def deleted(ws: Workspace) -> Path | None:
    """The first of the workspace's runtime folders that is not there any more (the workspace
    itself deleted, or a part of it); None while they all are."""
    for folder in ws.private_dirs():
        if not os.path.lexists(folder):
            return folder
    return None


def is_back(ws: Workspace) -> bool:
    """Whether a workspace set aside as deleted has a `.context/` again (its runtime is made
    anew as it is opened, never the workspace itself)."""
    return ws.context.is_dir()


class After(NamedTuple):
    """What a failed step leads to."""

    retry_in: float  # seconds until the workspace is stepped again
    deleted: bool  # its runtime is gone: it is opened anew once back


def after_failure(server: WorkspaceServer, exc: Exception, too_many_files: str) -> After:
    """What follows the failure `exc` of `server`'s step: said, and when to look again."""
    try:
        server.ws.check_runtime()  # a folder replaced by a file or a link: said as such
    except TamperedRuntime as tampered:
        exc = tampered
    gone = None if isinstance(exc, TamperedRuntime) else deleted(server.ws)
    if gone is not None:
        server.set_aside(f"{gone} is gone (deleted while served); served again once "
                         f"{server.ws.context} is back (`sidecar init {server.ws.root}`)",
                         let_go=True)
        return After(SET_ASIDE_RETRY, True)
    if isinstance(exc, (TamperedRuntime, LinkRefused, WatchError)):  # the others go on
        server.set_aside(exc)  # (a watched folder not there yet: looked at again soon)
        return After(SET_ASIDE_RETRY, False)
    if isinstance(exc, OSError) and exc.errno == errno.EMFILE:
        server.set_aside(too_many_files)  # said once; served once files free
        return After(SET_ASIDE_RETRY, False)
    server.unexpected(exc)  # a bug or a surprise must not end service
    return After(UNEXPECTED_RETRY, False)
