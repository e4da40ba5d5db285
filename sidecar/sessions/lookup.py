"""Which record is a host session's, given only the host's session id (`status --session`).

A record's id is derived from its host and session id (`rules.harness_id`), so the hosts it
may be of are tried first; a host no one listed, whose session no binding names any more (it
completed), is found by the record that names the session.
"""

from __future__ import annotations

import os

from sidecar.layout import PLAIN_NAME
from sidecar.sessions.model import SessionRecord
from sidecar.sessions.rules import harness_id
from sidecar.sessions.store import SessionStore


def find_record(store: SessionStore, session_id: str,
                hosts: set[str]) -> tuple[str, SessionRecord] | None:
    """The session's host and record (the latest updated, if several hosts used the id);
    None if no record names it. OSError/ValueError if a record tried by its id is unreadable."""
    for host in sorted(hosts):
        if (record := store.load_session(harness_id(host, session_id))) is not None:
            return host, record
    found = []
    folder = store.ws.sessions
    for name in os.listdir(folder) if folder.is_dir() else []:
        try:
            record = store.load_session(name) if PLAIN_NAME.fullmatch(name) else None
        except (OSError, ValueError):
            continue  # another session's record, unreadable: not this one's business
        if record is not None and record.host_session_id == session_id:
            found.append(record)
    if not found:
        return None
    latest = max(found, key=lambda r: r.updated_at or "")
    return latest.host or "unknown", latest
