"""Every session record of a workspace, read in one pass (`sessions`, a prefix's lookup).

`SessionStore.load_session` opens each record's path from `/` down, one folder at a time,
never through a link: right for one record, but most of the cost of reading ten thousand.
Here the sessions folder is opened that way once, and each record below it by two more steps
that follow no link either (O_NOFOLLOW): the same guarantee, at about half the cost.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import orjson

from sidecar import jsonfile, safedir
from sidecar.layout import PLAIN_NAME, Workspace
from sidecar.sessions.model import SessionRecord

FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Scanned:
    harness_id: str
    record: SessionRecord | None  # None: it could not be read (`error` says why)
    error: str | None = None


def records(ws: Workspace) -> Iterator[Scanned]:
    """Each session folder's record; a folder without one yet is passed over. OSError if the
    sessions folder itself cannot be opened (a missing one has no records)."""
    try:
        folder = safedir.open_dir(ws.sessions)
    except FileNotFoundError:
        return
    try:
        for name in sorted(os.listdir(folder)):
            if PLAIN_NAME.fullmatch(name):
                found = _read(folder, name, ws)
                if found is not None:
                    yield found
    finally:
        os.close(folder)


def _read(folder: int, name: str, ws: Workspace) -> Scanned | None:
    path = ws.session_dir(name) / "session.json"
    try:
        session = os.open(name, safedir.DIR_FLAGS, dir_fd=folder)
        try:
            fd = os.open("session.json", FILE_FLAGS, dir_fd=session)
        finally:
            os.close(session)
        data = jsonfile.read_open(fd, path, jsonfile.MAX_STATE_BYTES)
        parsed = orjson.loads(data.removeprefix(b"\xef\xbb\xbf"))
        if not isinstance(parsed, dict):
            raise ValueError(f"{path} is not a JSON object")
        return Scanned(name, SessionRecord.from_json(parsed))
    except FileNotFoundError:
        return None  # a folder being made, or one removed while this read: no record
    except NotADirectoryError:
        return Scanned(name, None, f"{ws.sessions / name} is not a folder (a link?); not read")
    except (OSError, ValueError) as exc:
        return Scanned(name, None, str(exc))
