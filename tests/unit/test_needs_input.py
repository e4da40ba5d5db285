"""Waiting for the user, from each host's own signal: its recorded asks become needs-input
events, its notices (a login that worked, a shell that finished) are traced only, and a
session waits from the ask until it moves on."""

from __future__ import annotations

import json

import orjson
import pytest

from helpers import FIXTURES, fixture_payload
from sidecar.base.ids import harness_id
from sidecar.inbox.events import parse
from sidecar.sessions.batch import open_batch
from sidecar.sessions.store import SessionStore
from sidecar.views import activity
from sidecar.vocabulary import EventKind

T0 = 1_796_115_000.0


def event(host: str, body: dict, ts: float = T0, file: str = "e.json", named: str | None = None):
    """As `sidecar emit --source host [--event named]` drops it."""
    envelope = {"version": 1, "host": host, "ts": ts, **({"event": named} if named else {})}
    wrapped = {"sidecarEnvelope": envelope, "payload": body}
    return parse(orjson.dumps(wrapped), file, ts)


def recorded(name: str) -> dict:
    return orjson.loads(fixture_payload(name))


# Each host's own recorded asks (the real programs, offline), and what sidecar calls them.
ASKS = [
    ("claude-code", "claude-code-2.1.328/Notification.permission_prompt.json",
     "permission_prompt", "Claude needs your permission", "asked for permission"),
    ("gemini", "gemini-cli-0.61.0/Notification.json", "ToolPermission",
     "Tool Confirm Shell Command requires execution", "asked for permission"),
    ("qwen", "qwen-0.24.4/Notification.idle_prompt.json", "idle_prompt",
     "Qwen Code is waiting for your input", "waiting for your prompt"),
]


@pytest.mark.parametrize(("host", "name", "kind", "message", "why"), ASKS)
def test_a_recorded_ask_is_a_needs_input_event(host, name, kind, message, why):
    asked = event(host, recorded(name))
    assert asked.kind is EventKind.NEEDS_INPUT
    assert (asked.input_kind, asked.input_message) == (kind, message)
    assert activity._asks(asked.input_kind) == why


@pytest.mark.parametrize(("host", "body"), [
    ("qwen", recorded("qwen-0.24.4/Notification.auth_success.json")),
    # Claude Code 2.1.328 names its notices as it names its asks (its own notification types)
    ("claude-code", {"session_id": "s", "hook_event_name": "Notification",
                     "notification_type": "auth_success", "message": "Signed in"}),
    ("claude-code", {"session_id": "s", "hook_event_name": "Notification",
                     "notification_type": "agent_completed", "message": "agent finished"}),
    # Copilot CLI's notification hook also tells of a shell that finished
    ("copilot", {"sessionId": "s", "notification_type": "shell_completed",
                 "message": "shell done"}),
])
def test_a_notice_is_traced_only(host, body):
    # Copilot's hooks name their event on the command line (`emit --event notification`)
    assert event(host, body, named="notification" if host == "copilot" else None).kind is None


def test_claude_codes_permission_request_is_left_to_its_notification():
    # Both fire for one dialog (recorded): the Notification is the ask, so the dialog is one
    # wait, not two.
    assert event("claude-code", recorded("claude-code-2.1.328/PermissionRequest.json")).kind is None


def test_copilots_permission_request_is_not_an_ask_but_its_notification_is():
    # permissionRequest fires before Copilot's own rules decide (recorded with every tool
    # allowed: nobody was asked), so only its notification of a permission prompt waits.
    allowed = json.loads((FIXTURES / "permissionRequest.json").read_text())
    assert event("copilot", allowed, named="permissionRequest").kind is None
    ask = event("copilot", {"sessionId": "s", "notification_type": "permission_prompt",
                            "message": "Copilot needs permission", "title": "Permission"},
                named="notification").kind
    assert ask is EventKind.NEEDS_INPUT


def test_codexs_permission_request_names_the_tool_it_asks_to_run():
    # The fields of Codex 0.169.0's permission-request.command.input schema.
    asked = event("codex", {"session_id": "s", "cwd": "/w", "hook_event_name": "PermissionRequest",
                            "model": "m", "permission_mode": "default", "transcript_path": None,
                            "turn_id": "t", "tool_name": "Bash",
                            "tool_input": {"command": ["touch", "a"]}})
    assert asked.kind is EventKind.NEEDS_INPUT
    assert (asked.input_kind, asked.input_message) == ("permission_request", "Bash: touch a")
    assert activity._asks(asked.input_kind) == "asked for permission"


def test_a_session_waits_from_the_ask_until_the_next_event(workspace):
    """The recorded Claude Code sequence of a permission dialog: the prompt, the tool's ask,
    the user's answer (the tool ran), the turn's end."""
    store = SessionStore(workspace, durable=False)
    start = recorded("claude-code-2.1.328/UserPromptSubmit.json")
    sid = start["session_id"]
    ask = recorded("claude-code-2.1.328/Notification.permission_prompt.json") | {"session_id": sid}
    notice = {"session_id": sid, "hook_event_name": "Notification",
              "notification_type": "auth_success", "message": "Signed in"}
    ran = recorded("claude-code-2.1.328/PostToolUse.json") | {"session_id": sid}
    states = []
    for n, body in enumerate((start, ask, notice, ran)):
        with open_batch(store) as batch:
            batch.plan([event("claude-code", body, T0 + n, f"{n}.json")])
            assert not batch.commit({}, T0 + n).retry
        record = store.load_session(harness_id("claude-code", sid))
        states.append(activity.of(record.to_json()).state)
    assert states == [activity.State.WORKING, activity.State.WAITING,
                      activity.State.WAITING,  # a notice changes nothing
                      activity.State.WORKING]
