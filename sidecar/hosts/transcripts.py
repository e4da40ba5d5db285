"""The bounded readers of a host's own transcript, shared by the hosts that parse one (each
host's parsing lives in its own module: which entry says a turn failed, which holds tokens).

Transcripts belong to the hosts; they are read, never written, only if they are regular files,
and only their last MAX_TAIL bytes for a failure. An event names the path, so it is untrusted:
every read stops at a hard cap whatever the file's size says (/proc/self/pagemap says 0 and
never ends), and the token figures are streamed a line at a time, never kept. A transcript that
is missing, unreadable or too large gives nothing: the figures are left out, never the event.

Every file an event names is opened by `open_regular`, and only as a regular file: a
terminal, device, FIFO or socket is never opened at all (a terminal would become a session
leader's controlling terminal, and a device's open alone can act: a watchdog is armed by
it). Where a root daemon serves another user's workspace, the file is read with that user's
rights (`reading_as`), never root's.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

MAX_TAIL = 256 * 1024  # bytes read from a transcript's end to find how its last turn ended
MAX_TRANSCRIPT = 64 * 1024 * 1024  # larger transcripts are not read for token figures
MAX_LINE = 8 * 1024 * 1024  # a longer line is skipped: it is never one that holds figures
CHUNK = 1 << 20

T = TypeVar("T")


class Unreadable(Exception):
    """The transcript gives nothing: missing, not a regular file, unreadable or too large."""


# An O_PATH descriptor names a file without opening it: a device's or FIFO's open never runs.
PROBE = getattr(os, "O_PATH", 0)  # Linux only
READ = os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC
FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAY_READ, MAY_SEARCH = 4, 1
ACL = "system.posix_acl_access"


@dataclass(frozen=True)
class Reader:
    """A user whose rights a file an event names is read with, where they are not this
    process's (a root daemon serving another user's workspace).

    Root's own open passes every permission check, so the user's are made here, on what was
    opened: the file's mode bits on the descriptor that is read, and search permission on
    each folder from `/` down to it, each opened from the one above without following a
    link, so no folder can be swapped between its check and the next step: a file readable
    by all inside a folder only root may search stays unread. The mode bits of the real path
    are what is weighed, which is close to, not all of, what the kernel would check for the
    user's own open: the links on the way are resolved with root's rights, a POSIX ACL on a
    file or folder the user does not own (it could deny them what the bits allow) refuses it
    outright, and procfs's own checks and security modules are not weighed.
    os.access cannot serve, as it asks for the real uid (root's), and a reader process
    running as the user would cost one per read on the daemon's path."""

    uid: int
    groups: frozenset[int]

    def may(self, fd: int, st: os.stat_result, want: int) -> bool:
        """Whether this user may `want` (MAY_READ, MAY_SEARCH) the file open at `fd`."""
        if st.st_uid == self.uid:
            return (st.st_mode >> 6) & want == want
        if _has_acl(fd):
            return False
        shift = 3 if st.st_gid in self.groups else 0
        return (st.st_mode >> shift) & want == want

    def folder_of(self, path: str, follow: bool) -> tuple[int, str]:
        """The folder holding the file `path` names, reached from `/` as described above,
        and the file's name in it. Links are resolved first (as this process, without
        opening anything): the folders the file really is in decide."""
        if follow:
            real = os.path.realpath(path)
        else:
            head, name = os.path.split(os.path.abspath(path))
            real = os.path.join(os.path.realpath(head), name)
        *folders, name = real.split("/")[1:]
        fd = os.open("/", FOLDER)
        try:
            self._search(fd, "/")
            for part in folders:
                child = os.open(part, FOLDER, dir_fd=fd)
                os.close(fd)
                fd = child
                self._search(fd, part)
        except BaseException:
            os.close(fd)
            raise
        return fd, name

    def _search(self, fd: int, shown: str) -> None:
        if not self.may(fd, os.fstat(fd), MAY_SEARCH):
            raise Unreadable(f"uid {self.uid} may not search {shown}")


def _has_acl(fd: int) -> bool:
    """Whether the file open at `fd` (not an O_PATH descriptor) has an access ACL beyond its
    mode bits; unknown counts as yes. (macOS has no POSIX ACLs to ask for.)"""
    if not hasattr(os, "getxattr"):
        return False
    try:
        os.getxattr(fd, ACL)
    except OSError as exc:
        return exc.errno not in (errno.ENODATA, errno.ENOTSUP)
    return True


_reader: ContextVar[Reader | None] = ContextVar("sidecar_transcript_reader", default=None)


@contextmanager
def reading_as(reader: Reader | None) -> Iterator[None]:
    """Within the block (in this thread), files are opened with `reader`'s rights; None:
    with this process's own, which the kernel checks."""
    token = _reader.set(reader)
    try:
        yield
    finally:
        _reader.reset(token)


def open_regular(path: str, follow: bool = True, *, dir_fd: int | None = None) -> int:
    """A descriptor, for reading, of the regular file at `path`, opened with the rights of
    the `reading_as` reader (else this process's); Unreadable otherwise. Nothing else is
    ever opened: not a terminal, device, FIFO or socket, and with `follow` False, no link at
    the last step. Every file an event names is opened here. With `dir_fd`, `path` is a name
    in that folder, which the caller reached, and only the file itself is checked."""
    reader = _reader.get()
    try:
        if reader is None or dir_fd is not None:
            return _open_file(path, follow, dir_fd, reader)
        folder, name = reader.folder_of(path, follow)
        try:
            return _open_file(name, False, folder, reader)
        finally:
            os.close(folder)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path an event named
        raise Unreadable(str(exc)) from None


def _open_file(name: str, follow: bool, dir_fd: int | None, reader: Reader | None) -> int:
    nofollow = 0 if follow else os.O_NOFOLLOW
    if PROBE:
        probe = os.open(name, PROBE | nofollow | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            found = _regular(os.fstat(probe), name)
            # /proc/self/fd/N opens the very file the probe names, looking up no path again;
            # without /proc, the name is opened again, and must still be that file.
            try:
                fd = os.open(f"/proc/self/fd/{probe}", READ)
            except FileNotFoundError:
                if reader is not None:  # a FIFO swapped in would be opened by root: refused
                    raise Unreadable(f"{name}: /proc is needed to read it as its owner") from None
                fd = os.open(name, READ | nofollow, dir_fd=dir_fd)
        finally:
            os.close(probe)
    else:  # no O_PATH: checked by its path first, so only a file swapped in meanwhile is opened
        found = _regular(os.stat(name, dir_fd=dir_fd, follow_symlinks=follow), name)
        fd = os.open(name, READ | nofollow, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (found.st_dev, found.st_ino):
            raise Unreadable(f"{name} was replaced as it was opened")
        if reader is not None and not reader.may(fd, st, MAY_READ):
            raise Unreadable(f"uid {reader.uid} may not read {name}")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _regular(st: os.stat_result, name: str) -> os.stat_result:
    if not stat.S_ISREG(st.st_mode):
        raise Unreadable(f"{name} is not a regular file")
    return st


def read_small(path: str | os.PathLike[str], cap: int, follow: bool = True) -> bytes | None:
    """A small regular file's bytes (None: missing, unreadable, not a regular file, a link
    where `follow` is False, or larger than `cap`)."""
    try:
        fd = open_regular(os.fspath(path), follow)
    except Unreadable:
        return None
    try:
        data = os.read(fd, cap + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) <= cap else None


def tail(path: str) -> bytes:
    """The file's last MAX_TAIL bytes, or its first ones if its size is untrue: a file such
    as /proc/self/pagemap says 0 and never ends, so the read stops at MAX_TAIL whatever
    `st_size` says."""
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        if size > MAX_TAIL:
            os.lseek(fd, size - MAX_TAIL, os.SEEK_SET)
        chunks: list[bytes] = []
        left = MAX_TAIL
        while left and (chunk := os.read(fd, min(left, CHUNK))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise Unreadable(str(exc)) from None
    finally:
        os.close(fd)


def _blocks(fd: int) -> Iterator[bytes]:
    """The file's whole lines, a block of them per CHUNK read, never more than MAX_TRANSCRIPT
    bytes in all (Unreadable past that, whatever `st_size` said). A line over MAX_LINE is
    skipped, so at most about MAX_LINE + CHUNK bytes are held at once."""
    read = 0
    rest = b""
    overlong = False  # inside a line too long to keep: skipped up to its end
    while chunk := os.read(fd, CHUNK):
        read += len(chunk)
        if read > MAX_TRANSCRIPT:
            raise Unreadable(f"more than {MAX_TRANSCRIPT} bytes")
        start = 0
        if overlong:
            start = chunk.find(b"\n") + 1
            if not start:
                continue  # the skipped line goes on
            overlong = False
        buffer = rest + chunk[start:] if rest else chunk[start:]
        cut = buffer.rfind(b"\n")
        if cut >= 0:
            yield buffer[:cut]
        rest = buffer[cut + 1:]
        if len(rest) > MAX_LINE:
            rest, overlong = b"", True
    if rest and not overlong:
        yield rest


def entries(path: str, needle: bytes | tuple[bytes, ...]) -> Iterator[dict[str, Any]]:
    """The transcript's JSON objects on lines that hold `needle` (or any of several), one at
    a time: none is kept here, and a line without one is not even parsed."""
    needles = needle if isinstance(needle, tuple) else (needle,)
    fd = open_regular(path)
    try:
        if os.fstat(fd).st_size > MAX_TRANSCRIPT:
            raise Unreadable(f"more than {MAX_TRANSCRIPT} bytes")
        for block in _blocks(fd):
            if not any(n in block for n in needles):
                continue  # most blocks: not split, not parsed
            for line in block.split(b"\n"):
                if any(n in line for n in needles) and isinstance(entry := parse_line(line), dict):
                    yield entry
    except OSError as exc:
        raise Unreadable(str(exc)) from None
    finally:
        os.close(fd)


def parse_line(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except ValueError:
        return None  # a line cut by the tail's start, or torn by a crash


def tail_entries(path: str | None) -> list[dict[str, Any]]:
    """The JSON objects of the transcript's last MAX_TAIL bytes, in order; none if it cannot
    be read (a missing transcript says nothing of how a turn ended)."""
    if not path:
        return []
    try:
        data = tail(path)
    except Unreadable:
        return []
    return [e for line in data.splitlines() if isinstance(e := parse_line(line), dict)]


def read_figures(path: str | None, needle: bytes | tuple[bytes, ...],
                 reader: Callable[[Iterable[dict[str, Any]]], T | None]) -> T | None:
    """`reader` over the transcript's entries that hold `needle`; None where it cannot be read."""
    if not path:
        return None
    try:
        return reader(entries(path, needle))
    except Unreadable:
        return None
