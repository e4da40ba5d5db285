"""Session lifecycle rules: what one event does to one session record. No I/O, no clock.

Each function takes the record, the event and (where time matters) `now`, changes the record in
place and returns the trace lines and the changes it made, so the rules can be tested without
files and the session store only loads and saves. What a session's end learns from the host's
own records (`EndFacts`) is read by the store and handed in; the event is never changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sidecar.base import ids
from sidecar.base.endreasons import DEFAULT_END_REASON, HOST_EXITED, STALE
from sidecar.base.files import as_text
from sidecar.base.timeutil import iso
from sidecar.hosts import registry
from sidecar.hosts.base import EndFacts, Failure
from sidecar.inbox.events import Event
from sidecar.sessions import ownresume, spend, tokens
from sidecar.sessions.model import (
    Binding,
    Bindings,
    Key,
    LimitEpisode,
    NeedsInput,
    SessionRecord,
    TraceLine,
    ts_or,
)
from sidecar.views import activity
from sidecar.vocabulary import LIMIT_ERRORS, EventKind, SessionChange

RECENT_EVENTS = 256  # per session: enough to recognise any batch replayed after a crash
# A host writes its record of an end a moment after its last hook's event (Cline's manifest,
# some 60 ms after its TaskComplete hook starts): an end recorded this much before the
# session's latest event is still that run's; one recorded earlier is an earlier run's.
RECORDED_END_SLACK = 1.0
# What a record keeps of the assistant's last message: enough for a notice to say what the
# agent said, never a transcript's worth in every session.json.
LAST_MESSAGE_LINES = 5
LAST_MESSAGE_CHARS = 600

_TRACE_NAMES = {
    EventKind.SESSION_START: "session.start",
    EventKind.SESSION_RESET: "session.reset",
    EventKind.TOOL_USE: "tool.use",
    EventKind.TURN_START: "turn.start",
    EventKind.TURN_END: "turn.end",
    EventKind.TURN_FAILED: "turn.failed",
    EventKind.NEEDS_INPUT: "needs.input",
}


@dataclass
class Applied:
    """What applying events did to one session."""

    trace: list[TraceLine] = field(default_factory=list)
    changes: list[SessionChange] = field(default_factory=list)
    changed: bool = False
    grew: list[tokens.Growth] = field(default_factory=list)  # each read's: for the workspace's totals

    def add_line(self, record: SessionRecord, line: TraceLine, ts: float) -> None:
        self.trace.append(line)
        record.trace_count += 1
        if ts >= ts_or(record.last_trace_at, 0.0):
            record.last_trace_at = line.created_at
        self.changed = True


def trace_line(hid: str, event: Event | None, name: str, message: str, at: float) -> TraceLine:
    origin = event.file if event is not None else f"sweep:{at}"
    data = {} if event is None else {"host": event.host, "hostEvent": event.name, "inboxFile": event.file}
    # Derived from the inbox file, so a line repeated by a crash replay is recognisable.
    line_id = ids.uuid5(f"{origin}\0{name}")
    return TraceLine(line_id, hid, name, message, iso(at), data)


def new_record(key: Key, hid: str, repo: str, event: Event, out: Applied) -> SessionRecord:
    """The record of a session seen for the first time (a late start is normal)."""
    record = SessionRecord.new(hid, key[0], key[1], repo, iso(event.ts))
    record.sidecar.cron = event.is_cron
    record.sidecar.subagent = event.is_subagent
    out.add_line(record, trace_line(hid, event, "session.created",
                                    f"Session created: {record.name}", event.ts), event.ts)
    return record


def change(record: SessionRecord, kind: EventKind | None, ts: float, reason: str = "",
           event: Event | None = None) -> SessionChange:
    meta = record.sidecar
    return SessionChange(
        kind=kind, host=record.host or "", session_id=record.host_session_id or "",
        harness_session_id=record.id, ts=ts, reason=reason, cwd=meta.cwd,
        payload=event.payload if event is not None else None,  # plugins get their own copy
        from_hook=bool(meta.started_by_hook or (event is not None and event.hook_id)),
        follow_ups_done=frozenset(meta.follow_ups),
        host_pid=meta.host_pid, host_start=meta.host_start, host_space=meta.host_space,
        limited=meta.limit is not None,
        limit_failures=meta.limit.failures if meta.limit is not None else 0,
        limit_message=meta.limit.message if meta.limit is not None else "",
        host_resumes=activity.own_resume(meta.host_resume.to_json()) if meta.host_resume else "",
        limit_since=meta.limit.since if meta.limit is not None else "",
        interrupted=meta.turn_open,
        user_turn_since=_queued_before(meta.follow_ups, meta.user_turn_ended_at),
        event_file=event.file if event is not None else "",
        input_message=meta.needs_input.message if meta.needs_input is not None else "",
        last_message=meta.last_message or "",
        turn_started_at=meta.turn_started_at or "", turn_failed=meta.turn_failed,
    )


def first_lines(text: str | None) -> str | None:
    """The first lines of a message, as a record keeps them (None: there is none)."""
    lines = (text or "").strip().splitlines()[:LAST_MESSAGE_LINES]
    return "\n".join(line.rstrip() for line in lines)[:LAST_MESSAGE_CHARS] or None


def _queued_before(follow_ups: dict[str, dict[str, object]], user_turn_ended: str | None) -> frozenset[str]:
    """The hooks queued for the session before the user's own latest turn ended."""
    ended = ts_or(user_turn_ended, float("-inf"))
    return frozenset(hook_id for hook_id, queued in follow_ups.items()
                     if ts_or(as_text(queued.get("queuedAt")), float("inf")) < ended)


def apply(record: SessionRecord, event: Event, out: Applied, end: EndFacts | None = None) -> None:
    """Apply one event; an event this record has applied before changes nothing. `end`: at
    an active session's end (or a turn's, its figures only), what the host's own records say."""
    meta = record.sidecar
    taken = spend.take(record, end) if end is not None else None
    if taken is not None:  # kept (saved) with what it adds to the totals, whatever follows
        out.grew.append(taken.growth)
        out.changed = True
    if event.file in meta.recent_events:
        return  # replayed after a crash: already applied
    meta.recent_events.append(event.file)
    out.changed = True
    lines, changes = len(out.trace), len(out.changes)
    if not record.active and event.ts < ts_or(record.completed_at, 0.0):
        _trace(record, event, event.name, "older than the session's completion", out)
    else:
        _remember(record, event)
        if event.kind in (EventKind.SESSION_START, EventKind.SESSION_RESET):
            _start(record, event, out)
        elif event.kind == EventKind.SESSION_END:
            _end(record, event, out, end)
        else:
            _activity(record, event, out)
    if taken is not None:
        spend.tell(taken, out, lines, changes)
    # The session's state, left for every view to read as it is (views/activity.py's rule).
    record.sidecar.activity = activity.written(record.to_json())


def trim_recent(record: SessionRecord, batch_files: int) -> None:
    """Forget the oldest applied files past the cap, but never any of the batch in hand."""
    del record.sidecar.recent_events[:-max(RECENT_EVENTS, batch_files)]


def _start(record: SessionRecord, event: Event, out: Applied) -> None:
    source = event.text("source") or ""
    record.sidecar.turn_failed = False  # a new run: its first turn has not failed
    record.sidecar.turn_open = False  # nor begun: a turn left open ended with its process
    record.sidecar.needs_input = None  # nor is anything asked of the user yet
    record.sidecar.host_resume = None  # nor does the host wait to resume it: a new process
    if not record.active:
        reopen(record, event, source or event.name, out)
    assert event.kind is not None
    _trace(record, event, _TRACE_NAMES[event.kind], source or event.name, out)
    touch(record, event.ts)
    out.changes.append(change(record, event.kind, event.ts, source, event))


def _end(record: SessionRecord, event: Event, out: Applied, end: EndFacts | None) -> None:
    if not record.active:
        _trace(record, event, event.name, "session already completed", out)
        return
    meta = record.sidecar
    if _exit_report(event) and (event.host_pid, event.host_start) != (meta.host_pid, meta.host_start):
        # The session moved on to another process (a resume) since: that one is alive.
        _trace(record, event, event.name, "an earlier host process exited; the session goes on", out)
        return
    recorded = event.recorded_end_at
    if recorded is not None and recorded + RECORDED_END_SLACK < ts_or(record.updated_at, 0.0):
        # The host's record still tells of an earlier run that a resumed one has not
        # rewritten yet: this run goes on.
        _trace(record, event, event.name, "the host recorded an earlier run's end; the session goes on", out)
        return
    touch(record, event.ts)
    if end is not None and end.failure is not None and not meta.turn_failed:
        _failed_turn_at_end(record, event, end.failure, out)  # the host told only its records
    reason = event.reason or DEFAULT_END_REASON
    complete(record, event.ts, reason, event, out)
    if meta.started_by_hook and meta.own_end_reason and reason != HOST_EXITED:
        # A follow-up's run ended as such runs do ("other"): its end is in the timeline, and
        # the session still ended as the user ended it, unless the run itself was cut short.
        meta.completion_reason = meta.own_end_reason
    out.changes.append(change(record, EventKind.SESSION_END, event.ts, reason, event))


def _activity(record: SessionRecord, event: Event, out: Applied) -> None:
    if not record.active:
        if record.sidecar.completion_reason != STALE:
            _trace(record, event, event.name, "session already completed", out)
            return
        reopen(record, event, "activity after a stale sweep", out)
    touch(record, event.ts)
    name = _TRACE_NAMES.get(event.kind) if event.kind is not None else None
    message = (event.tool_name or event.name) if event.kind == EventKind.TOOL_USE else event.name
    reason = ""
    if event.kind == EventKind.NEEDS_INPUT:
        reason = event.input_kind
        message = f"{reason}: {event.input_message}" if event.input_message else reason
    failed_turn = record.sidecar.turn_failed
    attempts = _failures_are_attempts(event.host)
    _follow_turns(record, event)
    record.sidecar.turn_failed = event.kind == EventKind.TURN_FAILED or (
        failed_turn and event.kind not in (EventKind.TURN_START, EventKind.TURN_END))
    if event.kind == EventKind.TURN_FAILED:
        reason = event.error_kind
        message = f"{reason}: {event.error_message}" if event.error_message else reason
        if not (failed_turn and record.sidecar.limit is not None and attempts):
            _limit_failed(record, event.ts, reason, event.error_message)  # once a turn, there
    elif event.kind == EventKind.TURN_END and record.sidecar.limit is not None \
            and (not failed_turn or attempts):
        # A turn ended well: the limit has passed. (opencode ends a refused turn with an idle
        # status too: that end closes nothing; Copilot CLI's comes only once a retry got
        # through.)
        record.sidecar.limit = None
        message = f"{event.name} (the usage limit has passed)"
    message = ownresume.follow(record, event) or message  # what the host said of its own resume
    _trace(record, event, name or event.name, message, out)
    out.changes.append(change(record, event.kind, event.ts, reason, event))


def _failures_are_attempts(host: str) -> bool:
    """Whether `host` reports each failed attempt of a turn (see Host.failures_are_attempts)."""
    known = registry.find(host)
    return known is not None and known.failures_are_attempts


def _follow_turns(record: SessionRecord, event: Event) -> None:
    """Keep whether a turn is open, and when the user's own last turn ended. A turn the user
    starts (not a follow-up's run: it carries no hook id) lifts the loop guard: what the
    session does from there on is the user's work, which may queue follow-ups again."""
    meta = record.sidecar
    _follow_waiting(record, event)
    if event.kind == EventKind.TURN_START:
        meta.turn_open = True
        meta.turn_started_at = iso(event.ts)
        if event.hook_id is None:
            meta.started_by_hook = None
    elif event.kind in (EventKind.TURN_END, EventKind.TURN_FAILED):
        meta.turn_open = False
        if event.kind == EventKind.TURN_END and meta.started_by_hook is None:
            meta.user_turn_ended_at = iso(event.ts)
        if event.kind == EventKind.TURN_END:
            meta.last_message = first_lines(event.last_message) or meta.last_message


def _follow_waiting(record: SessionRecord, event: Event) -> None:
    """Keep whether the host is waiting for the user: from its ask until the session moves on
    (a turn starts or ends, a tool runs: the user answered, or the host went on without)."""
    meta = record.sidecar
    if event.kind == EventKind.NEEDS_INPUT:
        meta.needs_input = NeedsInput(iso(event.ts), event.input_kind, event.input_message)
    elif event.kind is not None:
        meta.needs_input = None
    if event.kind == EventKind.TOOL_USE and event.tool_name:
        meta.last_tool = event.tool_name[:80]


def _failed_turn_at_end(record: SessionRecord, event: Event, failure: Failure, out: Applied) -> None:
    """A session end whose last turn failed, by the transcript, with no turn-failed event:
    the same as if one had come just before it."""
    error, text = failure.kind, failure.message
    record.sidecar.turn_failed = True
    record.sidecar.turn_open = False  # it ended, badly: not a turn the user interrupted
    _limit_failed(record, event.ts, error, text)
    line = trace_line(record.id, event, "turn.failed", f"{error}: {text} (from the transcript)", event.ts)
    out.add_line(record, line, event.ts)
    out.changes.append(change(record, EventKind.TURN_FAILED, event.ts, error, event))


def _limit_failed(record: SessionRecord, ts: float, error: str, text: str) -> None:
    """A turn failed on a usage limit: open the episode, or count one more failure in it (a
    resume that hit the limit again is the next try of the same episode, not a new one)."""
    if error not in LIMIT_ERRORS:
        return
    episode = record.sidecar.limit
    if episode is None:
        record.sidecar.limit = LimitEpisode(iso(ts), 1, error, text)
    else:
        episode.failures += 1
        episode.error, episode.message = error, text


def _remember(record: SessionRecord, event: Event) -> None:
    """Keep what follow-up hooks need later: where it ran, its transcript, its kind."""
    meta = record.sidecar
    meta.cwd = event.cwd or meta.cwd
    meta.transcript_path = event.transcript_path or meta.transcript_path
    meta.cron = meta.cron or event.is_cron
    meta.subagent = meta.subagent or event.is_subagent
    meta.started_by_hook = event.hook_id or meta.started_by_hook
    if event.host_pid is not None and not _exit_report(event):
        meta.host_pid, meta.host_start = event.host_pid, event.host_start
        meta.host_space = event.host_space


def _exit_report(event: Event) -> bool:
    """The daemon's own report that a host process is gone (not an event of the host's)."""
    return event.kind == EventKind.SESSION_END and event.reason == HOST_EXITED


def touch(record: SessionRecord, ts: float) -> None:
    if ts > ts_or(record.updated_at, 0.0):
        record.updated_at = iso(ts)


def reopen(record: SessionRecord, event: Event | None, why: str, out: Applied) -> None:
    """The session is active again; a follow-up's run keeps how it ended before (`_end`)."""
    record.status = "active"
    record.completed_at = None
    meta = record.sidecar
    by_follow_up = event is not None and event.hook_id is not None
    meta.own_end_reason = (meta.own_end_reason or meta.completion_reason) if by_follow_up else None
    meta.completion_reason = None
    at = event.ts if event is not None else ts_or(record.updated_at, 0.0)
    out.trace.append(trace_line(record.id, event, "session.reopened", why, at))
    record.trace_count += 1
    out.changed = True


def complete(record: SessionRecord, ts: float, reason: str, event: Event | None, out: Applied) -> None:
    """Mark the session completed at `ts` for `reason`, with its trace line."""
    record.status = "completed"
    record.completed_at = iso(ts)
    touch(record, ts)
    record.sidecar.completion_reason = reason
    record.sidecar.needs_input = None  # an ended session asks no one anything
    line = trace_line(record.id, event, "session.completed", reason, ts)
    line.data["reason"] = reason
    out.trace.append(line)
    record.trace_count += 1
    record.last_trace_at = line.created_at
    out.changed = True


def _trace(record: SessionRecord, event: Event, name: str, message: str, out: Applied) -> None:
    out.add_line(record, trace_line(record.id, event, name, message, event.ts), event.ts)


def sweep_stale(record: SessionRecord, now: float, out: Applied) -> None:
    """Complete a session nobody touched for `staleAfter`: plugins hear of it, hooks do not."""
    complete(record, now, STALE, None, out)
    record.sidecar.activity = activity.written(record.to_json())
    out.changes.append(change(record, EventKind.SESSION_END, now, STALE))


def idle_for(binding: Binding, now: float, seen_ago: float | None) -> float:
    """How long nobody touched the session: by its `updatedAt`, unless this instance applied
    an event of it more recently (`seen_ago`, measured across any step of the wall clock), so
    a wall clock stepped forward makes no session stale."""
    age = now - binding.touched
    return age if seen_ago is None else min(age, seen_ago)


def sync_binding(bindings: Bindings, key: Key, record: SessionRecord, repo: str) -> bool:
    """Make the binding match the session: present while active, gone once completed.

    Returns whether the document changed.
    """
    if not record.active:
        return bindings.remove(key)
    current = bindings.get(key)
    if current is None:
        bindings.put(key, Binding(record.id, key[1], key[0], repo, record.updated_at, record.updated_at))
        return True
    current.harness_session_id = record.id
    if ts_or(record.updated_at, 0.0) > current.touched:
        current.updated_at = record.updated_at
    return True
