"""A run's beginning, read back from the session's record where the span builder does not
remember it (a daemon restarted, a session first heard of mid-run, one forgotten for newer):
when the run began, and whether it is a resumed one (a completed session reopened), so that its
span gets the start and the place in the trace it would have had.

Read on the exporter's thread, never the ingestion's: the record (`session.json`) for when the
session was created, and the last TAIL_BYTES of its `trace.jsonl` for the latest reopening.
Nothing is opened through a link, and only regular files are read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson

from sidecar import safedir
from sidecar.base.timeutil import parse_ts
from sidecar.layout import UnconfinedName, Workspace

TAIL_BYTES = 64 * 1024
SLACK = 0.002  # a trace line's time is the event's, rounded to the millisecond


def run_began(root: str, harness_id: str, at: float) -> tuple[float | None, bool]:
    """When the run that `at` belongs to began, and whether it is a resumed one; (None,
    False) where the record cannot tell (then the first event heard of starts it). A run whose
    reopening lies before the last TAIL_BYTES of its trace is taken for the first run."""
    try:
        folder = Workspace(Path(root)).session_dir(harness_id)
    except UnconfinedName:  # a hand-edited binding's id names no folder of ours
        return None, False
    reopened = None
    for line in _tail(folder / "trace.jsonl"):
        when = parse_ts(line.get("createdAt"))
        if line.get("event") == "session.reopened" and when is not None and when <= at + SLACK:
            reopened = when
    if reopened is not None:
        return reopened, True
    record = _read(folder / "session.json", 1024 * 1024)
    try:
        created = parse_ts(orjson.loads(record).get("createdAt")) if record else None
    except (ValueError, AttributeError):
        created = None
    return created, False


def _tail(path: Path) -> list[dict[str, object]]:
    data = _read(path, TAIL_BYTES, tail=True)
    lines = data.splitlines()
    if len(data) == TAIL_BYTES:
        lines = lines[1:]  # the first may be cut
    found = []
    for raw in lines:
        try:
            parsed = orjson.loads(raw)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            found.append(parsed)
    return found


def _read(path: Path, limit: int, tail: bool = False) -> bytes:
    """At most `limit` bytes of a regular file (its last, with `tail`); b"" where it cannot be
    read."""
    try:
        with open(safedir.open_file(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return b""
            if tail:
                handle.seek(max(0, handle.seek(0, os.SEEK_END) - limit))
            return handle.read(limit)
    except (OSError, ValueError):
        return b""
