"""What one process knows of a workspace's hooks and queue, between its reads of the store
(followups/store.py; hooks_record.py in Redis mode)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sidecar import jsonfile
from sidecar.base.timeutil import parse_ts
from sidecar.followups.model import HISTORY_LIMIT, HooksDoc


@dataclass
class HookState:
    """What one process knows of hooks.json: the last good document and any error."""

    doc: HooksDoc
    error: str | None = None
    signature: jsonfile.Signature | None = None
    broken_at: float | None = None
    fired_while_broken: set[str] = field(default_factory=set)
    revision: int = 0  # in Redis mode, the record's revision it was read at


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
