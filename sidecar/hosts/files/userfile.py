"""The user's own files outside any `.context/`: read and replaced where they really are.

A host's settings (`~/.claude/settings.json`, `$CODEX_HOME/config.toml`, ...) and sidecar's
own config.toml are often links into a dotfiles repository (stow, chezmoi). Such a link is
the user's choice, so it is followed: the file it points to is replaced (atomically, beside
itself) and the link stays a link. The replacement keeps the old file's mode and owner. A
file without its owner's write permission (0444) is the user saying it must not change:
sidecar refuses, with one line, and writes nothing. Nothing here is used inside
`.context/runtime`, where no link is ever followed (see safedir).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sidecar import jsonfile
from sidecar.base.errors import SidecarError

MAX_BYTES = 16 * 1024 * 1024  # far above any settings file


class UserFileError(SidecarError):
    """A user's file cannot be read or replaced safely; nothing was written."""


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes through the user's links, or None if there is none; a FIFO or device
    is refused, never opened for a read that could wait."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UserFileError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        return jsonfile.read_open(fd, path, MAX_BYTES)
    except jsonfile.NotARegularFile as exc:
        raise UserFileError(f"{exc}; left as it is") from None
    except OSError as exc:
        raise UserFileError(f"{path}: cannot be read ({exc.strerror})") from None


def write_bytes(path: Path, data: bytes) -> None:
    """Replace the file `path` is, or points to, with `data`: link, mode and owner kept."""
    target = Path(os.path.realpath(path))
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise UserFileError(f"{path}: cannot be read ({exc.strerror})") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise UserFileError(f"{path} is not a regular file; left as it is")
    if st is not None and not st.st_mode & stat.S_IWUSR:
        raise UserFileError(f"{path} is read-only (mode {stat.S_IMODE(st.st_mode):04o}); "
                            f"left as it is: make it writable (chmod u+w) to let sidecar edit it")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        folder = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            jsonfile.replace_in(folder, target.name, data, durable=True, like=st)
        finally:
            os.close(folder)
    except OSError as exc:
        raise UserFileError(f"{path}: cannot be written ({exc.strerror}); left as it was") from None


