"""Event parsing: host payloads as they really are, names, and every reason to refuse."""

from __future__ import annotations

import orjson
import pytest

from helpers import FIXTURES, fixture_payload
from sidecar.inbox import events
from sidecar.inbox.events import BadEvent, parse

SPEC_ALIASES = {
    "session-start": ["SessionStart", "on_session_start", "session:start", "SESSION_START",
                      "Session Start", "session_start"],
    "session-end": ["SessionEnd", "on_session_finalize", "session:end", "conversation-done",
                    "Conversation_Done"],
    "session-reset": ["on_session_reset", "session:reset", "Session-Reset"],
    "turn-end": ["Stop", "SubagentStop", "agent:end", "agent-turn-complete", "AfterAgent",
                 "TURN_END"],
    "tool-use": ["PostToolUse", "post_tool_use", "tool use", "AfterTool"],
    "turn-start": ["UserPromptSubmit", "BeforeAgent", "turn_start"],
}


@pytest.mark.parametrize("canon,alias", [(c, a) for c, names in SPEC_ALIASES.items() for a in names])
def test_every_documented_alias_maps_to_its_canonical_name(canon, alias):
    # For a host sidecar does not know (`emit --source mine`), and for every host it does.
    assert events.canonical("unknown", alias) == canon
    assert events.canonical("mine", alias) == canon


def test_hermes_on_session_end_is_a_turn_end_for_hermes_only():
    # hermes fires on_session_end after every turn: for hermes it ends a turn, never a session.
    assert events.canonical("hermes", "on_session_end") == "turn-end"
    assert events.canonical("hermes", "on_session_finalize") == "session-end"
    assert events.canonical("unknown", "on_session_end") is None  # traced, nothing more
    assert events.canonical("claude-code", "on_session_end") is None
    event = parse(orjson.dumps({"event": "on_session_end", "session_id": "s", "host": "hermes"}),
                  "f.json", 1.0)
    assert event.kind == "turn-end"
    other = parse(orjson.dumps({"event": "on_session_end", "session_id": "s"}), "f.json", 1.0)
    assert other.host == "unknown" and other.kind is None


def test_unknown_events_keep_their_own_name():
    event = parse(fixture_payload("codex-0.169.0/PreToolUse.json"), "f.json", 1.0)
    assert event.kind is None and event.name == "PreToolUse"


def test_a_prompt_starts_a_turn():
    event = parse(fixture_payload("claude-code-2.1.328/UserPromptSubmit.json"), "f.json", 1.0)
    assert event.kind == "turn-start" and event.name == "UserPromptSubmit"


@pytest.mark.parametrize("path,kind,session", [
    ("claude-code-2.1.328/SessionStart.json", "session-start", "127bda75-deea-4f1f-9e2b-3d2745d3dec5"),
    ("claude-code-2.1.328/SessionEnd.json", "session-end", "127bda75-deea-4f1f-9e2b-3d2745d3dec5"),
    ("claude-code-2.1.328/PostToolUse.json", "tool-use", "127bda75-deea-4f1f-9e2b-3d2745d3dec5"),
    ("codex-0.169.0/Stop.json", "turn-end", "01a22640-ba24-7903-a282-1f18f8e5c50d"),
    ("codex-0.169.0/SubagentStop.json", "turn-end", "01a22640-33e9-7193-bfc7-e43fd6ff322c"),
    ("codex-0.169.0/notify.json", "turn-end", "01a22640-ba24-7903-a282-1f18f8e5c50d"),
    ("codex-0.169.0/Interrupt.json", None, "01a2263f-8671-7c80-a5a0-3e977846d929"),
    ("codex-0.171.0/SessionEnd.json", "session-end", "01a23edf-6fb6-7233-9f11-1055f3770674"),
    # Not integrated (around every model request): one a user sends is traced only.
    ("codex-0.171.0/PreModelRequest.json", None, "01a23edf-6fb6-7233-9f11-1055f3770674"),
    ("codex-0.171.0/PostModelRequest.json", None, "01a23edf-6fb6-7233-9f11-1055f3770674"),
])
def test_real_host_payloads_are_valid_events(path, kind, session):
    event = parse(fixture_payload(path), "f.json", 5.0)
    assert event.kind == kind
    assert event.session_id == session
    assert event.ts == 5.0  # no ts in the payload: the file's mtime counts


def test_host_payload_source_is_not_taken_for_the_host():
    event = parse(fixture_payload("claude-code-2.1.328/SessionStart-resume.json"), "f.json", 1.0)
    assert event.host == "unknown"
    assert event.text("source") == "resume"


def test_codex_notify_is_recognised_as_codex():
    assert parse(fixture_payload("codex-0.169.0/notify.json"), "f.json", 1.0).host == "codex"


def test_hermes_callback_kwargs_are_valid_events():
    calls = orjson.loads((FIXTURES / "hermes-agent-0.19.0/on_session_reset.json").read_bytes())["calls"]
    payload = {"event": "on_session_reset", "host": "hermes", **calls[0]["kwargs"]}
    event = parse(orjson.dumps(payload), "f.json", 1.0)
    assert event.kind == "session-reset" and event.session_id == "20261129_074608_d28171"


def test_ts_as_rfc3339_or_epoch():
    base = {"event": "x", "session_id": "s"}
    assert parse(orjson.dumps({**base, "ts": "2026-11-29T07:25:57.336Z"}), "f", 0).ts == pytest.approx(1795937157.336)
    assert parse(orjson.dumps({**base, "ts": 1795937157.5}), "f", 0).ts == 1795937157.5
    assert parse(orjson.dumps({**base, "ts": "yesterday"}), "f", 42.0).ts == 42.0


def test_bom_is_tolerated():
    assert parse(b"\xef\xbb\xbf" + orjson.dumps({"event": "x", "session_id": "s"}), "f", 0).name == "x"


@pytest.mark.parametrize("data,reason", [
    (b"", "empty file"),
    (b"{not json", "not UTF-8 JSON"),
    (b'{"event": "x", "session_id": "\xff\xfe"}', "not UTF-8 JSON"),
    (b'{"event": "x", "session_id": NaN}', "not UTF-8 JSON"),
    (b"[1, 2, 3]", "not a JSON object"),
    (b'"text"', "not a JSON object"),
    (b'{"session_id": "s"}', "no event name"),
    (b'{"event": "x"}', "no session id"),
    (b'{"event": 3, "session_id": "s"}', "must be a string"),
    (b'{"event": "x", "session_id": 12}', "must be a string"),
    (b'{"event": "x", "session_id": "a/b"}', "is not [A-Za-z0-9._:-]"),
    (b'{"event": "x", "session_id": "../x"}', "is not [A-Za-z0-9._:-]"),
    (b'{"event": "x", "session_id": ".."}', "a path component"),
    (b'{"event": "x", "session_id": "a\\u0000b"}', "is not [A-Za-z0-9._:-]"),
    (b'{"event": "x", "session_id": "' + b"a" * 200 + b'"}', "is not [A-Za-z0-9._:-]"),
    (b'{"event": "x", "session_id": ""}', "is not [A-Za-z0-9._:-]"),
    (b'{"event": "x", "session_id": "s", "host": "../../etc"}', "host"),
    (b'{"event": "x", "session_id": "s", "host": 5}', "host"),
    (b"[" * 100_000 + b"]" * 100_000, "not UTF-8 JSON"),
    (b'{"event": "x", "session_id": "s", "pad": "' + b"a" * (1024 * 1024) + b'"}', "larger than"),
])
def test_bad_events_are_refused_with_a_reason(data, reason):
    with pytest.raises(BadEvent, match=reason.replace("[", r"\[").replace("]", r"\]")):
        parse(data, "f.json", 0)
