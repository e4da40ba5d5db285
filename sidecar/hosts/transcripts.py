"""The bounded readers of a host's own transcript, shared by the hosts that parse one (each
host's parsing lives in its own module: which entry says a turn failed, which holds tokens).

Transcripts belong to the hosts; they are read, never written, only if they are regular
files, and only their last MAX_TAIL bytes for a failure. An event names the path, so it is
untrusted: every read stops at a hard cap whatever the file's size says (/proc/self/pagemap
says 0 and never ends), and the token figures are streamed a line at a time, never kept. A
transcript that is missing, unreadable or too large gives nothing: the figures are left out,
never the event.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import orjson

MAX_TAIL = 256 * 1024  # bytes read from a transcript's end to find how its last turn ended
MAX_TRANSCRIPT = 64 * 1024 * 1024  # larger transcripts are not read for token figures
MAX_LINE = 8 * 1024 * 1024  # a longer line is skipped: it is never one that holds figures
CHUNK = 1 << 20

T = TypeVar("T")


class Unreadable(Exception):
    """The transcript gives nothing: missing, not a regular file, unreadable or too large."""


def open_regular(path: str, follow: bool = True) -> int:
    """A descriptor of the regular file at `path` (a FIFO is never opened for a read that
    could wait; with `follow` False, nor a link at its last step); Unreadable otherwise."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise Unreadable(str(exc)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Unreadable(f"{path} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


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


def entries(path: str, needle: bytes) -> Iterator[dict[str, Any]]:
    """The transcript's JSON objects on lines that hold `needle`, one at a time: none is kept
    here, and a line without the needle is not even parsed."""
    fd = open_regular(path)
    try:
        if os.fstat(fd).st_size > MAX_TRANSCRIPT:
            raise Unreadable(f"more than {MAX_TRANSCRIPT} bytes")
        for block in _blocks(fd):
            if needle not in block:
                continue  # most blocks: not split, not parsed
            for line in block.split(b"\n"):
                if needle in line and isinstance(entry := parse_line(line), dict):
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


def count(value: Any) -> int:
    """A token figure as a host wrote it: a positive whole number, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def read_figures(path: str | None, needle: bytes,
                 reader: Callable[[Iterable[dict[str, Any]]], T | None]) -> T | None:
    """`reader` over the transcript's entries that hold `needle`; None where it cannot be read."""
    if not path:
        return None
    try:
        return reader(entries(path, needle))
    except Unreadable:
        return None
