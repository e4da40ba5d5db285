"""What one process knows of a workspace's hooks and queue, between its reads of the store
(followups/store.py; hooks_record.py in Redis mode), and the last good copy it works on while
hooks.json is broken: taken up when the file breaks (`broken`), merged back into the file
once it is fixed (`merged_after_repair`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import orjson

from sidecar import jsonfile
from sidecar.base.timeutil import parse_ts
from sidecar.coordination.records import HOOKS, LAST_GOOD
from sidecar.followups.model import HISTORY_LIMIT, HooksDoc
from sidecar.layout import Workspace

if TYPE_CHECKING:
    from sidecar.coordination.redis.records import RedisRecords

log = logging.getLogger("sidecar")

BROKEN_SINCE = "sidecarBrokenSince"  # kept in hooks.last-good.json only while hooks.json is broken
FIRED_WHILE_BROKEN = "sidecarFiredWhileBroken"


@dataclass
class HookState:
    """What one process knows of hooks.json: the last good document and any error."""

    doc: HooksDoc
    error: str | None = None
    signature: jsonfile.Signature | None = None
    broken_at: float | None = None
    fired_while_broken: set[str] = field(default_factory=set)
    revision: int = 0  # in Redis mode, the record's revision it was read at


class Holder(Protocol):
    """What holds a process's state of one workspace's hooks and writes them (store.py's
    HookStore), as the ways of storing them (hooks_record.py for Redis mode) use it."""

    ws: Workspace
    state: HookState | None
    fence: Callable[[], None]  # a leader's check before each write (coordination/base.py)


def last_good(ws: Workspace, records: RedisRecords | None) -> HookState:
    """The state kept beside a broken file, with what was done while it was broken (in
    Redis mode, the record's copy of it, else the record itself)."""
    try:
        if records is not None:
            kept = records.read(LAST_GOOD, adopt=False) or records.read(HOOKS, adopt=False)
            raw = {} if kept is None else orjson.loads(kept)
        else:
            raw = jsonfile.read_json(ws.runtime / LAST_GOOD)
        broken_since = raw.pop(BROKEN_SINCE, None) if isinstance(raw, dict) else None
        fired = raw.pop(FIRED_WHILE_BROKEN, None) if isinstance(raw, dict) else None
        state = HookState(HooksDoc.from_json(raw))
    except (OSError, ValueError):
        return HookState(HooksDoc())
    state.broken_at = parse_ts(broken_since)
    state.fired_while_broken = {f for f in fired or [] if isinstance(f, str)}
    return state


def broken(holder: Holder, state: HookState | None, records: RedisRecords | None, error: str,
           sig: jsonfile.Signature | None, now: float) -> HookState:
    """hooks.json does not parse or validate: it is left as it is, and the holder works on
    the last good state (`state`, else the kept copy)."""
    if state is None:  # started on a broken file: carry on from the kept copy
        state = last_good(holder.ws, records)
        state.broken_at = state.broken_at or now
    elif state.error is None:  # it just broke
        state.broken_at = now
    if state.error != error:
        log.error("%s is broken, so it is left as it is and the last good hooks and "
                  "queue are used: %s", holder.ws.hooks_file, error)
    state.error = error
    state.signature = sig
    holder.state = state
    return state


def merged_after_repair(doc: HooksDoc, old: HookState) -> HooksDoc:
    """The user's fixed file, plus queue work done while it was broken."""
    ids = {e.id for e in doc.pending}
    for entry in old.doc.pending:
        queued = parse_ts(entry.enqueued_at) or 0.0
        if entry.id not in ids and old.broken_at is not None and queued >= old.broken_at:
            doc.pending.append(entry)
    doc.pending = [e for e in doc.pending if e.id not in old.fired_while_broken]
    for hook_id, hook in old.doc.hooks.items():
        target = doc.hooks.get(hook_id)
        if target is not None and (hook.last_fired_at or "") > (target.last_fired_at or ""):
            target.last_status = hook.last_status
            target.last_fired_at = hook.last_fired_at
            target.history = hook.history[-HISTORY_LIMIT:]
    doc.drop_orphans()
    return doc
