"""The notices of a turn, stepped in process through the real rules and queue: a turn's end is
one "finished" notice however many end events it has (a subagent's end is none); the idle
prompt after it tells nothing more where that end was told, and is told where it was not; a
host that exits mid-turn is told by a session-end notify hook as it comes."""

from __future__ import annotations

from datetime import datetime

import pytest

from sidecar.base.timeutil import parse_ts
from sidecar.followups.model import Hook
from sidecar.followups.notify.targets import Notify
from sidecar.layout import Workspace
from sidecar.vocabulary import EventKind
from support.limits import T0, Harness, ev, failed

IDLE = {"notification_type": "idle_prompt", "message": "Claude is waiting for your input"}


def notify(hook_id: str, event: EventKind, **more: object) -> Hook:
    return Hook(id=hook_id, name=hook_id, event=event, delay_seconds=0, prompt_file=None,
                action=Notify("desktop"), **more)  # type: ignore[arg-type]


@pytest.fixture
def h(tmp_path) -> Harness:
    harness = Harness(Workspace(tmp_path / "ws"))

    def hooks(doc):
        doc.hooks.clear()
        for hook in (notify("finished", EventKind.TURN_END), notify("waiting", EventKind.NEEDS_INPUT),
                     notify("limit", EventKind.TURN_FAILED), notify("ended", EventKind.SESSION_END)):
            doc.hooks[hook.id] = hook

    harness.hooks.change(T0, hooks)
    return harness


def told(h: Harness, hook_id: str) -> list[dict]:
    return [e.extra["notice"] for e in h.pending() if e.hook_id == hook_id]


def history(h: Harness, hook_id: str) -> list[str | None]:
    return [f.status for f in h.hooks.snapshot(T0).hooks[hook_id].history]


def test_a_turn_is_one_finished_notice_however_many_ends_it_has(h):
    h.apply(ev("SessionStart", T0), ev("UserPromptSubmit", T0 + 1, prompt="go"))
    h.apply(ev("SubagentStop", T0 + 2, agent_transcript_path="/x/agent-1.jsonl",
               last_assistant_message="the subagent's part"))  # its turn goes on
    assert told(h, "finished") == []
    h.apply(ev("Stop", T0 + 3, last_assistant_message="All done."))
    h.apply(ev("Stop", T0 + 4, stop_hook_active=True, last_assistant_message="All done."))
    [notice] = told(h, "finished")
    assert (notice["event"], notice["lastMessage"]) == ("turn-end", "All done.")
    h.apply(ev("UserPromptSubmit", T0 + 5, prompt="more"), ev("Stop", T0 + 6))
    assert len(told(h, "finished")) == 2  # the next turn: a notice of its own


def test_an_idle_prompt_after_a_told_end_is_not_told_again(h):
    h.apply(ev("SessionStart", T0), ev("UserPromptSubmit", T0 + 1), ev("Stop", T0 + 2))
    h.apply(ev("Notification", T0 + 62, **IDLE))
    assert told(h, "waiting") == []
    assert history(h, "waiting") == ["skipped: an idle prompt after a turn whose end was told already"]
    h.apply(ev("Notification", T0 + 70, notification_type="permission_prompt",
               message="Claude needs your permission"))  # an ask of its own: told
    assert [n["message"] for n in told(h, "waiting")] == ["Claude needs your permission"]


def test_an_idle_prompt_is_told_where_nothing_told_its_turn(h):
    h.apply(ev("SessionStart", T0), ev("UserPromptSubmit", T0 + 1),
            failed(T0 + 2, error="server_error", message="API Error: 500"))  # no limit, no notice
    h.apply(ev("Notification", T0 + 62, **IDLE))
    assert len(told(h, "waiting")) == 1
    h.hooks.change(T0, lambda doc: doc.hooks.pop("finished"))
    h.apply(ev("UserPromptSubmit", T0 + 70), ev("Stop", T0 + 71), ev("Notification", T0 + 131, **IDLE))
    assert len(told(h, "waiting")) == 2  # without a turn-end hook, the idle prompt tells it


def test_an_idle_prompt_after_a_told_usage_limit_is_not_told_again(h):
    h.apply(ev("SessionStart", T0), ev("UserPromptSubmit", T0 + 1), failed(T0 + 2))
    assert len(told(h, "limit")) == 1
    h.apply(ev("Notification", T0 + 62, **IDLE))
    assert told(h, "waiting") == []


def test_a_host_that_exits_mid_turn_is_told_without_being_asked(h):
    h.apply(ev("SessionStart", T0), ev("UserPromptSubmit", T0 + 1))
    h.apply(ev("SessionEnd", T0 + 2, reason="host-exited"))  # (a quit mid-turn: test_notify_hooks)
    [notice] = told(h, "ended")
    assert (notice["reason"], notice["midTurn"]) == ("host-exited", True)



def test_a_usage_limit_notice_says_claude_code_resumes_the_session_itself(h):
    message = "You've hit your 5-hour limit · resets 2:27am (UTC)"  # 2.1.332, logged in
    h.apply(ev("SessionStart", T0), ev("UserPromptSubmit", T0 + 1), failed(T0 + 2, message))
    at = parse_ts(h.record()["metadata"]["sidecar"]["hostResume"]["at"])
    [notice] = told(h, "limit")
    assert notice["message"] == f"{message} · Claude Code resumes this session itself at " \
                                f"{datetime.fromtimestamp(at):%H:%M}"
