"""`sidecar integrate cline`: one small executable per Cline event, in a hooks folder.

Cline 3.0.65 runs every executable file named after an event (`TaskStart`, `TaskStart.sh`...)
in `~/.cline/hooks/` and in a workspace's `.cline/hooks/`, directly (no shell: it needs a
shebang), with the payload on standard input; it runs all of them, so sidecar's file never
hides one of the user's. sidecar writes only files of its own there: a `sh` script that
`exec`s `sidecar emit --source cline`. Because of the `exec`, emit's parent is the process
that ran the hook (the `cline` command, or its hub daemon), which the process watch follows.
A file of the same name that sidecar did not write is never replaced or removed.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from sidecar import jsonfile
from sidecar.hosts import transcripts
from sidecar.hosts.base import IntegrateError

# The second line of every hook file sidecar writes: how it knows its own.
MARK = "# sidecar: drops this Cline event into the workspace's inbox (sidecar integrate cline)"
MAX_HOOK_BYTES = 4096  # sidecar's scripts are a few lines; a larger file is never ours


def script(sidecar: str) -> bytes:
    return f"#!/bin/sh\n{MARK}\nexec {shlex.quote(sidecar)} emit --source cline\n".encode()


def is_ours(path: Path) -> bool:
    """A regular file (never a link) that sidecar wrote: its second line is MARK."""
    data = transcripts.read_small(path, MAX_HOOK_BYTES, follow=False)
    lines = data.decode(errors="replace").splitlines() if data is not None else []
    return len(lines) >= 2 and lines[1] == MARK


def integrate(folder: Path, events: list[str], sidecar: str, uninstall: bool) -> bool:
    """Write (or remove) sidecar's hook file for each event in `folder`; True if anything
    changed. IntegrateError, and nothing written, where a file of one of those names is not
    sidecar's; an uninstall leaves such a file as it is and removes only sidecar's."""
    paths = [folder / name for name in events]
    if uninstall:
        ours = [path for path in paths if is_ours(path)]
        for path in ours:
            path.unlink()
        return bool(ours)
    theirs = [path for path in paths if os.path.lexists(path) and not is_ours(path)]
    if theirs:
        raise IntegrateError(f"{theirs[0]} exists and is not sidecar's hook; left as it is "
                             "(nothing was written)")
    data = script(sidecar)
    changed = False
    folder.mkdir(parents=True, exist_ok=True)
    for path in paths:
        if os.path.lexists(path) and path.read_bytes() == data and os.access(path, os.X_OK):
            continue
        jsonfile.write_bytes_atomic(path, data)
        os.chmod(path, 0o755)  # Cline runs the file itself: it must be executable
        changed = True
    return changed


def integrated(folder: Path, events: list[str]) -> bool:
    return any(is_ours(folder / name) for name in events)
