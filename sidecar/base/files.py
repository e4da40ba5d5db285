"""A workspace's state files read at the cost of a hook, for the read side (views/): folders
walked from the root without following a link (as safedir walks them), and JSON read by the
standard library's C scanner (`_json`, what json.loads runs) as orjson, the daemon's reader,
reads it: an integer past 64 bits is a float, and a number past a double's range or a lone
surrogate is no JSON. A reader of these files says what the daemon makes of them.
"""

from __future__ import annotations

import _json
import os
import stat

DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
SURROGATES = tuple("\\ud" + c for c in "89abcdef")  # the escapes of one half of a pair
WHOLE_RANGE = (-(2**63), 2**64 - 1)  # the integers orjson reads as integers
SPACE = " \t\n\r"


class NotRegular(ValueError):
    """A FIFO, a device or a folder where a state or settings file belongs, or one too large:
    never read (jsonfile's NotARegularFile says the same of a state file)."""


def _whole_number(text: str) -> int | float:
    value = int(text)
    return value if WHOLE_RANGE[0] <= value <= WHOLE_RANGE[1] else float(text)


def _real_number(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("a number past a double's range")
    return value


class _AsOrjson:
    """What `_json.make_scanner` reads its settings from (json.JSONDecoder's names), with
    numbers read as orjson reads them."""

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
    """All of a regular file; None where there is none, OSError as it comes."""
    try:
        fd = os.open(name, flags, dir_fd=folder)
    except FileNotFoundError:
        return None
    return read_open(fd, name)


def read_open(fd: int, name: object, limit: int | None = None) -> bytes:
    """All of the file open at `fd` (closed after), if it is a regular file of at most `limit`
    bytes; NotRegular otherwise (never a read of a FIFO that could wait)."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(f"{name} is not a regular file")
        if limit is not None and st.st_size > limit:
            raise NotRegular(f"{name} is larger than {limit} bytes")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_capped(fd: int, limit: int) -> bytes:
    """All of the file open at `fd` (closed after), read at once; NotRegular, saying why as
    words that follow the file's name, if it is no regular file or holds over `limit` bytes."""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular("is not a regular file")
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise NotRegular(f"is larger than {limit // 1024} KiB")
    return data


def read_owned(fd: int, uid: int, limit: int) -> bytes | None:
    """All of the file open at `fd` (closed after) if it is a regular file of `uid`'s that
    nobody else may write, of at most `limit` bytes; None otherwise."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o022 or st.st_uid != uid or st.st_size > limit:
            return None
        return os.read(fd, limit)
    finally:
        os.close(fd)


def parse(data: bytes) -> object:
    """A file's JSON (a byte-order mark allowed); ValueError where it is none."""
    try:
        text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as exc:  # (a ValueError: its words are the decoder's)
        raise ValueError(f"not JSON: {exc}") from None
    return loads(text)


def read_json(folder: int, name: str) -> object:
    data = read(folder, name)
    return None if data is None else parse(data)


def below(fd: int, *names: str) -> int | None:
    """`walk`, or None where the folder is not there."""
    try:
        return walk(fd, *names)
    except FileNotFoundError:
        return None


def loads(text: str) -> object:
    """JSON text as Python values, as orjson reads it; ValueError where it is not JSON."""
    start = len(text) - len(text.lstrip(SPACE))
    try:
        value, end = _SCAN(text, start)
    except (StopIteration, SystemError):  # the bare C scanner's "no value here"
        raise ValueError("not JSON") from None
    finally:
        _AsOrjson.memo.clear()
    if text[end:].strip(SPACE):
        raise ValueError("not JSON: extra data after the value")
    if "\\" in text and any(escape in text.lower() for escape in SURROGATES) and _lone_surrogate(value):
        raise ValueError("not JSON: a lone surrogate")  # (orjson refuses one; a pair is a char)
    return value


def _lone_surrogate(value: object) -> bool:
    """Whether a string anywhere in `value` holds half of a surrogate pair."""
    if isinstance(value, str):
        return any("\ud800" <= char <= "\udfff" for char in value)
    if isinstance(value, dict):
        return any(_lone_surrogate(key) or _lone_surrogate(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_lone_surrogate(item) for item in value)
    return False


def obj(value: object) -> dict:  # type: ignore[type-arg]
    """A JSON object as it was read, or an empty one for any other value."""
    return value if isinstance(value, dict) else {}


def as_text(value: object) -> str | None:
    """A JSON string as it was read, or None for any other value."""
    return value if isinstance(value, str) else None
