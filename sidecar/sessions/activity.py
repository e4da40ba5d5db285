"""What a session is doing now, and why sidecar thinks so: from its record alone.

Every state comes from the host's own events (kept in the record by `rules.py`), never from
reading a screen, so each names the event it was inferred from. Pure: no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sidecar.base.endreasons import HOST_EXITED, STALE
from sidecar.base.timeutil import parse_ts
from sidecar.sessions.model import SessionRecord


class State(StrEnum):
    WORKING = "working"  # a turn is open
    WAITING = "waiting"  # the host asked the user something (needs-input)
    IDLE = "idle"  # between turns: the host waits for the next prompt
    LIMITED = "limited"  # its last turn hit a usage limit that has not passed
    ENDED = "ended"


@dataclass(frozen=True)
class Activity:
    """A session's state, since when (epoch seconds; None: not known) and why it is that."""

    state: State
    since: float | None
    why: str  # the event it was inferred from, in words
    detail: str = ""  # the host's own words, a tool name, or a limit's message


def of(record: SessionRecord) -> Activity:
    meta = record.sidecar
    if not record.active:
        return Activity(State.ENDED, parse_ts(record.completed_at), end_cause(record),
                        meta.completion_reason or "")
    if meta.limit is not None:
        return Activity(State.LIMITED, parse_ts(meta.limit.since),
                        f"a turn hit a usage limit ({meta.limit.error})", meta.limit.message)
    if meta.needs_input is not None:
        asked = meta.needs_input
        return Activity(State.WAITING, parse_ts(asked.since), _asks(asked.kind), asked.message)
    if meta.turn_open:
        return Activity(State.WORKING, parse_ts(meta.turn_started_at or record.updated_at),
                        "a turn began and has not ended", meta.last_tool or "")
    return Activity(State.IDLE, parse_ts(meta.user_turn_ended_at or record.updated_at),
                    "its last turn ended" if meta.user_turn_ended_at else "no turn yet")


def end_cause(record: SessionRecord) -> str:
    """How a completed session ended, in words: who ended it, not sidecar's code for it."""
    meta = record.sidecar
    reason = meta.completion_reason or ""
    if reason == HOST_EXITED:
        cause = "the host process exited"
    elif reason == STALE:
        cause = "swept: no event for too long"
    else:
        cause = "its own end"
    return cause + (" mid-turn" if meta.turn_open and reason != STALE else "")


# The hosts' own names for what they ask (Claude Code's notification_type, Gemini's type).
_ASKS = {
    "permission_prompt": "asked for permission", "toolpermission": "asked for permission",
    "idle_prompt": "waiting for your prompt", "elicitation_dialog": "asked you a question",
    "permission_request": "asked for permission", "permission": "asked for permission",
    "elicitation_url_dialog": "asked you to open a link",
    "worker_permission_prompt": "a worker asked for permission",
    "agent_needs_input": "an agent asked for input",
}


def _asks(kind: str) -> str:
    return _ASKS.get(kind.lower(), f"asked for input ({kind})")

