"""What a session's end learns from its host's own records (a transcript an event names, or
the host's database): whether its last turn failed, and its token figures; and whether the
transcript is still being written. Nothing here can keep a session from completing."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from sidecar.hosts import registry
from sidecar.hosts.base import EndFacts
from sidecar.inbox.events import Event
from sidecar.sessions.model import SessionRecord

log = logging.getLogger("sidecar")


def read(record: SessionRecord, event: Event) -> EndFacts:
    """At a session's end, what only the host's own records say, asked of its host. Records
    that cannot be read (an unknown host has none) leave both out, never the end."""
    host = registry.find(event.host)
    if host is None:
        return EndFacts()
    found = event.recorded_facts
    if found is not None:
        return found  # read with the end, as the workspace's owner: never again as the daemon
    path = event.transcript_path or record.sidecar.transcript_path
    try:
        return host.end_facts(path, event.session_id)
    except Exception as exc:  # the file an event names cannot undo the end (MemoryError...)
        log.warning("%s: transcript %s not read: %r", record.id, path, exc)
        return EndFacts()


def transcript_recent(record: SessionRecord, now: float, window: float) -> bool:
    """Whether the session's transcript was written within `window`: it is still going."""
    path = record.sidecar.transcript_path
    if not path:
        return False
    try:
        return now - os.stat(Path(path)).st_mtime < window
    except OSError:
        return False
