"""What an event through Claude Code's hook is, by its payload and by what `sidecar emit`
found of its process: another host's that runs Claude Code's hooks (Cursor's CLI, Devin's), and
which process the watch follows (the host's own `CLAUDE_PID`, where it named an ancestor)."""

from __future__ import annotations

import orjson

from helpers import fixture_payload
from sidecar.inbox.events import parse
from sidecar.vocabulary import EventKind

CONVERSATION = "6c1f0a52-3b8e-4d7a-9f21-0e5d4c3b2a19"
CURSOR = {"conversation_id": CONVERSATION, "generation_id": "0f3e9d2c-5b1a-4c8e-b7d6-1a2b3c4d5e6f",
          "model": "gpt-5", "cursor_version": "1.7.52", "workspace_roots": ["/home/dev/proj"]}


def through_claude_hook(body: dict, **meta: object):
    """As `sidecar emit --source claude-code` drops it, with what it found of the process."""
    envelope = {"version": 1, "host": "claude-code", "ts": 1.0, "hostPid": 4321, "hostStart": 99,
                **meta}
    return parse(orjson.dumps({"sidecarEnvelope": envelope, "payload": body}), "e.json", 1.0)


def claude_stop() -> dict:
    return orjson.loads(fixture_payload("claude-code-2.1.328/Stop.json"))


def test_claude_codes_own_payload_from_its_own_process_stays_claude_codes():
    event = through_claude_hook(claude_stop(), hostName="claude")
    assert event.host == "claude-code" and event.kind == EventKind.TURN_END


def test_a_payload_with_cursors_fields_is_cursors_whatever_shape_it_has():
    with_claude_fields = through_claude_hook({**claude_stop(), **CURSOR}, hostName="claude")
    assert with_claude_fields.host == "cursor" and with_claude_fields.kind == EventKind.TURN_END
    own = through_claude_hook({**CURSOR, "hook_event_name": "stop"})  # Cursor's own shape
    assert (own.host, own.session_id, own.cwd, own.kind) == \
        ("cursor", CONVERSATION, "/home/dev/proj", EventKind.TURN_END)


def test_a_hook_that_devins_cli_ran_is_devins():
    assert through_claude_hook(claude_stop(), hostName="devin").host == "devin"


def test_the_watched_process_is_the_one_claude_codes_own_variable_names():
    claims = {"CLAUDE_PID": [1234, 5678], "OTHER_PID": [77, 88]}
    claude = through_claude_hook(claude_stop(), hostName="timeout", pidClaims=claims)
    assert (claude.host_pid, claude.host_start) == (1234, 5678)  # not the wrapper's 4321
    # Cursor run from inside a Claude Code session inherits its CLAUDE_PID: not Cursor's own.
    cursor = through_claude_hook({**claude_stop(), **CURSOR}, pidClaims=claims)
    assert (cursor.host, cursor.host_pid, cursor.host_start) == ("cursor", 4321, 99)
    unclaimed = through_claude_hook(claude_stop(), pidClaims={"CLAUDE_PID": "1234"})
    assert (unclaimed.host_pid, unclaimed.host_start) == (4321, 99)  # malformed: not believed
