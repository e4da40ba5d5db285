"""What a session's end learns from the host's transcript, a file an event names: whether
its last turn failed, and its token figures; and whether the transcript is still being
written. Nothing here can keep a session from completing."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from sidecar.hosts import transcripts
from sidecar.inbox.events import Event
from sidecar.sessions import tokens as usage
from sidecar.sessions.model import SessionRecord

log = logging.getLogger("sidecar")


def read_transcript(record: SessionRecord, event: Event) -> usage.Growth | None:
    """At a session's end, what only the host's transcript says: whether the last turn failed
    (unless a turn-failed event said so already) and the session's token figures. A
    transcript that cannot be read leaves both out, never the end."""
    path = event.transcript_path or record.sidecar.transcript_path
    try:
        failure = None if record.sidecar.turn_failed else \
            transcripts.last_turn_failure(event.host, path)
        tokens = transcripts.token_totals(event.host, path, event.session_id)
    except Exception as exc:  # the file an event names cannot undo the end (MemoryError...)
        log.warning("%s: transcript %s not read: %r", record.id, path, exc)
        return None
    if failure is not None:
        event.turn_failure = (failure.kind, failure.message)
    if tokens is None:
        return None
    grew = usage.Growth(usage.grown(record.sidecar.tokens, tokens.to_json()),
                        first=record.sidecar.tokens is None)
    record.sidecar.tokens = tokens.to_json()
    return grew


def transcript_recent(record: SessionRecord, now: float, window: float) -> bool:
    """Whether the session's transcript was written within `window`: it is still going."""
    path = record.sidecar.transcript_path
    if not path:
        return False
    try:
        return now - os.stat(Path(path)).st_mtime < window
    except OSError:
        return False
