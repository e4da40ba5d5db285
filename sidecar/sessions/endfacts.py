"""What a session's end learns from its host's own records (a transcript an event names, or
the host's database): whether its last turn failed, and its token figures and spend (read at
each turn's end too); and whether the transcript is still being written. Nothing here can
keep a session from completing.

A root daemon reads them with the rights of the workspace's owner (transcripts.reading_as):
what only root may read never reaches another user's records."""

from __future__ import annotations

import logging
import os

from sidecar import owner
from sidecar.base.timeutil import from_local
from sidecar.hosts import registry, transcripts
from sidecar.hosts.base import EndFacts
from sidecar.inbox.events import Event
from sidecar.layout import Workspace
from sidecar.sessions.model import SessionRecord

log = logging.getLogger("sidecar")


def read(record: SessionRecord, event: Event, ws: Workspace) -> EndFacts:
    """At a session's end, what only the host's own records say, asked of its host. Records
    that cannot be read (an unknown host has none, or the daemon cannot read as the owner of
    `ws`, whose record it is) leave both out, never the end."""
    host = registry.find(event.host)
    if host is None:
        return EndFacts()
    found = event.recorded_facts
    if found is not None:
        return found  # read with the end, as the workspace's owner: never again as the daemon
    path = event.transcript_path or record.sidecar.transcript_path
    try:
        with transcripts.reading_as(owners_reader(ws)):
            return host.end_facts(path, event.session_id)
    except Exception as exc:  # the file an event names cannot undo the end (MemoryError...)
        log.warning("%s: transcript %s not read: %r", record.id, path, exc)
        return EndFacts()


def figures(record: SessionRecord, event: Event, ws: Workspace) -> EndFacts:
    """At a turn's end, the token figures and spend the host's own records give so far, read
    as `read` reads them; how the turn ended is left out (its events tell that)."""
    found = read(record, event, ws)
    return EndFacts(tokens=found.tokens, spend=found.spend)


def owners_reader(ws: Workspace) -> transcripts.Reader | None:
    """Whose rights a root daemon reads the host's records of `ws` with: its owner's (None
    where that is root). A daemon that is not root reads with its own, which the kernel
    checks. CannotActAsOwner where the owner cannot be told (nothing is read then)."""
    if os.geteuid() != 0:
        return None
    account = owner.foreign_owner(ws)
    if account is None:
        return None
    return transcripts.Reader(account.uid, frozenset((account.gid, *account.groups)))


def transcript_recent(record: SessionRecord, now: float, window: float, ws: Workspace) -> bool:
    """Whether the session's transcript was written within `window`: it is still going."""
    st = transcript_stat(record.sidecar.transcript_path, ws)
    return st is not None and now - from_local(st.st_mtime) < window


def transcript_stat(path: str | None, ws: Workspace) -> os.stat_result | None:
    """The size and times of the transcript `path` names, as the owner of `ws` could learn
    them: None where there is none, or it is no regular file they may read (a root daemon
    tells nothing of a file only root may see, not even its size)."""
    if not path:
        return None
    try:
        with transcripts.reading_as(owners_reader(ws)):
            fd = transcripts.open_regular(path)
    except (transcripts.Unreadable, owner.CannotActAsOwner, OSError):
        return None
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)
