"""Session lifecycle rules on records in memory, with explicit times: no files, no clock."""

from __future__ import annotations

import itertools

import orjson

from sidecar.base.endreasons import STALE
from sidecar.base.ids import harness_id
from sidecar.base.timeutil import iso
from sidecar.inbox.events import parse
from sidecar.sessions import rules
from sidecar.sessions.model import Bindings, SessionRecord
from sidecar.sessions.rules import Applied
from sidecar.vocabulary import EventKind

T0 = 1_795_900_000.0
KEY = ("claude-code", "s1")
_names = itertools.count()


def ev(name, ts=T0, **extra):
    payload = {"hook_event_name": name, "session_id": KEY[1], "host": KEY[0], "ts": ts, **extra}
    return parse(orjson.dumps(payload), f"{next(_names):020d}.json", ts)


def run(*events, record=None):
    """Apply events in order to a record (a new one if none); returns it and what happened."""
    out = Applied()
    if record is None:
        record = rules.new_record(KEY, harness_id(*KEY), "/repo", events[0], out)
    for event in events:
        rules.apply(record, event, out)
    return record, out


def test_a_new_session_is_active_and_traced_as_created():
    record, out = run(ev("SessionStart", source="startup", cwd="/repo/sub"))
    assert record.active and record.created_at == iso(T0) and record.sidecar.cwd == "/repo/sub"
    assert [t.event for t in out.trace] == ["session.created", "session.start"]
    assert [(c.kind, c.reason) for c in out.changes] == [(EventKind.SESSION_START, "startup")]
    assert record.trace_count == 2


def test_an_end_completes_with_its_reason_and_a_second_end_only_traces():
    record, out = run(ev("SessionStart"), ev("SessionEnd", T0 + 5, reason="logout"),
                      ev("SessionEnd", T0 + 6))
    assert not record.active and record.completed_at == iso(T0 + 5)
    assert record.sidecar.completion_reason == "logout"
    assert [c.kind for c in out.changes] == [EventKind.SESSION_START, EventKind.SESSION_END]
    assert out.trace[-1].message == "session already completed"


def test_an_event_applied_before_changes_nothing():
    start = ev("SessionStart")
    record, _ = run(start)
    before = record.to_json()
    out = Applied()
    rules.apply(record, start, out)
    assert record.to_json() == before and not out.changed and not out.trace


def test_a_start_after_completion_reopens_and_older_events_are_traced_only():
    record, _ = run(ev("SessionStart"), ev("SessionEnd", T0 + 10))
    _, out = run(ev("Stop", T0 + 5), record=record)
    assert not record.active and out.trace[-1].message == "older than the session's completion"
    _, out = run(ev("SessionStart", T0 + 20, source="resume"), record=record)
    assert record.active and record.completed_at is None
    assert [t.event for t in out.trace] == ["session.reopened", "session.start"]


def test_activity_reopens_only_a_session_the_stale_sweep_completed():
    record, _ = run(ev("SessionStart"))
    out = Applied()
    rules.sweep_stale(record, T0 + 86400, out)
    assert record.sidecar.completion_reason == STALE
    assert [(c.kind, c.reason) for c in out.changes] == [(EventKind.SESSION_END, STALE)]
    _, out = run(ev("Stop", T0 + 86401), record=record)
    assert record.active and out.trace[0].event == "session.reopened"
    record, _ = run(ev("SessionStart"), ev("SessionEnd", T0 + 1))
    _, out = run(ev("Stop", T0 + 2), record=record)
    assert not record.active and out.trace[-1].message == "session already completed"


def test_changes_carry_the_loop_guard_and_the_hooks_already_queued():
    record, out = run(ev("SessionStart", sidecarHookId="post-task"), ev("SessionEnd", T0 + 1))
    assert all(c.from_hook for c in out.changes)
    record, _ = run(ev("SessionStart"))
    record.sidecar.follow_ups["post-task"] = {"queuedAt": iso(T0)}
    _, out = run(ev("SessionEnd", T0 + 1), record=record)
    assert out.changes[-1].follow_ups_done == {"post-task"} and not out.changes[-1].from_hook


def test_tool_use_traces_the_tool_name_never_its_input():
    _, out = run(ev("PostToolUse", tool_name="Bash", tool_input={"command": "secret"}))
    line = out.trace[-1]
    assert (line.event, line.message) == ("tool.use", "Bash")
    assert b"secret" not in orjson.dumps(line.to_json())


def test_the_replay_memory_keeps_a_whole_batch_even_past_its_cap():
    events = [ev("Stop", T0 + i) for i in range(rules.RECENT_EVENTS + 50)]
    record, _ = run(*events)
    rules.trim_recent(record, len(events))
    assert len(record.sidecar.recent_events) == len(events)
    rules.trim_recent(record, 1)
    assert len(record.sidecar.recent_events) == rules.RECENT_EVENTS


def test_a_binding_exists_exactly_while_the_session_is_active():
    bindings = Bindings()
    record, _ = run(ev("SessionStart"))
    assert rules.sync_binding(bindings, KEY, record, "/repo")
    assert bindings.get(KEY).harness_session_id == record.id
    rules.complete(record, T0 + 1, "done", None, Applied())
    assert rules.sync_binding(bindings, KEY, record, "/repo") and bindings.get(KEY) is None
    assert not rules.sync_binding(bindings, KEY, record, "/repo")


def test_records_keep_keys_they_do_not_know():
    data = {"id": "x", "name": "n", "status": "active", "theirs": [1, 2],
            "metadata": {"host": "h", "hostSessionId": "s", "tool": "dotcontext",
                         "sidecar": {"cwd": "/w", "future": True}}}
    out = SessionRecord.from_json(data).to_json()
    assert out["theirs"] == [1, 2] and out["metadata"]["tool"] == "dotcontext"
    assert out["metadata"]["sidecar"]["future"] is True and out["metadata"]["sidecar"]["cwd"] == "/w"


def test_an_end_the_host_recorded_before_the_latest_run_leaves_that_run_going():
    # The host's record of an end (found in its files, not sent) that is older than the
    # session's latest event tells of an earlier run: a resumed run goes on.
    earlier = ev("session-end", T0 + 60, reason="completed", recordedEndAt=T0 + 5)
    record, out = run(ev("SessionStart"), ev("SessionStart", T0 + 50, source="resume"), earlier)
    assert record.active
    assert out.trace[-1].message == "the host recorded an earlier run's end; the session goes on"
    # Written just after the run's last event (within the slack), it is this run's end.
    record, out = run(ev("SessionStart"), ev("Stop", T0 + 10),
                      ev("session-end", T0 + 12, reason="completed", recordedEndAt=T0 + 9.5))
    assert not record.active and record.sidecar.completion_reason == "completed"


def test_a_follow_ups_run_keeps_the_end_reason_the_user_gave_and_is_its_own_reopen():
    record, _ = run(ev("SessionStart"), ev("SessionEnd", T0 + 1, reason="prompt_input_exit"))
    resumed = (ev("SessionStart", T0 + 20, source="resume", sidecarHookId="post-task"),
               ev("SessionEnd", T0 + 30, reason="other", sidecarHookId="post-task"))
    _, out = run(*resumed, record=record)
    assert not record.active and record.sidecar.completion_reason == "prompt_input_exit"
    assert [(t.event, t.data.get("reason")) for t in out.trace if t.event.startswith("session.")] \
        == [("session.reopened", None), ("session.start", None), ("session.completed", "other")]
    assert out.changes[-1].reason == "other"  # the run's own end, as the host gave it
    _, out = run(ev("SessionStart", T0 + 40, sidecarHookId="post-task"),
                 ev("SessionEnd", T0 + 50, reason="host-exited", sidecarHookId="post-task"),
                 record=record)  # a run cut short says so
    assert record.sidecar.completion_reason == "host-exited"
    run(ev("SessionStart", T0 + 60, source="resume"), ev("SessionEnd", T0 + 70, reason="clear"),
        record=record)  # the user's own next run: its end is theirs
    assert record.sidecar.completion_reason == "clear" and record.sidecar.own_end_reason is None
