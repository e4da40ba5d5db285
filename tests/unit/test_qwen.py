"""Qwen Code, as its recorded payloads and chat files (the real qwen 0.24.4, offline) show it:
what each event means, what its chat file says at the end, and its settings written and
given back byte for byte."""

from __future__ import annotations

import json

import orjson
import pytest

from helpers import FIXTURES, SIDECAR, TRANSCRIPTS, fixture_payload, invoke, read_json
from sidecar.base.endreasons import HOST_EXITED
from sidecar.base.ids import harness_id
from sidecar.followups.queue import FollowUpQueue
from sidecar.followups.store import HookStore
from sidecar.hosts import qwen
from sidecar.hosts.base import Failure, Spend, Tokens
from sidecar.hosts.files import settings
from sidecar.inbox.events import parse
from sidecar.sessions.batch import open_batch
from sidecar.sessions.store import SessionStore
from sidecar.vocabulary import LIMIT_ERRORS, EventKind
from support.stores import seeded_workspace
from support.zones import local_zone

T0 = 1_796_115_000.0
RECORDED = FIXTURES / "qwen-0.24.4"


def payload(name: str) -> dict:
    return orjson.loads(fixture_payload(f"qwen-0.24.4/{name}.json"))


def event(body: dict, ts: float = T0, file: str = "e.json"):
    wrapped = {"sidecarEnvelope": {"version": 1, "host": "qwen", "ts": ts}, "payload": body}
    return parse(orjson.dumps(wrapped), file, ts)


@pytest.mark.parametrize(("name", "kind"), [
    ("SessionStart", EventKind.SESSION_START), ("SessionStart.resume", EventKind.SESSION_START),
    ("UserPromptSubmit", EventKind.TURN_START), ("PostToolUse", EventKind.TOOL_USE),
    ("Stop", EventKind.TURN_END), ("Stop.tool", EventKind.TURN_END),
    ("SessionEnd.prompt_input_exit", EventKind.SESSION_END),
    ("Notification.idle_prompt", EventKind.NEEDS_INPUT),
    # traced only (auth_success: a notice at every start, not an ask)
    ("InstructionsLoaded", None), ("Notification.auth_success", None),
    ("MessageDisplay", None), ("PreToolUse", None),
    ("PostToolBatch", None),
])
def test_each_recorded_event_means_what_qwen_code_does(name, kind):
    assert event(payload(name)).kind is kind


def test_the_session_end_of_the_interactive_ui_names_its_reason():
    assert event(payload("SessionEnd.prompt_input_exit")).reason == "prompt_input_exit"


def test_a_stop_failure_on_a_rate_limit_is_a_limit_failure():
    # Recorded from the interactive UI (one-shot runs fire no StopFailure), refused at once
    # with a text naming a rate limit, which Qwen Code classifies as `rate_limit` as it does a
    # 429 (whose retries take many minutes).
    failed = event(payload("StopFailure.rate_limit"))
    assert failed.kind is EventKind.TURN_FAILED
    assert failed.error_kind == "rate_limit" and failed.error_kind in LIMIT_ERRORS
    assert failed.error_message == "[API Error: 400 Rate limit reached for requests (stub)]"


def test_tokens_are_the_assistant_messages_usage_each_counted_once():
    # Two turns; the stub answered 10 prompt and 5 output tokens each. The memory extraction
    # after each turn writes no assistant line, so it is not counted.
    path = str(TRANSCRIPTS / "qwen-0.24.4.jsonl")
    assert qwen.HOST.end_facts(path, "").tokens == Tokens(input=20, output=10)


def test_cached_input_is_apart_and_thoughts_are_output(tmp_path):
    line = {"uuid": "a", "type": "assistant", "usageMetadata": {
        "promptTokenCount": 1000, "candidatesTokenCount": 30, "thoughtsTokenCount": 5,
        "cachedContentTokenCount": 400, "totalTokenCount": 1035}}
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps(line) + "\n" + json.dumps(line) + "\n")  # written twice: once
    assert qwen.HOST.end_facts(str(path), "").tokens == Tokens(input=600, output=35,
                                                               cache_read=400)


def test_spend_is_the_recorded_turns_by_the_model_each_names_and_its_day():
    with local_zone("UTC"):
        facts = qwen.HOST.end_facts(str(TRANSCRIPTS / "qwen-0.24.4.jsonl"), "")
    # Qwen Code writes no price of its own: the table prices it.
    assert facts.spend == (Spend("stub-model", "2026-12-01", Tokens(input=20, output=10), None),)


def test_spend_is_summed_by_model_and_local_day_each_message_once(tmp_path):
    recorded = [json.loads(line) for line in (TRANSCRIPTS / "qwen-0.24.4.jsonl").read_text().splitlines()]
    first, second = (e for e in recorded if e.get("type") == "assistant")
    usage = {"promptTokenCount": 1000, "candidatesTokenCount": 30, "thoughtsTokenCount": 5,
             "cachedContentTokenCount": 400, "totalTokenCount": 1035}
    first.update(model="qwen3-coder-plus", timestamp="2026-12-01T22:30:00.000Z", usageMetadata=usage)
    second.update(model="qwen3-coder-plus", timestamp="2026-12-01T23:30:00.000Z", usageMetadata=usage)
    other = {**second, "uuid": "c", "model": "qwen3-max", "timestamp": "2026-12-02T09:00:00.000Z"}
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in [*recorded, second, other]))  # `second` twice
    with local_zone("CET-1"):  # 23:30 in UTC is the next day there
        facts = qwen.HOST.end_facts(str(path), "")
    one = Tokens(input=600, output=35, cache_read=400)
    assert facts.spend == (Spend("qwen3-coder-plus", "2026-12-01", one, None),
                           Spend("qwen3-coder-plus", "2026-12-02", one, None),
                           Spend("qwen3-max", "2026-12-02", one, None))
    assert facts.tokens == Tokens(input=1800, output=105, cache_read=1200)

def test_a_turn_refused_on_a_rate_limit_is_read_from_the_chat_file():
    facts = qwen.HOST.end_facts(str(TRANSCRIPTS / "qwen-0.24.4.rate-limit.jsonl"), "")
    assert isinstance(facts.failure, Failure) and facts.failure.kind == "rate_limit"
    assert "Limit resets at 1796118962" in facts.failure.message  # the last attempt's text
    assert facts.tokens is None  # no answer came


def test_a_session_whose_turns_were_answered_did_not_fail():
    assert qwen.HOST.end_facts(str(TRANSCRIPTS / "qwen-0.24.4.jsonl"), "").failure is None


def telemetry(name: str, **fields) -> dict:
    return {"type": "system", "subtype": "ui_telemetry",
            "systemPayload": {"uiEvent": {"event.name": name, **fields}}}


USER, ANSWER = {"type": "user"}, {"type": "assistant"}
REFUSED = telemetry(qwen.API_ERROR, status_code=429, error_type="RateLimitError",
                    error_message="429 Rate limit reached")


@pytest.mark.parametrize(("entries", "failure"), [
    # a refusal that a retry answered is no failure
    ([USER, REFUSED, telemetry(qwen.API_RESPONSE, status_code=200)], None),
    ([USER, REFUSED, ANSWER], None),
    # a subagent's refusal after the turn says nothing of the user's turn
    ([USER, ANSWER, telemetry(qwen.API_ERROR, status_code=429,
                              subagent_name="managed-auto-memory-extractor")], None),
    # a refusal of another kind is named as Qwen Code names it
    ([USER, telemetry(qwen.API_ERROR, status_code=500, error_type="InternalServerError",
                      error_message="500 boom")], Failure("InternalServerError", "500 boom")),
    ([USER, telemetry(qwen.API_ERROR)], Failure("unknown", "")),
    # one whose text names a rate limit is one, as Qwen Code says (the chat file's line for the
    # refusal recorded in StopFailure.rate_limit.json)
    ([USER, telemetry(qwen.API_ERROR, status_code=400, error_type="BadRequestError",
                      error_message="400 Rate limit reached for requests (stub)")],
     Failure("rate_limit", "400 Rate limit reached for requests (stub)")),
    # a new turn after a refusal has not failed yet
    ([REFUSED, USER], None),
])
def test_the_last_failure_is_read_from_the_chat_files_telemetry(entries, failure):
    assert qwen.last_failure(entries) == failure


# -- the empty UserPromptSubmit after tool results -----------------------------------------


def applied(tmp_path, names: list[str]) -> tuple[dict, list[str]]:
    """The session record and the follow-ups queued after `names` (recorded payloads, in
    order) and the process watch's report that the one-shot run's CLI exited."""
    ws = seeded_workspace(tmp_path / "ws", T0)
    hooks = HookStore(ws, durable=False)
    sessions = SessionStore(ws, durable=False)
    session = payload("SessionStart")["session_id"]
    events = [event({**payload(name), "session_id": session}, T0 + i, f"{i:04d}.json")
              for i, name in enumerate(names)]
    events.append(event({"hook_event_name": "SessionEnd", "session_id": session,
                         "reason": HOST_EXITED}, T0 + len(names), "end.json"))
    with open_batch(sessions) as batch:
        batch.commit(FollowUpQueue(hooks, "me").add(batch.plan(events), T0 + 50), T0 + 50)
    record = read_json(ws.session_dir(harness_id("qwen", session)) / "session.json")
    return record, [p.hook_id for p in hooks.snapshot(T0 + 50).pending]


def test_the_turn_start_qwen_code_repeats_after_tool_results_changes_no_follow_up(tmp_path):
    plain = ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop.tool"]
    with_repeat = ["SessionStart", "UserPromptSubmit", "PostToolUse",
                   "UserPromptSubmit.after-tool-batch", "Stop.tool"]
    assert payload("UserPromptSubmit.after-tool-batch")["prompt"] == ""
    record, queued = applied(tmp_path / "a", with_repeat)
    plain_record, plain_queued = applied(tmp_path / "b", plain)
    assert record["status"] == "completed" == plain_record["status"]
    assert queued == plain_queued == ["post-task"]  # the turn ended: not an interrupted one
    assert record["metadata"]["sidecar"]["completionReason"] == HOST_EXITED


# -- its settings ---------------------------------------------------------------------------

USER_FILE = """{
  // Qwen Code strips comments as it reads
  "security": {"auth": {"selectedType": "openai"}},
  "hooks": {
    "Stop": [{"matcher": "*", "hooks": [{"type": "command", "command": "say done", "timeout": 30}]}]
  },
  "model": {"name": "qwen3-coder-plus"},
  "$version": 4
}
"""


def test_integrate_writes_the_users_settings_and_uninstall_gives_them_back(tmp_path, config_home):
    home = tmp_path / "home"
    path = home / ".qwen" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(USER_FILE)
    result = invoke("integrate", "qwen", env={"HOME": str(home)})
    assert result.returncode == 0, result.stderr
    merged = settings.load_json(path, comments=True)
    assert merged["$version"] == 4 and merged["model"] == {"name": "qwen3-coder-plus"}
    assert merged["hooks"]["Stop"][0]["hooks"][0]["command"] == "say done"  # the user's first
    for name in qwen.EVENTS:
        handler = merged["hooks"][name][-1]["hooks"][0]
        assert handler == {"type": "command", "command": f"{SIDECAR} emit --source qwen",
                           "name": "sidecar", "timeout": 5}  # seconds, as Qwen Code reads it
    assert "// Qwen Code strips comments" in path.read_text()
    assert qwen.HOST.integrated(None, home)
    again = invoke("integrate", "qwen", env={"HOME": str(home)})
    assert b"nothing changed" in again.stdout
    removed = invoke("integrate", "qwen", "--uninstall", env={"HOME": str(home)})
    assert removed.returncode == 0, removed.stderr
    assert path.read_text() == USER_FILE
    assert not qwen.HOST.integrated(None, home)


def test_a_project_integration_calls_sidecar_from_path(workspace):
    result = invoke("integrate", "qwen", "--project", cwd=workspace.root)
    assert result.returncode == 0, result.stderr
    written = read_json(workspace.root / ".qwen" / "settings.json")
    commands = {h["command"] for groups in written["hooks"].values() for g in groups
                for h in g["hooks"]}
    assert commands == {"sidecar emit --source qwen"}
    assert sorted(written["hooks"]) == sorted(qwen.EVENTS)


def test_doctor_says_where_every_hook_is_turned_off(tmp_path):
    home, root = tmp_path / "home", tmp_path / "project"
    (home / ".qwen").mkdir(parents=True)
    (root / ".qwen").mkdir(parents=True)
    assert qwen.HOST.findings(root, home) == []
    (root / ".qwen" / "settings.json").write_text('{"disableAllHooks": true}')
    (home / ".qwen" / "settings.json").write_text('{"disableAllHooks": false}')
    [finding] = qwen.HOST.findings(root, home)
    assert not finding.ok and "disableAllHooks" in finding.what
    assert str(root / ".qwen" / "settings.json") in finding.fix
    (home / ".qwen" / "settings.json").write_text("{not json")  # unreadable: not a finding
    assert len(qwen.HOST.findings(root, home)) == 1
