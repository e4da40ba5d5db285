"""A workspace's state files read at the cost of a hook, for the fast commands (quickstatus.py):
folders walked from the root without following a link (as safedir walks them), and JSON read
by the standard library's C scanner as orjson reads it, or declined (`Declined`) where the two
could read it differently. The caller then leaves the command to its full form.
"""

from __future__ import annotations

import _json
import os
import stat

DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
SURROGATES = tuple(b"\\ud" + c for c in (b"8", b"9", b"a", b"b", b"c", b"d", b"e", b"f"))
WHOLE_RANGE = (-(2**63), 2**64 - 1)  # the integers orjson reads as integers


class Declined(Exception):
    """Something the full command says, or may say, otherwise: it answers instead."""


def _whole_number(text: str) -> int:
    value = int(text)
    if not WHOLE_RANGE[0] <= value <= WHOLE_RANGE[1]:
        raise Declined("an integer orjson reads as a float")
    return value


def _real_number(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise Declined("a number orjson refuses")
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
    except BaseException as exc:
        if current != fd:
            os.close(current)
        if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError):
            raise Declined(f"{'/'.join(names)}: {exc}") from None
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
    """All of a regular file (a copy of jsonfile.read_open's rules, without orjson's import);
    None where there is none, Declined for anything else."""
    try:
        fd = os.open(name, flags, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Declined(f"{name}: {exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Declined(f"{name} is not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def parse(data: bytes) -> object:
    """JSON as orjson reads it (a byte-order mark allowed); Declined where the two may not
    agree: a surrogate escape (orjson refuses a lone one), an integer past 64 bits (orjson
    makes it a float), a number past a double's range (orjson refuses it)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b"\\" in data and any(escape in data.lower() for escape in SURROGATES):
        raise Declined("a surrogate escape")
    try:
        text = data.decode("utf-8")
        start = len(text) - len(text.lstrip(" \t\n\r"))
        value, end = _SCAN(text, start)
    except (ValueError, StopIteration, SystemError) as exc:
        raise Declined(f"not JSON: {exc!r}") from None
    finally:
        _AsOrjson.memo.clear()
    if text[end:].strip(" \t\n\r"):
        raise Declined("not JSON: extra data")
    return value


def read_json(folder: int, name: str) -> object:
    data = read(folder, name)
    return None if data is None else parse(data)


def below(fd: int, *names: str) -> int | None:
    """`walk`, or None where the folder is not there."""
    try:
        return walk(fd, *names)
    except FileNotFoundError:
        return None


# -- JSON text, for readers that take any JSON (the status line) ---------------------------


def loads(text: str) -> object:
    """JSON text as Python values, read by this module's scanner (orjson's limits: an integer
    past 64 bits or a number past a double's range is refused too); ValueError where it is
    not JSON."""
    start = len(text) - len(text.lstrip(" \t\n\r"))
    try:
        value, end = _SCAN(text, start)
    except (StopIteration, SystemError, Declined):  # the bare C scanner's "no value here"
        raise ValueError("not JSON") from None
    finally:
        _AsOrjson.memo.clear()
    if text[end:].strip(" \t\n\r"):
        raise ValueError("extra data after the JSON value")
    return value


def obj(value: object) -> dict:  # type: ignore[type-arg]
    """A JSON object as it was read, or an empty one for any other value."""
    return value if isinstance(value, dict) else {}
