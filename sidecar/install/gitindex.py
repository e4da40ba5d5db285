"""Whether git tracks a path, read from its index file as bytes: running git inside an
untrusted repository could run the programs its configuration names (an fsmonitor, say).

Index versions 2, 3 and 4 are read (4 compresses each path against the one before, so a
search for the bytes of a folder's name can miss it), and a `.git` that is a file (a
worktree, a submodule) leads to its own git folder. An index that cannot be read this way is
searched for the bytes as they are.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from sidecar import jsonfile
from sidecar.base.errors import SidecarError

SHA1_ENTRY = 62  # ctime, mtime, dev, ino, mode, uid, gid, size (40 bytes), the SHA-1, the flags
EXTENDED = 0x4000


def git_folder(root: Path) -> Path | None:
    dot = root / ".git"
    if dot.is_dir():
        return dot
    try:
        line = jsonfile.read_bytes(dot).decode("utf-8", "replace").strip()
    except (OSError, SidecarError):
        return None
    if not line.startswith("gitdir:"):
        return None
    return Path(os.path.join(root, line.removeprefix("gitdir:").strip()))


def tracks_under(root: Path, prefix: str) -> bool:
    """Whether the repository at `root` tracks anything under `prefix` (`a/b/`)."""
    folder = git_folder(root)
    try:
        data = jsonfile.read_bytes(folder / "index") if folder is not None else b""
    except (OSError, SidecarError):
        return False
    wanted = prefix.encode()
    try:
        return any(path.startswith(wanted) for path in _paths(data))
    except (ValueError, IndexError, struct.error):
        return wanted in data  # not an index this reads: the old, plain search


def _paths(data: bytes) -> list[bytes]:
    signature, version, count = struct.unpack_from(">4sII", data)
    if signature != b"DIRC" or version not in (2, 3, 4):
        raise ValueError("not an index of version 2, 3 or 4")
    at, previous, paths = 12, b"", []
    for _ in range(count):
        start = at
        (flags,) = struct.unpack_from(">H", data, at + SHA1_ENTRY - 2)
        at += SHA1_ENTRY + (2 if version >= 3 and flags & EXTENDED else 0)
        if version == 4:
            strip, at = _varint(data, at)
            end = data.index(b"\0", at)
            path = previous[:len(previous) - strip] + data[at:end]
            at = end + 1
        else:
            end = data.index(b"\0", at)
            path = data[at:end]
            at = start + ((end - start) // 8 + 1) * 8  # NUL-padded to a multiple of 8
        paths.append(path)
        previous = path
    return paths


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """git's offset varint (varint.c): 7 bits a byte, each continuation adding one."""
    byte = data[at]
    value = byte & 0x7F
    while byte & 0x80:
        at += 1
        byte = data[at]
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, at + 1
