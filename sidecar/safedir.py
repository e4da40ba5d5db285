"""Folders under a workspace's `.context/`, reached without following any symlink.

From `.context` down, each folder is opened relative to the one above it with
O_DIRECTORY|O_NOFOLLOW (openat), and files are then created, renamed, linked and removed
relative to the last folder's descriptor (`dir_fd=`). A folder swapped for a symlink at any
moment is refused (ELOOP), never written through: there is no window between a check and the
use, because nothing is looked up by path again. The workspace root itself is the user's
choice and is opened as given; a path outside any `.context/` is opened as it is.

Where root works in a folder another user owns (a root daemon serving that user), what it
creates is given to the folder's owner, so the user can read their own runtime.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CONTEXT = ".context"
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
LINK_REFUSED = "is a symlink; sidecar never writes through one"


class LinkRefused(OSError):
    """A folder on the way is a symlink (ELOOP) or not a folder (ENOTDIR): the workspace's
    runtime was tampered with; the daemon sets it aside and retries, losing nothing."""


def _split(folder: Path) -> tuple[str, tuple[str, ...]]:
    """(what is opened as given, the names opened one by one without following links)."""
    parts = folder.parts
    if CONTEXT not in parts:
        return str(folder), ()
    at = len(parts) - 1 - parts[::-1].index(CONTEXT)
    return str(Path(*parts[:at])) if at else ".", parts[at:]


def _refusal(fd: int, name: str, shown: Path) -> LinkRefused:
    """Why `name` could not be opened as a folder: a symlink (ELOOP) or not a folder."""
    try:
        is_link = stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        is_link = False
    if is_link:
        return LinkRefused(errno.ELOOP, LINK_REFUSED, str(shown))
    return LinkRefused(errno.ENOTDIR, "is not a folder (or was a symlink a moment ago); sidecar "
                       "never writes through one", str(shown))


def give_to_owner(fd: int, folder_fd: int) -> None:
    """Root creating something in another user's folder gives it to that user."""
    if os.geteuid() != 0:
        return
    owner = os.fstat(folder_fd)
    if owner.st_uid != 0 and os.fstat(fd).st_uid == 0:
        os.fchown(fd, owner.st_uid, owner.st_gid)


def _open_base(base: str) -> int:
    """The workspace root, every folder of its (absolute, registered) path opened without
    following a link: a folder above the workspace swapped for a link cannot move it."""
    path = Path(os.path.abspath(base))
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    shown = Path("/")
    try:
        for name in path.parts[1:]:
            shown = shown / name
            child = _down(fd, name, shown)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _down(fd: int, name: str, shown: Path) -> int:
    """The folder `name` inside `fd`, never through a link (LinkRefused)."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=fd)
    except NotADirectoryError:
        raise _refusal(fd, name, shown) from None


def _plain(name: str, shown: Path) -> str:
    if name in (".", "..") or "/" in name:
        raise LinkRefused(errno.EINVAL, "is not a plain folder name; refused", str(shown))
    return name


def open_dir(folder: Path, *, create: bool = False) -> int:
    """A descriptor of `folder`, reached without following a link from `.context` down.

    With `create`, missing folders are made: private (0700) from `.context/runtime` down, with
    the user's umask above it (`.context` and `.context/hooks` are theirs, often committed).
    LinkRefused (ELOOP) names a folder that is a symlink.
    """
    base, names = _split(folder)
    fd = _open_base(base) if names else os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    shown = Path(base)
    try:
        for depth, name in enumerate(names):
            shown = shown / _plain(name, shown / name)
            private = depth >= 1 and names[1] == "runtime"
            made = False
            if create:
                try:
                    os.mkdir(name, 0o700 if private else 0o777, dir_fd=fd)
                    made = True
                except FileExistsError:
                    pass
            child = _down(fd, name, shown)
            try:
                if made and private:
                    os.fchmod(child, 0o700)  # mkdir's mode is cut by the umask
                if made:
                    give_to_owner(child, fd)
            except BaseException:
                os.close(child)
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def opened(folder: Path, *, create: bool = False) -> Iterator[int]:
    """`open_dir` for the length of a `with` block."""
    fd = open_dir(folder, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def make_dirs(folder: Path) -> None:
    """Create the folders of `folder` that are missing, never through a link."""
    os.close(open_dir(folder, create=True))


def open_file(path: Path, flags: int, mode: int = 0o600, *, create_dirs: bool = False) -> int:
    """Open `path` (never through a link: O_NOFOLLOW) inside its safely opened folder."""
    with opened(path.parent, create=create_dirs) as folder:
        fd = os.open(_plain(path.name, path), flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=folder)
        if flags & os.O_CREAT:
            try:
                give_to_owner(fd, folder)
            except BaseException:
                os.close(fd)
                raise
        return fd


def unlink(path: Path) -> bool:
    """Remove a file (never what a link in its folders points at); False if it was gone."""
    try:
        with opened(path.parent) as folder:
            os.unlink(path.name, dir_fd=folder)
    except FileNotFoundError:
        return False
    return True
