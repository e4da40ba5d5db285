"""The inbox: list arrivals, read them safely, set bad ones aside, remove applied ones.

Events are read in place and deleted once applied: only the workspace's leader reads, so no
per-file claim is needed (and moving files out would stall watchdog, see the README).
Symlinks are never followed and FIFOs, sockets and folders are never opened for reading.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from . import events, jsonfile
from .layout import Workspace
from .timeutil import iso

GRACE_SECONDS = 2.0  # a file written in place is not judged before it is this still


@dataclass
class Arrival:
    """An inbox entry that is not a producer's temporary file."""

    name: str
    mtime: float
    kind: str  # "file", "symlink", "dir" or "other"


@dataclass
class Deferred:
    """A file that may still be being written; look again at `retry_at`."""

    name: str
    retry_at: float


@dataclass
class Rejected:
    name: str
    reason: str


def is_temporary(name: str) -> bool:
    """Producers' files in the making: dotfiles and `*.tmp`, always left alone."""
    return name.startswith(".") or name.endswith(".tmp")


def scan(ws: Workspace) -> list[Arrival]:
    """Every arrival in the inbox, oldest name first (names sort in arrival order)."""
    arrivals = []
    try:
        entries = list(os.scandir(ws.inbox))
    except FileNotFoundError:
        return []
    for entry in entries:
        name = entry.name
        if is_temporary(name) or name == "rejected":
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            kind = "symlink"
        elif stat.S_ISREG(st.st_mode):
            kind = "file"
        elif stat.S_ISDIR(st.st_mode):
            kind = "dir"
        else:
            kind = "other"
        arrivals.append(Arrival(name, st.st_mtime, kind))
    arrivals.sort(key=lambda a: a.name)
    return arrivals


_NOT_A_FILE = {
    "symlink": "a symlink: links are never followed",
    "dir": "a folder, not a regular file",
    "other": "not a regular file (FIFO, socket or device)",
}


def _judge_name(arrival: Arrival, now: float) -> Deferred | Rejected | None:
    """What the name and the kind of entry alone decide, before anything is opened."""
    if printable(arrival.name) != arrival.name:
        # The name becomes the event's id in session state, which is UTF-8 JSON.
        return Rejected(arrival.name, "the file name is not UTF-8")
    if not arrival.name.endswith(".json"):
        if now - arrival.mtime < GRACE_SECONDS:
            return Deferred(arrival.name, arrival.mtime + GRACE_SECONDS)
        return Rejected(arrival.name, "not an event file: only *.json names are events")
    if arrival.kind != "file":
        return Rejected(arrival.name, _NOT_A_FILE[arrival.kind])
    return None


def read(ws: Workspace, arrival: Arrival, now: float) -> events.Event | Deferred | Rejected | None:
    """Turn one arrival into an event, a rejection, a deferral, or None if it vanished."""
    judged = _judge_name(arrival, now)
    if judged is not None:
        return judged
    path = ws.inbox / arrival.name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Rejected(arrival.name, f"cannot be opened safely: {exc.strerror}")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return Rejected(arrival.name, "not a regular file")
        if st.st_size > events.MAX_EVENT_BYTES:
            return Rejected(arrival.name, f"larger than {events.MAX_EVENT_BYTES} bytes")
        chunks = []
        remaining = events.MAX_EVENT_BYTES + 1  # never read past the limit
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        mtime = st.st_mtime
    finally:
        os.close(fd)
    try:
        return events.parse(data, arrival.name, mtime)
    except events.BadEvent as exc:
        if len(data) <= events.MAX_EVENT_BYTES and now - mtime < GRACE_SECONDS:
            return Deferred(arrival.name, mtime + GRACE_SECONDS)
        return Rejected(arrival.name, str(exc))


TEMPORARY_TTL = 3600.0  # a producer's temporary file older than this was abandoned


def clean_temporaries(ws: Workspace, now: float) -> int:
    """Remove producers' temporary files (dotfiles, `*.tmp`) left for over an hour: a producer
    that died, or a write that failed on a full disk. Only regular files; returns how many."""
    removed = 0
    for entry in os.scandir(ws.inbox):
        if not is_temporary(entry.name) or not entry.is_file(follow_symlinks=False):
            continue
        try:
            if now - entry.stat(follow_symlinks=False).st_mtime > TEMPORARY_TTL:
                os.unlink(entry.path)
                removed += 1
        except FileNotFoundError:
            continue
    return removed


def printable(name: str) -> str:
    """A file name as valid UTF-8 text: bytes that are not UTF-8 become U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


MAX_KEPT_NAME = 150  # bytes: room for `.error.json`, a counter and temporary-file decoration


def _kept_name(name: str) -> str:
    """The name a rejected entry gets: its own, or, where that would not leave room for its
    note (`<name>.error.json`) within the 255 bytes a name may have, a shortened one that stays
    unique (the note keeps the original)."""
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) <= MAX_KEPT_NAME:
        return name
    digest = hashlib.sha256(raw).hexdigest()[:16]
    return raw[:100].decode("utf-8", "ignore") + "-" + digest


def shown(name: str) -> str:
    """A file name as it may be logged: printable, and no newline can forge a log line."""
    return printable(name).encode("unicode_escape").decode("ascii")


def _free_name(folder: Path, name: str) -> str:
    name = _kept_name(name)
    candidate, n = name, 1
    while os.path.lexists(folder / candidate) or os.path.lexists(
        folder / f"{candidate}.error.json"
    ):
        candidate = f"{name}.{n}"
        n += 1
    return candidate


def reject(ws: Workspace, rejection: Rejected, now: float) -> str | None:
    """Set a bad entry aside in `rejected/` beside `<name>.error.json`; returns its new name."""
    ws.rejected.mkdir(mode=0o700, parents=True, exist_ok=True)
    source = ws.inbox / rejection.name
    target_name = _free_name(ws.rejected, rejection.name)
    target = ws.rejected / target_name
    note = {
        "file": printable(rejection.name),
        "reason": rejection.reason,
        "rejectedAt": iso(now),
    }
    jsonfile.write_json_atomic(ws.rejected / f"{target_name}.error.json", note)
    try:
        if os.path.isdir(source) and not os.path.islink(source):
            os.rename(source, target)
        else:
            # link + unlink rather than rename: a rename out of a watched folder makes watchdog
            # hold later events while it waits to pair the move.
            os.link(source, target, follow_symlinks=False)
            os.unlink(source)
    except FileNotFoundError:
        os.unlink(ws.rejected / f"{target_name}.error.json")
        return None
    return target_name


def remove(ws: Workspace, names: list[str]) -> None:
    """Delete applied event files; one already gone is fine."""
    for name in names:
        try:
            os.unlink(ws.inbox / name)
        except FileNotFoundError:
            pass


def count_rejected(ws: Workspace) -> int:
    try:
        return sum(
            1
            for entry in os.scandir(ws.rejected)
            if not entry.name.endswith(".error.json") and not is_temporary(entry.name)
        )
    except FileNotFoundError:
        return 0
