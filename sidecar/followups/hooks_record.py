"""hooks.json in Redis mode: Redis holds the hooks and their queue (coordination/redis/records.py), and the
file is their copy, which people still edit by hand.

Each change names the record's revision it was read at and is refused if the record moved on
since (a command's change as well as a leader's), and each copy carries the revision it was
written at (`redisRevision`). So the store (store.py) reads the record, and looks at the file
only to tell what changed it:
- the file is the record's copy, or gone: the record stands (a gone copy is written again);
- it is, byte for byte, the copy some leader wrote at an older revision (Redis keeps each
  copy's digest by revision): a deposed leader's late rename set it back; the record stands
  and the copy is written again;
- anything else is a person's edit (of a copy at any revision, or one that says none): taken
  up as the file is in file mode (a broken edit is left as it is and the record is worked on;
  an edit of an older copy, with a warning, undoes what leaders did since, as a save over the
  daemon's write does in file mode), except that the claims and runs stay the record's, so
  an edit never makes a leader adopt or signal a process no leader started.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from sidecar import jsonfile
from sidecar.coordination.records import HOOKS, LAST_GOOD, REVISION, copy_revision
from sidecar.followups import hookstate, trust
from sidecar.followups.hookstate import Holder, HookState, merged_after_repair
from sidecar.followups.model import HooksDoc, HooksError, parse

if TYPE_CHECKING:
    from sidecar.coordination.redis.records import RedisRecords

log = logging.getLogger("sidecar")


def refresh(store: Holder, records: RedisRecords, now: float) -> HookState:
    """`HookStore.refresh` in Redis mode (see the module); call with the lock held."""
    path = store.ws.hooks_file
    sig = jsonfile.signature(path)
    revision = records.revision(HOOKS)
    state = store.state
    if state is not None and sig == state.signature and revision == state.revision:
        return state
    record = records.read(HOOKS, adopt=False)  # the file is compared with it, below
    try:
        data: bytes | None = jsonfile.read_bytes(path)
    except FileNotFoundError:
        data = None
    except jsonfile.NotARegularFile as exc:
        return _broken(store, records, state, str(exc), sig, now, revision)
    if record is not None and (data is None or data == record or records.late_copy(data)):
        store.state = HookState(parse(record), None, sig, revision=revision)
        if data != record:  # set back, or removed: the record's copy again
            log.info("%s is an older copy of what Redis holds; written again", path)
            records.mirror(lambda: _copy(store, records, record))
        return store.state
    if data is None:  # neither yet: a workspace new to Redis mode, before its seeding
        store.state = HookState(HooksDoc(), None, sig, revision=revision)
        return store.state
    try:
        doc = parse(data)
    except HooksError as exc:
        return _broken(store, records, state, str(exc), sig, now, revision)
    read_at = copy_revision(data)
    if record is not None and read_at is not None and read_at < revision:
        log.warning("%s was edited from its copy at revision %d while the record moved on to %d "
                    "(a follow-up queued, claimed or finished meanwhile); the edit is taken up "
                    "whole, as in file mode", path, read_at, revision)
    if record is not None:
        _keep_claims(doc, parse(record))
    else:  # taken up from the file: only runs this user's sidecar signed are kept (trust.py)
        _keep_signed_runs(store, doc)
    if state is not None and state.error is not None:
        log.info("%s is valid again; taken up", path)
        doc = merged_after_repair(doc, state)
    store.state = HookState(doc, None, sig, revision=revision)
    doc.drop_orphans()
    if not records.fenced or records.me is not None:  # a stand-by leaves it to the leader
        send(store, records, doc.to_json())
    return store.state


def send(store: Holder, records: RedisRecords, data: dict[str, object]) -> None:
    """`HookStore.write` in Redis mode: the record, if it is still at the revision the store
    read (Conflict if not), then its copy, which says its revision (and `hooks.last-good.json`,
    for file mode, should the workspace go back to it)."""
    revision = store.state.revision if store.state is not None else records.revision(HOOKS)
    body = jsonfile.dumps({**data, REVISION: revision + 1})
    records.expect(HOOKS, revision)
    records.put(HOOKS, body)
    records.note_copy(revision + 1, body)
    records.delete(LAST_GOOD)
    store.fence()
    _sent(store, records)

    def copies() -> None:
        _copy(store, records, body)
        records.write_copy(LAST_GOOD, body)
    records.mirror(copies)


def send_while_broken(store: Holder, records: RedisRecords, data: dict[str, object],
                      kept: dict[str, object]) -> None:
    """A change while the file is broken: the record changes, the file stays as the person
    left it, and what the repair merges (since when, what fired) is kept beside it."""
    revision = store.state.revision if store.state is not None else records.revision(HOOKS)
    records.expect(HOOKS, revision)
    records.put(HOOKS, jsonfile.dumps({**data, REVISION: revision + 1}))
    records.put(LAST_GOOD, jsonfile.dumps(kept))
    store.fence()
    _sent(store, records)


def _broken(store: Holder, records: RedisRecords, state: HookState | None, error: str,
            sig: jsonfile.Signature | None, now: float, revision: int) -> HookState:
    """`hookstate.broken` at the record's revision: a record that moved on while the file is
    broken (another machine's change, a command's) is worked on as it is now."""
    if state is not None and state.revision != revision:
        fresh = hookstate.last_good(store.ws, records)
        fresh.error = state.error
        fresh.broken_at = fresh.broken_at or state.broken_at
        fresh.fired_while_broken |= state.fired_while_broken
        state = fresh
    found = hookstate.broken(store, state, records, error, sig, now)
    found.revision = revision
    return found


def _sent(store: Holder, records: RedisRecords) -> None:
    revision = records.sent_revision(HOOKS)
    if store.state is not None and revision is not None:
        store.state.revision = revision


def _copy(store: Holder, records: RedisRecords, data: bytes) -> None:
    written = records.write_copy(HOOKS, data)
    if store.state is not None:
        store.state.signature = written


def _keep_claims(doc: HooksDoc, record: HooksDoc) -> None:
    """An edit's queue entries keep the record's claims and runs: only a leader claims."""
    held = {e.id: e for e in record.pending}
    for entry in doc.pending:
        found = held.get(entry.id)
        entry.claimed_by = found.claimed_by if found else None
        entry.claimed_at = found.claimed_at if found else None
        entry.log = found.log if found else None
        entry.run = found.run if found else None


def _keep_signed_runs(store: Holder, doc: HooksDoc) -> None:
    """A run record taken up from the file proves nothing unless this user's sidecar signed
    it: the others are dropped (their claims stay, and are settled by their runners' start
    tokens and leases, never by a pid the file names)."""
    for entry in doc.pending:
        if entry.run is not None and not trust.is_ours(store.ws, entry.id, entry.run):
            entry.run = None
