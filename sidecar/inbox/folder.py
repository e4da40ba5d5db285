"""The inbox: list arrivals, read them safely, set bad ones aside, remove applied ones.

Events are read in place and deleted once applied: only the workspace's leader reads, so no
per-file claim is needed (and moving a file out of a watched folder holds watchdog's events
for half a second).
Symlinks are never followed and FIFOs, sockets and folders are never opened for reading.
"""

from __future__ import annotations

import hashlib
import os
import stat
from contextlib import suppress
from dataclasses import dataclass

from sidecar import jsonfile, safedir
from sidecar.base.escapes import escaped
from sidecar.base.timeutil import from_local, iso
from sidecar.inbox import events
from sidecar.layout import Workspace

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
    try:
        with safedir.opened(ws.inbox) as folder:  # never a symlinked inbox (ELOOP)
            arrivals = [a for entry in os.scandir(folder) if (a := _arrival(entry)) is not None]
    except FileNotFoundError:
        return []
    arrivals.sort(key=lambda a: a.name)
    return arrivals


def _arrival(entry: os.DirEntry[str]) -> Arrival | None:
    name = entry.name
    if is_temporary(name) or name == "rejected":
        return None
    try:
        st = entry.stat(follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        kind = "symlink"
    elif stat.S_ISREG(st.st_mode):
        kind = "file"
    elif stat.S_ISDIR(st.st_mode):
        kind = "dir"
    else:
        kind = "other"
    return Arrival(name, from_local(st.st_mtime), kind)


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
    return Rejected(arrival.name, _NOT_A_FILE[arrival.kind]) if arrival.kind != "file" else None


def read(ws: Workspace, arrival: Arrival, now: float) -> events.Event | Deferred | Rejected | None:
    """Turn one arrival into an event, a rejection, a deferral, or None if it vanished."""
    judged = _judge_name(arrival, now)
    if judged is not None:
        return judged
    try:
        fd = safedir.open_named(ws.inbox, arrival.name, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except safedir.LinkRefused:
        raise  # the inbox itself was swapped: the event is fine, the workspace is set aside
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
        mtime = from_local(st.st_mtime)
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
    with safedir.opened(ws.inbox) as folder:
        for entry in os.scandir(folder):
            if not is_temporary(entry.name) or not entry.is_file(follow_symlinks=False):
                continue
            try:
                if now - from_local(entry.stat(follow_symlinks=False).st_mtime) > TEMPORARY_TTL:
                    os.unlink(entry.name, dir_fd=folder)
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
    return escaped(printable(name))


def _exists(folder: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _free_name(folder: int, name: str) -> str:
    name = _kept_name(name)
    candidate, n = name, 1
    while _exists(folder, candidate) or _exists(folder, f"{candidate}.error.json"):
        candidate = f"{name}.{n}"
        n += 1
    return candidate


def reject(ws: Workspace, rejection: Rejected, now: float) -> str | None:
    """Set a bad entry aside in `rejected/` beside `<name>.error.json`; returns its new name.

    Both folders are opened once, without following a link, and every step works relative to
    them: a folder swapped for a symlink meanwhile is never written through (see safedir)."""
    with safedir.opened(ws.inbox) as inbox, safedir.opened(ws.rejected, create=True) as rejected:
        target = _free_name(rejected, rejection.name)
        note = {"file": printable(rejection.name), "reason": rejection.reason, "rejectedAt": iso(now)}
        jsonfile.replace_in(rejected, f"{target}.error.json", jsonfile.dumps(note))
        name = rejection.name
        try:
            st = os.stat(name, dir_fd=inbox, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                os.rename(name, target, src_dir_fd=inbox, dst_dir_fd=rejected)
            else:
                # link + unlink rather than rename: a rename out of a watched folder makes
                # watchdog hold later events while it waits to pair the move.
                os.link(name, target, src_dir_fd=inbox, dst_dir_fd=rejected, follow_symlinks=False)
                os.unlink(name, dir_fd=inbox)
        except FileNotFoundError:
            os.unlink(f"{target}.error.json", dir_fd=rejected)
            return None
        return target


def remove(ws: Workspace, names: list[str]) -> None:
    """Delete applied event files; one already gone is fine."""
    with safedir.opened(ws.inbox) as inbox:
        for name in names:
            with suppress(FileNotFoundError):
                os.unlink(name, dir_fd=inbox)
