"""A session's state as the views show it, inferred from the hosts' own events alone: the rules
leave it in the record, and a record without it (written before, or changed by another writer
since) is read by the same rule."""

from __future__ import annotations

from test_lifecycle import T0, ev, run

from sidecar.base.timeutil import iso
from sidecar.sessions import rules
from sidecar.sessions.model import SessionRecord
from sidecar.sessions.rules import Applied
from sidecar.views import activity
from sidecar.views.activity import State


def state_of(record: SessionRecord) -> activity.Activity:
    """The state the rules left in the record, checked against the rule's own reading of the
    record as it would have been written before the field existed."""
    raw = record.to_json()
    left = activity.of(raw)
    del raw["metadata"]["sidecar"]["activity"]
    assert activity.of(raw) == left
    return left


def test_a_turn_in_progress_is_working_since_it_began_with_its_last_tool():
    record, _ = run(ev("SessionStart"), ev("UserPromptSubmit", T0 + 1),
                    ev("PostToolUse", T0 + 2, tool_name="Bash"))
    now = state_of(record)
    assert (now.state, now.since, now.detail) == (State.WORKING, T0 + 1, "Bash")


def test_an_ask_of_the_host_is_waiting_until_the_session_moves_on():
    record, out = run(ev("SessionStart"), ev("UserPromptSubmit", T0 + 1),
                      ev("needs-input", T0 + 2, notification_type="permission_prompt",
                         message="Claude needs your permission to use Bash"))
    now = state_of(record)
    assert (now.state, now.since, now.why) == (State.WAITING, T0 + 2, "asked for permission")
    assert now.detail == "Claude needs your permission to use Bash"
    assert out.trace[-1].event == "needs.input"
    assert out.changes[-1].reason == "permission_prompt"
    record, _ = run(ev("PostToolUse", T0 + 3, tool_name="Bash"), record=record)
    assert state_of(record).state == State.WORKING
    assert SessionRecord.from_json(record.to_json()).sidecar.needs_input is None


def test_the_ask_survives_a_round_trip_and_ends_with_the_session():
    record, _ = run(ev("SessionStart"), ev("needs-input", T0 + 2, notification_type="idle_prompt"))
    again = SessionRecord.from_json(record.to_json())
    assert state_of(again).why == "waiting for your prompt"
    record, _ = run(ev("SessionEnd", T0 + 3, reason="prompt_input_exit"), record=again)
    assert record.sidecar.needs_input is None and state_of(record).state == State.ENDED


def test_between_turns_it_is_idle_and_a_limit_outranks_it():
    record, _ = run(ev("SessionStart"), ev("UserPromptSubmit", T0 + 1), ev("Stop", T0 + 4))
    assert (state_of(record).state, state_of(record).since) == (State.IDLE, T0 + 4)
    record, _ = run(ev("UserPromptSubmit", T0 + 5),
                    ev("StopFailure", T0 + 6, error="rate_limit", message="resets 5pm"),
                    record=record)
    now = state_of(record)
    assert (now.state, now.since, now.detail) == (State.LIMITED, T0 + 6, "resets 5pm")


def test_an_end_says_who_ended_it_and_whether_mid_turn():
    record, _ = run(ev("SessionStart"), ev("UserPromptSubmit", T0 + 1),
                    ev("SessionEnd", T0 + 2, reason="host-exited"))
    assert state_of(record).why == "the host process exited mid-turn"
    record, _ = run(ev("SessionStart"), ev("SessionEnd", T0 + 2, reason="logout"))
    assert (state_of(record).why, state_of(record).detail) == ("its own end", "logout")


def test_the_rules_leave_the_state_in_the_record_as_it_is_written():
    record, _ = run(ev("SessionStart"), ev("UserPromptSubmit", T0 + 1),
                    ev("PostToolUse", T0 + 2, tool_name="Bash"))
    written = record.to_json()["metadata"]["sidecar"]["activity"]
    assert written == {"state": "working", "since": iso(T0 + 1),
                       "why": "a turn began and has not ended", "detail": "Bash"}
    assert SessionRecord.from_json(record.to_json()).to_json() == record.to_json()


def test_a_sweep_leaves_the_session_ended():
    record, _ = run(ev("SessionStart"), ev("UserPromptSubmit", T0 + 1))
    rules.sweep_stale(record, T0 + 99, Applied())
    assert state_of(record) == activity.Activity(State.ENDED, T0 + 99,
                                                 "swept: no event for too long", "stale")


def test_a_state_left_that_the_record_no_longer_bears_out_is_inferred_again():
    """Another writer (dotcontext) may complete a record without knowing the field; a field
    of another shape is no state either."""
    record, _ = run(ev("SessionStart"), ev("UserPromptSubmit", T0 + 1))
    raw = record.to_json()
    raw |= {"status": "completed", "completedAt": iso(T0 + 5)}
    assert activity.of(raw) == activity.Activity(State.ENDED, T0 + 5, "its own end mid-turn")
    for left in ({"state": "dancing", "why": "", "detail": ""}, {"state": "idle"}, "idle",
                 {"state": "idle", "why": "w", "detail": "", "since": 5}):
        raw = record.to_json()
        raw["metadata"]["sidecar"]["activity"] = left
        assert activity.of(raw).state == State.WORKING
