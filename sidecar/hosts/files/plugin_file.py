"""A plugin file sidecar installs into a host that runs code, not hook commands (opencode's
plugin, Pi's extension): how the file is made, and how it is written and taken out again.

Each host's file holds only its own part (in the host's folder: `opencode/plugin.js`,
`pi/extension.ts`); the inbox writer they share (`inbox_writer.js`, beside this module) is put
in at the line `PLACEHOLDER` when the file is made, so one copy of the code that decides where
an event may be written serves every such host. The file's first line is its mark: a
file of the same name without it is the user's own, and is never replaced or removed.
"""

from __future__ import annotations

import os
from pathlib import Path

from sidecar import jsonfile
from sidecar.hosts.base import IntegrateError

WRITER = Path(__file__).parent / "inbox_writer.js"
PLACEHOLDER = b"// sidecar: the inbox writer goes here\n"


def source(own_part: Path) -> bytes:
    """The file to install: the host's own part (`own_part`, shipped in the host's folder) with
    the shared inbox writer in place of its placeholder line."""
    own = own_part.read_bytes()
    if own.count(PLACEHOLDER) != 1:
        raise ValueError(f"{own_part.name} must hold the line {PLACEHOLDER!r} exactly once")
    return own.replace(PLACEHOLDER, WRITER.read_bytes())


def is_ours(path: Path, mark: str) -> bool:
    """Whether the file at `path` is one sidecar wrote: its first line is `mark`."""
    try:
        with open(path, "rb") as handle:
            return handle.readline().decode(errors="replace").rstrip("\n") == mark
    except OSError:
        return False


def install(path: Path, data: bytes, mark: str, uninstall: bool = False) -> bool:
    """Write `data` at `path` (or remove the file); True if anything changed. Never touches a
    file of the same name that sidecar did not write (IntegrateError)."""
    exists = path.exists() or path.is_symlink()
    if exists and not is_ours(path, mark):
        raise IntegrateError(f"{path} exists and is not sidecar's plugin; left as it is")
    if uninstall:
        if exists:
            path.unlink()
        return exists
    if exists and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    jsonfile.write_bytes_atomic(path, data)
    os.chmod(path, 0o644)
    return True
