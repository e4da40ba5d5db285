"""What the span builder remembers between a session's events, bounded: the run in progress
(when it began, whether it is a resumed one), its open turn and the events waiting for a span.

Memory only: a daemon restarted forgets it (the open turn's tool events, the events waiting on
the session's span); what a span needs again is read back from the session's record
(history.py). At most MAX_SESSIONS runs are kept (the least recently heard of is forgotten,
counted), MAX_EVENTS events per turn or run (the rest counted on the span), and MAX_FINISHED
sessions known to have had their root span sent.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

MAX_SESSIONS = 1024
MAX_EVENTS = 64
MAX_FINISHED = 8192


@dataclass
class SpanEvent:
    name: str
    ts: float
    attributes: dict[str, Any]


@dataclass
class Events:
    """Events waiting for their span, at most MAX_EVENTS; the rest only counted."""

    kept: list[SpanEvent] = field(default_factory=list)
    dropped: int = 0

    def add(self, event: SpanEvent) -> None:
        if len(self.kept) < MAX_EVENTS:
            self.kept.append(event)
        else:
            self.dropped += 1


@dataclass
class Turn:
    start: float
    key: str  # what makes its span id: the turn's start as the record says it
    events: Events = field(default_factory=Events)


@dataclass
class Run:
    """A session's run in progress: from its start (or a resume) to its completion."""

    harness_id: str
    host: str
    session_id: str
    workspace: str
    start: float
    resumed: bool  # a run after an earlier completion: its span is the root's child
    turn: Turn | None = None
    events: Events = field(default_factory=Events)
    turns: int = 0


class Memory:
    """The runs in progress and the sessions whose root span was sent, both bounded."""

    def __init__(self, max_sessions: int = MAX_SESSIONS, max_finished: int = MAX_FINISHED) -> None:
        self.runs: OrderedDict[str, Run] = OrderedDict()
        self.finished: OrderedDict[str, None] = OrderedDict()
        self.max_sessions = max_sessions
        self.max_finished = max_finished
        self.forgotten = 0  # runs pushed out by newer ones before they completed

    def run(self, harness_id: str) -> Run | None:
        found = self.runs.get(harness_id)
        if found is not None:
            self.runs.move_to_end(harness_id)
        return found

    def begin(self, run: Run) -> None:
        self.runs[run.harness_id] = run
        self.runs.move_to_end(run.harness_id)
        while len(self.runs) > self.max_sessions:
            self.runs.popitem(last=False)
            self.forgotten += 1

    def end(self, harness_id: str) -> None:
        """The run completed: its session's root span has been sent."""
        self.runs.pop(harness_id, None)
        self.finished[harness_id] = None
        self.finished.move_to_end(harness_id)
        while len(self.finished) > self.max_finished:
            self.finished.popitem(last=False)

    def ended_before(self, harness_id: str) -> bool:
        return harness_id in self.finished
