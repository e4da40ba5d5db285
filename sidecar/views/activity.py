"""What a session is doing now, and why sidecar thinks so: the one rule every view reads.

Every state comes from the host's own events (kept in the record by sessions/rules.py), never
from reading a screen, so each names the event it was inferred from. The rules leave the state
ready in the record as they apply each event (`metadata.sidecar.activity`, `written`), so the
status line, `sessions` and `top` read it as it is; a record written before that field existed,
or changed since by another writer (dotcontext), is read by the same rule here (`infer`).

Pure (no I/O, no clock) and read from the record's JSON with the standard library alone: the
status line reads it on every refresh of a status bar, where dataclasses or enum would cost
more than the rest of its work.
"""

import time

from sidecar.base.endreasons import HOST_EXITED, STALE
from sidecar.base.files import as_text, obj
from sidecar.base.timeutil import parse_ts


class State:
    """A session's states, by the names the record and `sessions --json` give them."""

    WORKING = "working"  # a turn is open
    WAITING = "waiting"  # the host asked the user something (needs-input)
    IDLE = "idle"  # between turns: the host waits for the next prompt
    LIMITED = "limited"  # its last turn hit a usage limit that has not passed
    ENDED = "ended"


STATES = (State.WORKING, State.WAITING, State.IDLE, State.LIMITED, State.ENDED)
WORDS = {State.WORKING: "working", State.WAITING: "waiting for you", State.IDLE: "idle",
         State.LIMITED: "usage limit", State.ENDED: "ended"}  # as every view says them


class Activity:
    """A session's state, since when (epoch seconds; None: not known) and why it is that."""

    __slots__ = ("state", "since", "why", "detail")

    def __init__(self, state: str, since: float | None, why: str, detail: str = "") -> None:
        self.state = state
        self.since = since
        self.why = why  # the event it was inferred from, in words
        self.detail = detail  # the host's own words, a tool name, or a limit's message

    def _fields(self) -> tuple[str, float | None, str, str]:
        return self.state, self.since, self.why, self.detail

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Activity) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"Activity{self._fields()!r}"


def of(record: dict) -> Activity:  # type: ignore[type-arg]
    """A record's state (its JSON, as the file holds it): as the rules left it, else inferred."""
    return _left(record) or infer(record)


def written(record: dict) -> dict[str, str]:  # type: ignore[type-arg]
    """What the rules leave in the record (`metadata.sidecar.activity`): its state inferred,
    `since` the record's own text of that moment."""
    state, since, why, detail = _rule(record)
    kept = {"state": state, "why": why, "detail": detail}
    return kept if since is None else {**kept, "since": since}


def _left(record: dict) -> Activity | None:  # type: ignore[type-arg]
    """The state the rules left, if it is whole and still agrees with the record's status."""
    left = obj(obj(obj(record.get("metadata")).get("sidecar")).get("activity"))
    state, since = left.get("state"), left.get("since")
    why, detail = left.get("why"), left.get("detail")
    if state not in STATES or not isinstance(why, str) or not isinstance(detail, str) \
            or (state == State.ENDED) != (record.get("status") == "completed") \
            or not (since is None or isinstance(since, str)):
        return None
    return Activity(str(state), parse_ts(since), why, detail)


def infer(record: dict) -> Activity:  # type: ignore[type-arg]
    """A record's state from what the host's events left in it."""
    state, since, why, detail = _rule(record)
    return Activity(state, parse_ts(since), why, detail)


def _rule(record: dict) -> tuple[str, str | None, str, str]:  # type: ignore[type-arg]
    """The rule: (state, since, as the record's text, why, detail)."""
    meta = obj(obj(record.get("metadata")).get("sidecar"))
    updated = as_text(record.get("updatedAt"))
    if record.get("status") == "completed":
        reason = as_text(meta.get("completionReason"))
        return (State.ENDED, as_text(record.get("completedAt")),
                end_cause(reason, meta.get("turnOpen") is True), reason or "")
    limit, asked = obj(meta.get("limit")), obj(meta.get("needsInput"))
    if isinstance(limit.get("since"), str):
        return (State.LIMITED, limit["since"],
                own_resume(obj(meta.get("hostResume")))
                or f"a turn hit a usage limit ({as_text(limit.get('error')) or ''})",
                as_text(limit.get("message")) or "")
    if isinstance(asked.get("since"), str):
        return (State.WAITING, asked["since"], _asks(as_text(asked.get("kind")) or "input"),
                as_text(asked.get("message")) or "")
    if meta.get("turnOpen") is True:
        return (State.WORKING, as_text(meta.get("turnStartedAt")) or updated,
                "a turn began and has not ended", as_text(meta.get("lastTool")) or "")
    ended = as_text(meta.get("userTurnEndedAt"))
    return State.IDLE, ended or updated, "its last turn ended" if ended else "no turn yet", ""


def end_cause(reason: str | None, mid_turn: bool) -> str:
    """How a completed session ended, in words: who ended it, not sidecar's code for it."""
    if reason == HOST_EXITED:
        cause = "the host process exited"
    elif reason == STALE:
        cause = "swept: no event for too long"
    else:
        cause = "its own end"
    return cause + (" mid-turn" if mid_turn and reason != STALE else "")


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


def own_resume(said: dict) -> str:  # type: ignore[type-arg]
    """Who resumes a limited session, as its host said (sessions/ownresume.py); "" when it
    said nothing."""
    by, state = as_text(said.get("by")) or "the host", as_text(said.get("state"))
    at, since = parse_ts(said.get("at")), parse_ts(said.get("since"))
    if state == "expected" and at is not None:
        return f"{by} resumes this session itself at {clock(at)}"
    if state == "fired" and since is not None:
        return f"{by} resumed this session itself at {clock(since)}"
    if state == "stale":
        return f"{by} waits for you to press enter to resume it"
    if state == "beyond":
        return f"{by} will not resume this session itself: the reset is more than 24 h away"
    if state == "off":
        return f"{by} will not resume this session itself ({as_text(said.get('message'))}); " \
            "sidecar's resume-after-limit may"
    if state == "disabled":
        return f"{by} will not resume this session itself; sidecar's resume-after-limit may"
    return ""


def clock(ts: float) -> str:
    """A moment as the local wall clock, to the minute (time.localtime: the status line's
    fast path imports no datetime)."""
    return time.strftime("%H:%M", time.localtime(ts))
