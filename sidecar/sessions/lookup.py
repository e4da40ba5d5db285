"""Which record is a host session's, given the host's session id, sidecar's harness id, or the
start of either (`status --session`, `hooks history --session`).

A record's id is derived from its host and session id (`base.ids.harness_id`), so the hosts it
may be of are tried first; a host no one listed, whose session no binding names any more (it
completed), is found by the record that names the session.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from sidecar.base.errors import SidecarError
from sidecar.base.ids import harness_id
from sidecar.layout import PLAIN_NAME
from sidecar.sessions import scan
from sidecar.sessions.model import Key, SessionRecord
from sidecar.sessions.store import SessionStore


def find_record(store: SessionStore, session_id: str, hosts: set[str]) -> tuple[str, SessionRecord] | None:
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


# -- a session named by a prefix ------------------------------------------------------------

SHOWN_CANDIDATES = 10  # an ambiguous prefix names this many of its sessions, then how many more


@dataclass(frozen=True)
class Named:
    """The session a name given on the command line stands for."""

    host: str
    session_id: str  # the host's id
    record: SessionRecord | None  # None: only the hooks' history or queue knows it


class UnknownSession(SidecarError):
    pass


class AmbiguousSession(SidecarError):
    def __init__(self, text: str, candidates: list[Named]) -> None:
        shown = [f"  {c.host} {c.session_id}" + (f" ({c.record.id})" if c.record else "")
                 for c in candidates[:SHOWN_CANDIDATES]]
        more = len(candidates) - SHOWN_CANDIDATES
        super().__init__("\n".join([f"{text!r} is the start of {len(candidates)} sessions' ids; "
                                    "give more of it:", *shown]
                                   + ([f"  ... and {more} more"] if more > 0 else [])))
        self.candidates = candidates


def resolve(store: SessionStore, text: str, hosts: set[str], known: Iterable[Key] = ()) -> Named:
    """The one session `text` names: a host's session id or sidecar's harness id, whole, or
    the start of exactly one of them. A whole id wins over ids it is the start of. `hosts`:
    the hosts to try a whole id with first; `known`: sessions the hooks' history or queue
    name, which may have no record any more. UnknownSession or AmbiguousSession otherwise;
    OSError/ValueError if the record a whole id names is unreadable."""
    text = text.strip()
    if not text:
        raise UnknownSession("a session id cannot be empty")
    known = list(dict.fromkeys(known))
    whole = _by_id(store, text, hosts | {h for h, sid in known if sid == text})
    if whole is not None:
        return whole
    exact: list[SessionRecord] = []
    found: dict[Key, Named] = {}
    for record in _records(store):  # one pass: the whole host id, or the start of an id
        key = (record.host or "unknown", record.host_session_id or record.id)
        if key[1] == text:
            exact.append(record)
        elif record.id.startswith(text) or key[1].startswith(text):
            found[key] = Named(*key, record)
    if exact:  # the latest updated, if several hosts used the id
        latest = max(exact, key=lambda r: r.updated_at or "")
        return Named(latest.host or "unknown", text, latest)
    for key in known:
        if key[1] == text:
            return Named(*key, None)
        if key[1].startswith(text):
            found.setdefault(key, Named(*key, None))
    if not found:
        raise UnknownSession(f"no session {text!r} in {store.ws.root}")
    if len(found) > 1:
        raise AmbiguousSession(text, sorted(found.values(), key=lambda n: (n.host, n.session_id)))
    return next(iter(found.values()))


def _by_id(store: SessionStore, text: str, hosts: set[str]) -> Named | None:
    """The session whose record is found from `text` without a scan: a harness id derived
    from a host and `text` as the host's id, or `text` as a harness id itself."""
    for host in sorted(hosts):
        if (record := store.load_session(harness_id(host, text))) is not None:
            return Named(host, text, record)
    record = store.load_session(text) if PLAIN_NAME.fullmatch(text) else None
    if record is None:
        return None
    return Named(record.host or "unknown", record.host_session_id or record.id, record)


def _records(store: SessionStore) -> Iterator[SessionRecord]:
    """Every readable record of the workspace (one that cannot be read names no session)."""
    for found in scan.records(store.ws):
        if found.record is not None:
            yield found.record
