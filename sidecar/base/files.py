"""A workspace's state files read at the cost of a hook, for the read side (views/): folders
walked from the root without following a link (as safedir walks them), and JSON read by the
standard library's C scanner as orjson reads it; where the two could read a file differently
(an integer past 64 bits, a lone surrogate, a number past a double's range), orjson itself
reads it, imported then.
"""

from __future__ import annotations

import _json
import os
import stat

DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
SURROGATES = tuple(b"\\ud" + c for c in (b"8", b"9", b"a", b"b", b"c", b"d", b"e", b"f"))
WHOLE_RANGE = (-(2**63), 2**64 - 1)  # the integers orjson reads as integers


class NotRegular(ValueError):
    """A FIFO, a device or a folder where a state file belongs: never read (jsonfile's
    NotARegularFile says the same of it)."""


class _AsOrjsonOnly(Exception):
    """What orjson may read otherwise than the scanner: orjson reads it."""


def _whole_number(text: str) -> int:
    value = int(text)
    if not WHOLE_RANGE[0] <= value <= WHOLE_RANGE[1]:
        raise _AsOrjsonOnly("an integer orjson reads otherwise")
    return value


def _real_number(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _AsOrjsonOnly("a number orjson refuses")
    return value


class _AsOrjson:
    """What `_json.make_scanner` reads its settings from (json.JSONDecoder's names), with
    numbers checked against what orjson reads."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    memo: dict[str, str] = {}
    parse_int = staticmethod(_whole_number)
    parse_float = staticmethod(_real_number)

    @staticmethod
    def parse_constant(name: str) -> float:
        raise ValueError(f"{name} is not JSON")


_SCAN = _json.make_scanner(_AsOrjson())  # type: ignore[arg-type]  # it reads only these


# -- reading, never through a link ----------------------------------------------------------


def walk(fd: int, *names: str) -> int:
    """The folder `names` below `fd`, opened without following a link (FileNotFoundError if
    it is not there); `fd` stays open, the caller closes what this returns."""
    current = fd
    try:
        for name in names:
            child = os.open(name, DIR, dir_fd=current)
            if current != fd:
                os.close(current)
            current = child
    except BaseException:
        if current != fd:
            os.close(current)
        raise
    return current


def open_root(root: str) -> int:
    """The workspace folder, every folder of its path opened without following a link (as
    safedir opens it before it writes or reads below it)."""
    fd = os.open("/", DIR)
    try:
        return walk(fd, *(name for name in root.split("/") if name))
    finally:
        os.close(fd)


def read(folder: int, name: str) -> bytes | None:
    """A state file's bytes (None where there is none)."""
    return _whole_file(name, FILE, folder)


def read_path(path: str) -> bytes | None:
    """A file outside any runtime (the user's config folder), through the user's own links;
    None where there is none. Never a FIFO's read that could wait."""
    return _whole_file(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC, None)


def _whole_file(name: str, flags: int, folder: int | None) -> bytes | None:
    """All of a regular file (jsonfile.read_open's rules, without orjson's import); None
    where there is none, NotRegular for what is no regular file, OSError as it comes."""
    try:
        fd = os.open(name, flags, dir_fd=folder)
    except FileNotFoundError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(f"{name} is not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def parse(data: bytes) -> object:
    """JSON as orjson reads it (a byte-order mark allowed), ValueError where it is none.
    Where the two may not agree, orjson reads it: a surrogate escape (orjson refuses a lone
    one), an integer past 64 bits, a number past a double's range."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b"\\" in data and any(escape in data.lower() for escape in SURROGATES):
        return _by_orjson(data)
    try:
        text = data.decode("utf-8")
        start = len(text) - len(text.lstrip(" \t\n\r"))
        value, end = _SCAN(text, start)
    except _AsOrjsonOnly:
        return _by_orjson(data)
    except (StopIteration, SystemError) as exc:
        raise ValueError(f"not JSON: {exc!r}") from None
    finally:
        _AsOrjson.memo.clear()
    if text[end:].strip(" \t\n\r"):
        raise ValueError("not JSON: extra data")
    return value


def _by_orjson(data: bytes) -> object:
    """The rare file the scanner could read otherwise, read by orjson (a JSONDecodeError is
    a ValueError): the installed packages are found first (the launcher may start without)."""
    from sidecar import full_start

    full_start()
    import orjson

    return orjson.loads(data)


def read_json(folder: int, name: str) -> object:
    data = read(folder, name)
    return None if data is None else parse(data)


def below(fd: int, *names: str) -> int | None:
    """`walk`, or None where the folder is not there."""
    try:
        return walk(fd, *names)
    except FileNotFoundError:
        return None
