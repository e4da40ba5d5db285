"""The project's shared vocabulary: event kinds, verdicts, session changes."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class EventKind(StrEnum):
    """What an event means to sidecar. Events of any other name are traced, not refused."""

    SESSION_START = "session-start"
    SESSION_END = "session-end"
    SESSION_RESET = "session-reset"
    TURN_START = "turn-start"
    TURN_END = "turn-end"
    TURN_FAILED = "turn-failed"  # a turn the API refused (Claude Code's StopFailure)
    TOOL_USE = "tool-use"
    NEEDS_INPUT = "needs-input"  # the host asked the user (a permission, a question, idle)


class FollowUpEvent(StrEnum):
    """What happened to a follow-up, as an event a notify hook can listen for (never a
    session's event: the follow-up runner produces them, see followups/fire.py)."""

    FAILED = "follow-up-failed"  # a firing ended in error
    RESUME_STARTED = "resume-started"  # a resume after a usage limit started
    OVER_BUDGET = "over-budget"  # a resume was held back by a budget (once per episode)


_SEPARATORS = str.maketrans({"_": "-", ":": "-", " ": "-"})


def normalise(name: str) -> str:
    """An event or error name, compared case-insensitively, with `-`, `_`, `:` and spaces
    treated alike."""
    return name.strip().lower().translate(_SEPARATORS)


class Verdict(StrEnum):
    """What the scheduler decides for a claimed follow-up."""

    FIRE = "fire"
    POSTPONE = "postpone"
    SKIP = "skip"


# The error kinds of a failed turn that mean a usage or rate limit: the task is not finished,
# and `resume-after-limit` may carry it on once the limit resets.
LIMIT_ERRORS = frozenset({"rate_limit", "usage_limit", "quota_exceeded", "resource_exhausted"})


# -- plain values handed between modules ---------------------------------------------------


@dataclass(frozen=True)
class SessionChange:
    """Something that happened to a session, as plain values for plugins and follow-up hooks.

    `kind` is None for an event sidecar only traces. `follow_ups_done` are the hooks the
    session record says were queued for it already; `from_hook` says a follow-up's own run
    produced it, which must never queue another follow-up.
    """

    kind: EventKind | None
    host: str
    session_id: str
    harness_session_id: str
    ts: float
    reason: str = ""
    cwd: str | None = None
    payload: dict[str, Any] | None = None
    from_hook: bool = False
    follow_ups_done: frozenset[str] = field(default_factory=frozenset)
    host_pid: int | None = None  # the host's process, while the session is active
    host_start: int | None = None
    host_space: str | None = None  # where that pid means something (proc.process_space)
    # A usage limit: a session-end while one holds (`limited`) queues no session-end hook;
    # a turn-failed names how many limit failures this episode has had, and the host's text.
    limited: bool = False
    limit_failures: int = 0
    limit_message: str = ""
    host_resumes: str = ""  # who resumes it after the limit, as the host said (sessions/ownresume.py)
    limit_since: str = ""  # when the episode began: its notice is told once
    # A session-end whose last turn began and never ended (Ctrl-C, a kill, the host gone
    # mid-turn): the user stopped the agent, so by default nothing resumes it.
    interrupted: bool = False
    # The hooks in `follow_ups_done` queued before the user's own latest turn ended (a turn
    # of theirs, not of a follow-up's run): those a hook may run again for.
    user_turn_since: frozenset[str] = field(default_factory=frozenset)
    # Which inbox file it came from ("": the stale sweep), so a notice is sent once per
    # change and once only when a batch is replayed; and what a needs-input asked.
    event_file: str = ""
    input_message: str = ""
    last_message: str = ""  # the first lines of the assistant's last message, where known
    # Which turn it was (when the open or last turn began: "" where no turn start was seen),
    # so that a turn's end is told once however many end events it has; and whether that
    # turn failed (a turn-failed, not yet followed by another turn).
    turn_started_at: str = ""
    turn_failed: bool = False
    # What the host's records said at a turn end, turn failed or session end (None: nothing was
    # read): {"tokens": growth, "cost": {"usd": growth, "source", "model"}, "total": the
    # record's cost}; the growth is told once, on the first change the read came with.
    spent: dict[str, Any] | None = None


@dataclass(frozen=True)
class Fired:
    """A firing's outcome, as plain values for plugins."""

    workspace: str
    hook_id: str
    host: str
    session_id: str
    harness_session_id: str | None
    status: str
    log: str | None
    started_at: str = ""  # when its action started (ISO; "": it never started, a skip)
    finished_at: float | None = None  # when its outcome was recorded
