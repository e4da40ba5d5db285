"""A session's state, read from its record's raw JSON with the standard library alone (the
status line reads it on every refresh of a status bar)."""

from sidecar.base.files import obj
from sidecar.base.timeutil import parse_ts
from sidecar.base.words import span


def state(record: dict) -> tuple[str, float | None, str]:  # type: ignore[type-arg]
    """(working / waiting / idle / limited / ended, since when, a detail): activity.of's
    states from the raw record."""
    meta = obj(obj(record.get("metadata")).get("sidecar"))
    if record.get("status") == "completed":
        return "ended", parse_ts(record.get("completedAt")), ""
    limit, asked = obj(meta.get("limit")), obj(meta.get("needsInput"))
    if isinstance(limit.get("since"), str):
        return "limited", parse_ts(limit["since"]), ""
    if isinstance(asked.get("since"), str):
        return "waiting", parse_ts(asked["since"]), ""
    updated = record.get("updatedAt")
    if meta.get("turnOpen") is True:
        tool = meta.get("lastTool")
        return "working", parse_ts(meta.get("turnStartedAt") or updated), \
            tool if isinstance(tool, str) else ""
    return "idle", parse_ts(meta.get("userTurnEndedAt") or updated), ""


WORDS = {"working": "working", "waiting": "waiting for you", "idle": "idle",
         "limited": "usage limit", "ended": "ended"}


def describe(record: dict, now: float) -> str:  # type: ignore[type-arg]
    name, since, detail = state(record)
    text = WORDS[name]
    if since is not None:
        text += f" {span(now - since)} ago" if name == "ended" else f" {span(now - since)}"
    return f"{text} ({detail[:20]})" if detail else text


