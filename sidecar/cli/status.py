"""`sidecar status` answered without the command line framework: the launcher's dispatch
(sidecar/__init__.py) calls `answer` with the options it read, and typer's command
(cli/main.py) the same builder (views/status.py). `--session ID` reads through the typed
stores, imported only then.
"""

from __future__ import annotations

import os
import sys
import time

from sidecar.base import paths
from sidecar.base.exitcodes import OK, of_status

TYPE_CHECKING = False  # typing costs `status` 2 ms (see base/words.py)
if TYPE_CHECKING:
    from typing import Any

    from sidecar.layout import Workspace
    from sidecar.views.report import Report


def answer(given: dict[str, Any]) -> int | None:
    """`sidecar status [--root DIR | --all] [--json]`: its exit code, or None where typer's
    command has something to say (no workspace here, a registry it cannot read)."""
    from sidecar.views.status import build

    roots = registered() if given.get("--all") else here(given.get("--root"))
    if roots is None:
        return None
    report = build(roots, time.time())
    write(report, bool(given.get("--json")))
    return of_status(report)


def write(report: Report, as_json: bool) -> None:
    """The report as JSON (as jsonfile writes it, escaped for a terminal) or as people read it."""
    if as_json:
        from sidecar.base.escapes import json_bytes_escaped
        from sidecar.views.report import dumps

        sys.stdout.buffer.write(json_bytes_escaped(dumps(report)))
    else:
        from sidecar.views.status_text import render_text

        sys.stdout.write(render_text(report))
    sys.stdout.flush()


def here(root: str | None) -> list[str] | None:
    """The nearest workspace at or above `root` (or here), its links resolved; None where
    there is none (typer's command says so)."""
    found = paths.find_workspace(os.path.realpath(root if root is not None else os.getcwd()))
    return None if found is None else [found]


def registered() -> list[str] | None:
    """config.load_registry's roots, each a workspace still; None where typer's command has
    something to say (a registry it cannot read, a folder that is no workspace any more)."""
    from sidecar.base.files import parse

    try:
        found = paths.read_registry()
        roots = [] if found is None else paths.registry_roots(parse(found))
    except (OSError, ValueError):
        return None
    if not all(_plain_path(root) for root in roots):
        return None
    if not all(os.path.isdir(os.path.join(root, ".context")) for root in roots):
        return None
    return roots


def _plain_path(path: str) -> bool:
    """An absolute path as pathlib would give it back unchanged (status shows that form)."""
    return path.startswith("/") and (path == "/" or (
        not path.endswith("/") and "//" not in path and "/./" not in path
        and not path.endswith("/.")))


def answer_session(given: dict[str, Any]) -> int | None:
    """`status --session ID [--root DIR] [--json]`: its exit code, or None where typer's
    command has an error to say."""
    from pathlib import Path

    from sidecar.views.session import find_session

    root = given.get("--root")
    try:
        found, report = find_session(given["--session"], Path(root) if root is not None else None)
    except Exception:  # typer's command says what is wrong, in the same words
        return None
    write_session(report, found, bool(given.get("--json")))
    return OK


def write_session(report: dict[str, Any], ws: Workspace, as_json: bool) -> None:
    """One session's story, as JSON or as people read it."""
    from sidecar.cli.sessions import stale_after

    if as_json:
        from sidecar.cli.jsonout import print_json

        print_json(report)
    else:
        from sidecar.views.status_text import render_session

        sys.stdout.write(render_session(report, ws.root, stale_after=stale_after()))
    sys.stdout.flush()
