"""A session's state as the views show it, inferred from the hosts' own events alone."""

from __future__ import annotations

from test_lifecycle import T0, ev, run

from sidecar.sessions import activity
from sidecar.sessions.activity import State
from sidecar.sessions.model import SessionRecord


def test_a_turn_in_progress_is_working_since_it_began_with_its_last_tool():
    record, _ = run(ev("SessionStart"), ev("UserPromptSubmit", T0 + 1),
                    ev("PostToolUse", T0 + 2, tool_name="Bash"))
    now = activity.of(record)
    assert (now.state, now.since, now.detail) == (State.WORKING, T0 + 1, "Bash")


def test_an_ask_of_the_host_is_waiting_until_the_session_moves_on():
    record, out = run(ev("SessionStart"), ev("UserPromptSubmit", T0 + 1),
                      ev("needs-input", T0 + 2, notification_type="permission_prompt",
                         message="Claude needs your permission to use Bash"))
    now = activity.of(record)
    assert (now.state, now.since, now.why) == (State.WAITING, T0 + 2, "asked for permission")
    assert now.detail == "Claude needs your permission to use Bash"
    assert out.trace[-1].event == "needs.input"
    assert out.changes[-1].reason == "permission_prompt"
    record, _ = run(ev("PostToolUse", T0 + 3, tool_name="Bash"), record=record)
    assert activity.of(record).state == State.WORKING
    assert SessionRecord.from_json(record.to_json()).sidecar.needs_input is None


def test_the_ask_survives_a_round_trip_and_ends_with_the_session():
    record, _ = run(ev("SessionStart"), ev("needs-input", T0 + 2, notification_type="idle_prompt"))
    again = SessionRecord.from_json(record.to_json())
    assert activity.of(again).why == "waiting for your prompt"
    record, _ = run(ev("SessionEnd", T0 + 3, reason="prompt_input_exit"), record=again)
    assert record.sidecar.needs_input is None and activity.of(record).state == State.ENDED


def test_between_turns_it_is_idle_and_a_limit_outranks_it():
    record, _ = run(ev("SessionStart"), ev("UserPromptSubmit", T0 + 1), ev("Stop", T0 + 4))
    assert (activity.of(record).state, activity.of(record).since) == (State.IDLE, T0 + 4)
    record, _ = run(ev("UserPromptSubmit", T0 + 5),
                    ev("StopFailure", T0 + 6, error="rate_limit", message="resets 5pm"),
                    record=record)
    now = activity.of(record)
    assert (now.state, now.since, now.detail) == (State.LIMITED, T0 + 6, "resets 5pm")


def test_an_end_says_who_ended_it_and_whether_mid_turn():
    record, _ = run(ev("SessionStart"), ev("UserPromptSubmit", T0 + 1),
                    ev("SessionEnd", T0 + 2, reason="host-exited"))
    assert activity.of(record).why == "the host process exited mid-turn"
    record, _ = run(ev("SessionStart"), ev("SessionEnd", T0 + 2, reason="logout"))
    assert (activity.of(record).why, activity.of(record).detail) == ("its own end", "logout")
