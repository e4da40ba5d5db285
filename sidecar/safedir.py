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
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
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
    root = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    return _descend(root, Path("/"), Path(os.path.abspath(base)).parts[1:])


def _descend(fd: int, shown: Path, names: Iterable[str], *, create: bool = False,
             private: Callable[[int], bool] = lambda depth: True) -> int:
    """The folder `names` below the one open at `fd` (which it closes, as on any error), by
    one `open_child` step each; `private(depth)`: whether a folder it makes there is 0700."""
    try:
        for depth, name in enumerate(names):
            shown = shown / name
            child = open_child(fd, name, shown, create=create, private=private(depth))
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


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
    if getattr(_held, "folders", None):  # inside a batch: a held folder, or one below it
        below = _below_held(folder, create)
        if below is not None:
            return below
    base, names = _split(folder)
    fd = _open_base(base) if names else os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    runtime = names[1:2] == ("runtime",)
    return _descend(fd, Path(base), names, create=create, private=lambda depth: depth >= 1 and runtime)


def open_child(fd: int, name: str, shown: Path, *, create: bool = False, private: bool = True) -> int:
    """The folder `name` inside the folder open at `fd`, never through a link: one step of
    `open_dir`, for a caller that holds a folder open already (a batch holds `sessions/`).
    With `create`, a missing one is made, private (0700) if `private`, and given to the
    folder's owner where root makes it. `shown` names it in errors."""
    _plain(name, shown)
    made = False
    if create:
        with suppress(FileExistsError):
            os.mkdir(name, 0o700 if private else 0o777, dir_fd=fd)
            made = True
    try:
        child = os.open(name, DIR_FLAGS, dir_fd=fd)
    except NotADirectoryError:
        raise _refusal(fd, name, shown) from None
    try:
        if made and private:
            os.fchmod(child, 0o700)  # mkdir's mode is cut by the umask
        if made:
            give_to_owner(child, fd)
    except BaseException:
        os.close(child)
        raise
    return child


# The folders each thread holds open (`holding`), by their paths' text: each one's
# descriptor, and whether what is made in it is private (inside a runtime).
_held = threading.local()


@contextmanager
def holding(folder: Path) -> Iterator[None]:
    """Hold `folder` open for a block: within it, in this thread, it and every file and folder
    below it are opened from the held descriptor, by the same steps, rather than by a walk
    from the root (a step of the daemon reads and writes dozens of files below one runtime).
    The descriptor was reached without following a link, and nothing below it is opened
    through one either: a link swapped in for the folder meanwhile is never followed, files go
    on in the folder itself. A folder that cannot be held (absent, a link) is not: each open
    then says so as it would without this. Held already in this thread, it is the outer
    hold's."""
    held: dict[str, tuple[int, bool]] = _held.__dict__.setdefault("folders", {})
    key = str(folder)
    try:
        fd = None if key in held else open_dir(folder)
    except OSError:
        fd = None
    if fd is None:
        yield
        return
    _base, names = _split(folder)
    held[key] = (fd, len(names) >= 2 and names[1] == "runtime")
    try:
        yield
    finally:
        del held[key]
        os.close(fd)


def _below_held(folder: Path, create: bool) -> int | None:
    """`folder` opened from the nearest folder held above it (or a dup of it, held itself),
    step by step as open_dir walks; None where none is held."""
    held: dict[str, tuple[int, bool]] = _held.folders
    above, names = str(folder), []
    while (entry := held.get(above)) is None:
        above, _, name = above.rpartition("/")
        if not name or name == CONTEXT or not above:
            return None  # (only folders below .context are ever held)
        names.append(name)
    fd, private = entry
    return _descend(os.dup(fd), Path(above), reversed(names), create=create,
                    private=lambda depth: private)


def _held_entry(folder: Path) -> tuple[int, bool] | None:
    """The descriptor `holding` holds for `folder` in this thread, and whether what is made in
    it is private; None where it holds none."""
    held: dict[str, tuple[int, bool]] | None = getattr(_held, "folders", None)
    return held.get(str(folder)) if held else None


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
    held = _held_entry(path.parent) if getattr(_held, "folders", None) else None
    if held is not None:  # its folder is held (see holding)
        return open_in(held[0], path, flags, mode)
    with opened(path.parent, create=create_dirs) as folder:
        return open_in(folder, path, flags, mode)


def open_named(folder: Path, name: str, flags: int) -> int:
    """`open_file(folder / name, flags)` for reading (nothing is created), without building
    that path where `folder` is held (an inbox's every event is read so)."""
    held = _held_entry(folder) if getattr(_held, "folders", None) else None
    if held is None or name in (".", "..") or "/" in name:
        return open_file(folder / name, flags)
    return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=held[0])


def open_in(folder: int, path: Path, flags: int, mode: int = 0o600) -> int:
    """Open the file `path` names inside its folder, already open at `folder` (a batch holds
    it), never through a link; one it creates is given to the folder's owner where root
    creates it."""
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
