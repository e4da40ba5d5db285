"""What the records in Redis and their copies in the files share, without Redis: the names of
hooks.json's records, and the revision a copy of hooks.json says it was written at (Redis mode:
coordination/redis/records.py keeps the records, followups/hooks_record.py tells a late copy
from a person's edit by it)."""

from __future__ import annotations

import orjson

HOOKS, LAST_GOOD = "hooks.json", "hooks.last-good.json"
REVISION = "redisRevision"  # the revision a copy of hooks.json was written at
# Each machine's (process space's: proc.process_space) clock offset from Redis's, as its daemon
# last read it (redis/clock.py): a leader puts the times that machine's hooks stamped on
# Redis's clock (daemon/ingest.py).
OFFSETS = "sidecar:clock-offsets"
REMIRROR_EVERY = 10.0  # seconds between a leader's rewrites of copies set back (daemon/ingest.py)


def copy_revision(data: bytes) -> int | None:
    """The revision a copy of hooks.json says it was written at; None if it says none (or is
    not JSON: a person's broken edit)."""
    try:
        found = orjson.loads(data).get(REVISION)
    except (ValueError, AttributeError):
        return None
    return found if type(found) is int else None
