"""JSON state files: orjson reads, atomic replaces, and change detection.

A replace is a same-folder temp file, fsync, rename and folder fsync, so a reader sees the
whole old file or the whole new one, never a torn one, and a crash keeps one of the two.
"""

from __future__ import annotations

import os
import stat
from contextlib import suppress
from pathlib import Path
from typing import Any

import orjson

from sidecar import safedir, together
from sidecar.base import files
from sidecar.base.errors import SidecarError

Signature = tuple[int, int, int]


MAX_STATE_BYTES = 256 * 1024 * 1024  # far above any real state file; bounds a hostile one


class NotARegularFile(SidecarError, ValueError):
    """A state file's place holds a FIFO, a device, a folder...: it is never read."""


def read_bytes(path: Path) -> bytes:
    """A state file's bytes, read without blocking: a FIFO or device put where a state file
    belongs is refused (NotARegularFile), never opened for a read that could wait forever.
    Neither the file nor a folder of a runtime is followed through a link (see safedir)."""
    return read_open(safedir.open_file(path, os.O_RDONLY | os.O_NONBLOCK), path, MAX_STATE_BYTES)


def read_open(fd: int, path: Path, limit: int) -> bytes:
    """All of the file open at `fd` (closed after), if it is a regular file of at most `limit`
    bytes; NotARegularFile otherwise."""
    try:
        return files.read_open(fd, path, limit)
    except files.NotRegular as exc:
        raise NotARegularFile(str(exc)) from None


def read_json(path: Path) -> Any:
    """Parse a JSON file (a leading byte-order mark is tolerated)."""
    return orjson.loads(read_bytes(path).removeprefix(b"\xef\xbb\xbf"))


def dumps(data: Any) -> bytes:
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


def write_all(fd: int, data: bytes, durable: bool) -> None:
    """Write every byte (a short write, as on a nearly full disk, goes on), then fsync if asked
    (at the end of a `together` block, inside one)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    if durable:
        group = together.current()
        if group is None:
            os.fsync(fd)
        else:
            group.sync_later(fd)


def write_bytes_atomic(path: Path, data: bytes, *, durable: bool = True) -> Signature:
    """Replace `path` with `data` atomically; `durable` adds the fsyncs.

    Returns the new file's signature, taken before the rename, so a change someone else makes
    right after it cannot be mistaken for our own write.
    """
    with safedir.opened(path.parent) as folder:
        return replace_in(folder, path.name, data, durable)


def replace_in(folder: int, name: str, data: bytes, durable: bool = True,
               like: os.stat_result | None = None) -> Signature:
    """`write_bytes_atomic` inside a folder already opened (a descriptor from safedir). With
    `like` (the file being replaced), the new one keeps its mode, and its owner where root
    writes it; else it is 0600 and the folder's owner's."""
    # The temporary name keeps at most 100 bytes of the final one: it must fit in 255 too.
    stem = name.encode("utf-8", "surrogateescape")[:100].decode("utf-8", "ignore")
    temp = f".{stem}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=folder)
    try:
        try:
            if like is None:
                safedir.give_to_owner(fd, folder)
            else:
                os.fchmod(fd, stat.S_IMODE(like.st_mode))
                if os.geteuid() == 0 and (like.st_uid, like.st_gid) != (0, 0):
                    os.fchown(fd, like.st_uid, like.st_gid)  # root editing a user's file
            write_all(fd, data, durable)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        group = together.current() if durable else None
        if group is not None:  # renamed once every file of the block is on disk
            group.rename_later(folder, temp, name)
            return (st.st_ino, st.st_size, st.st_mtime_ns)
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=folder)
        raise
    if durable:
        os.fsync(folder)
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def write_json_atomic(path: Path, data: Any, *, durable: bool = True) -> None:
    write_bytes_atomic(path, dumps(data), durable=durable)


def append_lines(path: Path, lines: list[Any], *, durable: bool = True) -> None:
    """Append one JSON document per line, all or nothing: a write that fails part way (a full
    disk) is cut back to where it began, so no torn line is ever left."""
    append_bytes(path, lines_of(lines), durable=durable)


def lines_of(documents: list[Any]) -> bytes:
    """One JSON document per line."""
    return b"".join(orjson.dumps(d, option=orjson.OPT_APPEND_NEWLINE) for d in documents)


def append_bytes(path: Path, payload: bytes, *, durable: bool = True) -> None:
    """Append whole lines, all or nothing (`append_lines`)."""
    # A symlink in its place, or in place of a folder, is refused (ELOOP), never appended through.
    fd = safedir.open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # a FIFO in its place: never a write that waits
            raise NotARegularFile(f"{path} is not a regular file")
        start = st.st_size
        try:
            write_all(fd, payload, durable)
        except BaseException:
            os.ftruncate(fd, start)
            raise
    finally:
        os.close(fd)


def signature(path: Path) -> Signature | None:
    """(inode, size, mtime_ns): changes whenever the file is replaced or edited in place."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
