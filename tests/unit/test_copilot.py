"""GitHub Copilot CLI: its recorded payloads and session events read, its hooks written in its
own shape (user settings and a repository's hook file) and given back byte for byte, its trust
checked, its resume built."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import pytest

from helpers import SIDECAR, invoke, read_json
from sidecar import emit
from sidecar.base.ids import harness_id
from sidecar.config import Config, ConfigError, load_config
from sidecar.followups.decide import decide
from sidecar.followups.run.actions import Firing, build_argv
from sidecar.hosts import registry
from sidecar.hosts.base import Failure, IntegrateError, Spend, Tokens
from sidecar.hosts.copilot import hooks as copilot_hooks
from sidecar.hosts.copilot import host as copilot
from sidecar.inbox import events
from sidecar.layout import Workspace
from sidecar.vocabulary import EventKind, Verdict
from support.limits import T0, Harness, ev, failed
from support.zones import local_zone

FIXTURES = Path(__file__).parents[1] / "e2e" / "copilot" / "fixtures"
SESSION = "6dfccab1-c455-438c-953a-2c06850f3310"
RATE_LIMITED = ("Rate limit reached for requests (stub). Limit resets at 1796120061. Please try "
                "again in 3600s.")


def emitted(monkeypatch: pytest.MonkeyPatch, fixture: str, event: str) -> events.Event:
    """A recorded payload through `sidecar emit --source copilot --event <event>`'s own
    building of the event file, then parsed as the daemon parses it."""
    stdin = io.TextIOWrapper(io.BytesIO((FIXTURES / fixture).read_bytes()))
    monkeypatch.setattr(sys, "stdin", stdin)
    data, why, cwd = emit.build_event({"source": "copilot", "event": event}, [])
    assert data is not None, why
    assert cwd == "/home/user/project"
    return events.parse(data, "f.json", 0.0)


@pytest.mark.parametrize("fixture, event, kind, fields", [
    ("sessionStart.json", "sessionStart", EventKind.SESSION_START, {}),
    ("sessionStart.resume.json", "sessionStart", EventKind.SESSION_START, {}),
    ("userPromptSubmitted.json", "userPromptSubmitted", EventKind.TURN_START, {}),
    ("postToolUse.json", "postToolUse", EventKind.TOOL_USE, {"tool_name": "bash"}),
    ("agentStop.json", "agentStop", EventKind.TURN_END,  # the turn end names the transcript
     {"transcript_path": f"/home/user/.copilot/session-state/{SESSION}/events.jsonl"}),
    ("sessionEnd.complete.json", "sessionEnd", EventKind.SESSION_END, {}),
    ("sessionEnd.error.json", "sessionEnd", EventKind.SESSION_END, {"reason": "error"}),
    ("errorOccurred.rate_limit.json", "errorOccurred", EventKind.TURN_FAILED,  # with the API's text
     {"error_kind": "rate_limit", "error_message": RATE_LIMITED}),
    ("permissionRequest.json", "permissionRequest", None, {}),
])
def test_each_recorded_payload_means_its_event(monkeypatch, fixture, event, kind, fields):
    parsed = emitted(monkeypatch, fixture, event)
    assert (parsed.name, parsed.kind, parsed.host) == (event, kind, "copilot")
    assert parsed.session_id in (SESSION, "aff95142-fe14-48a5-b223-a62be11d4be2",
                                 "efa3d40e-d0e7-4043-9b02-c909c2370f91")
    assert {name: getattr(parsed, name) for name in fields} == fields


def test_the_hook_command_as_integrate_writes_it_names_its_event():
    program, command, *args = copilot_hooks.command("sidecar", "copilot", "agentStop").split()
    assert (program, command) == ("sidecar", "emit")
    assert emit.parse_args(args) == ({"source": "copilot", "event": "agentStop"}, [], [])


def test_the_hook_commands_event_wins_over_a_payload_field_that_looks_like_one():
    payload = b'{"sessionId": "s1", "type": "SessionEnd", "cwd": "/p"}'
    data = emit.envelope(payload, [("ts", "1.0"), ("host", '"copilot"'),
                                   ("event", '"notification"')])
    parsed = events.parse(data, "f.json", 0.0)
    assert (parsed.name, parsed.kind) == ("notification", None)  # not taken for an end


def test_a_payload_naming_no_event_and_no_event_given_is_refused():
    with pytest.raises(events.BadEvent, match="no event name"):
        events.parse(emit.envelope(b'{"sessionId": "s1"}', [("ts", "1.0")]), "f.json", 0.0)


def test_tokens_are_the_sum_of_every_model_calls_usage_record():
    facts = copilot.HOST.end_facts(str(FIXTURES / "events.sample.jsonl"), SESSION)
    usage = [json.loads(line)["data"]["usage"] for line in
             (FIXTURES / "events.sample.jsonl").read_text().splitlines()
             if '"session.usage_record"' in line]
    assert len(usage) == 2  # the first run and its resume
    assert facts.tokens == Tokens(input=sum(u["inputTokens"] for u in usage),
                                  output=sum(u["outputTokens"] for u in usage))
    assert facts.tokens.input > 0 and facts.failure is None


def test_spend_is_each_model_calls_usage_by_the_model_it_names_and_its_day():
    with local_zone("UTC"):
        facts = copilot.HOST.end_facts(str(FIXTURES / "events.sample.jsonl"), SESSION)
    # Its `cost` is a premium-request multiplier, not dollars: the table prices it.
    assert facts.spend == (Spend("stub-model", "2026-12-01", Tokens(input=20, output=10), None),)


def test_spend_is_summed_by_model_and_local_day(tmp_path):
    lines = [json.loads(line) for line in (FIXTURES / "events.sample.jsonl").read_text().splitlines()]
    first, second = (e for e in lines if e["type"] == "session.usage_record")
    first["data"]["usage"].update(model="gpt-5", cacheReadTokens=300, cost=1.0)
    first["timestamp"] = "2026-12-01T22:30:00.000Z"
    second["data"]["usage"].update(model="claude-sonnet-4.5", cost=1.0)
    second["timestamp"] = "2026-12-01T23:30:00.000Z"  # the next day in CET
    third = json.loads(json.dumps(second))
    third["timestamp"] = "2026-12-02T08:00:00.000Z"
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in [*lines, third]))
    with local_zone("CET-1"):
        facts = copilot.HOST.end_facts(str(path), SESSION)
    assert facts.spend == (Spend("gpt-5", "2026-12-01", Tokens(10, 5, 300), None),
                           Spend("claude-sonnet-4.5", "2026-12-02", Tokens(20, 10), None))
    assert facts.tokens == Tokens(30, 15, 300)

def test_a_turn_refused_for_a_rate_limit_is_a_failure_of_that_kind():
    facts = copilot.HOST.end_facts(str(FIXTURES / "events.rate_limit.jsonl"), SESSION)
    assert facts.failure == Failure("rate_limit", f"429 {RATE_LIMITED}")
    assert facts.tokens is None  # no model call was answered


@pytest.mark.parametrize("message, kind", [
    ('{"message": "Too many", "type": "requests", "code": "rate_limit_exceeded"}', "rate_limit"),
    ('{"error": {"message": "No credit", "code": "insufficient_quota"}}', "quota_exceeded"),
    ("429 Too Many Requests", "rate_limit"),
    ("socket hang up", "model_call"),  # a failure, but no limit: nothing waits for a reset
])
def test_a_failed_calls_error_text_says_its_kind(message, kind):
    assert copilot.model_call_failure({"message": message, "name": "Error"}).kind == kind


def test_a_later_turn_that_was_answered_clears_an_earlier_refusal(tmp_path):
    refused = (FIXTURES / "events.rate_limit.jsonl").read_text()
    answered = [line for line in (FIXTURES / "events.sample.jsonl").read_text().splitlines()
                if '"user.message"' in line or '"assistant.message"' in line][-2:]
    path = tmp_path / "events.jsonl"
    path.write_text(refused + "\n".join(answered) + "\n")
    assert copilot.HOST.end_facts(str(path), SESSION).failure is None
    path.write_text(refused + answered[0] + "\n")  # a new prompt, not answered yet
    assert copilot.HOST.end_facts(str(path), SESSION).failure is None


def test_an_end_naming_no_transcript_reads_the_sessions_own(tmp_path, monkeypatch):
    """A refused turn has no agentStop, so nothing named the transcript: it is where Copilot
    keeps every session's, under COPILOT_HOME."""
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "cp"))
    folder = tmp_path / "cp" / "session-state" / SESSION
    folder.mkdir(parents=True)
    shutil.copy(FIXTURES / "events.rate_limit.jsonl", folder / "events.jsonl")
    assert copilot.HOST.end_facts(None, SESSION).failure.kind == "rate_limit"
    assert copilot.HOST.end_facts(None, "../../etc").failure is None  # never a path from an id


USER = """// my settings
{
  "model": "gpt-5",   /* mine */
  "hooks": {
    "sessionStart": [
      {"type": "command", "bash": "notify-send hi", "timeoutSec": 3}
    ],
    "preToolUse": []
  }
}
"""


def test_user_hooks_are_added_after_the_users_own_and_given_back_byte_for_byte(tmp_path):
    home = tmp_path / "home"
    settings = home / ".copilot" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(USER)
    lock = settings.with_name("settings.json.lock")
    lock.write_bytes(b"")
    env = {"HOME": str(home)}
    assert invoke("integrate", "copilot", env=env).returncode == 0
    text = settings.read_text()
    assert text.startswith("// my settings\n") and "/* mine */" in text
    data = copilot_hooks.settings.jsonedit.loads(text, True)
    assert data["hooks"]["sessionStart"][0]["bash"] == "notify-send hi"  # the user's stays first
    assert data["hooks"]["preToolUse"] == []
    for event in copilot.EVENTS:
        [ours] = [h for h in data["hooks"][event] if copilot_hooks.is_ours(h)]
        assert ours == {"type": "command", "timeoutSec": copilot.TIMEOUT_SEC,
                        "bash": f"{SIDECAR} emit --source copilot --event {event}"}
    assert copilot.HOST.integrated(None, home)
    again = invoke("integrate", "copilot", env=env)
    assert b"nothing changed" in again.stdout and settings.read_text() == text
    assert invoke("integrate", "copilot", "--uninstall", env=env).returncode == 0
    assert settings.read_text() == USER
    assert lock.exists() and sorted(p.name for p in settings.parent.iterdir()) == [
        "settings.json", "settings.json.lock"]  # Copilot's own files are never touched


def test_copilot_home_moves_the_users_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "elsewhere"))
    assert invoke("integrate", "copilot", env={"HOME": str(tmp_path / "home")}).returncode == 0
    assert copilot_hooks.has_ours(tmp_path / "elsewhere" / "settings.json")
    assert not (tmp_path / "home" / ".copilot").exists()


def test_a_repository_hook_file_is_sidecars_own_and_goes_when_uninstalled(workspace, tmp_path):
    env = {"HOME": str(tmp_path / "home")}
    result = invoke("integrate", "copilot", "--project", cwd=workspace.root, env=env)
    assert result.returncode == 0 and b"from PATH" in result.stderr
    hook_file = workspace.root / ".github" / "hooks" / "sidecar.json"
    data = read_json(hook_file)
    assert data["version"] == 1
    assert {h["bash"] for handlers in data["hooks"].values() for h in handlers} == {
        f"sidecar emit --source copilot --event {event}" for event in copilot.EVENTS}
    assert copilot.HOST.integrated(workspace.root, tmp_path / "home")
    assert invoke("integrate", "copilot", "--project", "--uninstall", cwd=workspace.root,
                  env=env).returncode == 0
    assert not (workspace.root / ".github").exists()  # sidecar made it all, and took it away


def test_a_repository_hook_file_of_the_users_is_given_back_byte_for_byte(workspace, tmp_path):
    hook_file = workspace.root / ".github" / "hooks" / "sidecar.json"
    hook_file.parent.mkdir(parents=True)
    mine = '{\n    "hooks": {"agentStop": [{"type": "command", "bash": "say done"}]},\n' \
           '    "version": 1\n}\n'
    hook_file.write_text(mine)
    env = {"HOME": str(tmp_path / "home")}
    assert invoke("integrate", "copilot", "--project", cwd=workspace.root, env=env).returncode == 0
    assert [h["bash"] for h in read_json(hook_file)["hooks"]["agentStop"]] == [
        "say done", "sidecar emit --source copilot --event agentStop"]
    assert invoke("integrate", "copilot", "--project", "--uninstall", cwd=workspace.root,
                  env=env).returncode == 0
    assert hook_file.read_text() == mine


@pytest.mark.parametrize("text, why", [
    ('{"hooks": []}', "`hooks` is not an object"),
    ('{"hooks": {"agentStop": {"bash": "x"}}}', "`hooks.agentStop` is not a list"),
    ('{"version": 2, "hooks": {}}', "version 2"),
    ('{"hooks": {', "not valid JSON"),
    ("[]", "does not hold a JSON object"),
])
def test_a_file_that_cannot_be_changed_safely_is_refused_and_left_as_it_is(tmp_path, text, why):
    path = tmp_path / ".github" / "hooks" / "sidecar.json"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(IntegrateError, match=why):
        copilot.HOST.integrate(path, "sidecar", uninstall=False)
    assert path.read_text() == text


def test_repository_hooks_in_a_folder_copilot_does_not_trust_are_a_problem(workspace, tmp_path,
                                                                          monkeypatch):
    monkeypatch.delenv("COPILOT_ALLOW_ALL", raising=False)
    monkeypatch.delenv("COPILOT_HOME", raising=False)
    home = tmp_path / "home"
    assert copilot.HOST.findings(workspace.root, home) == []  # no repository hooks: nothing
    assert invoke("integrate", "copilot", "--project", cwd=workspace.root,
                  env={"HOME": str(home)}).returncode == 0
    [finding] = copilot.HOST.findings(workspace.root, home)
    assert not finding.ok and "does not trust" in finding.what
    assert str(home / ".copilot" / "config.json") in finding.fix
    config = home / ".copilot" / "config.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    # As Copilot writes it: comments first, and a folder above trusts the folders below.
    config.write_text("// This file is managed automatically.\n{\n  \"trustedFolders\": "
                      f"[{json.dumps(str(workspace.root.parent))}]\n}}\n")
    assert copilot.HOST.findings(workspace.root, home) == []
    config.write_text('{"trustedFolders": ["/somewhere/else"]}')
    assert len(copilot.HOST.findings(workspace.root, home)) == 1
    monkeypatch.setenv("COPILOT_ALLOW_ALL", "true")
    assert copilot.HOST.findings(workspace.root, home) == []
    monkeypatch.setenv("COPILOT_ALLOW_ALL", "1")  # only exactly "true" trusts every folder
    assert len(copilot.HOST.findings(workspace.root, home)) == 1


def test_the_resume_edits_files_by_default_and_keeps_a_prompt_that_begins_with_a_dash(tmp_path):
    prompt = "- tidy up\n- say done"

    def resume(config: Config) -> list[str]:
        firing = Firing("post-task", "copilot", SESSION, "h1", prompt, None, tmp_path,
                        options=config.options)
        return build_argv("resume", firing, config.resume, Workspace(tmp_path)).argv

    assert resume(load_config(tmp_path / "absent.toml")) == [
        "copilot", f"--resume={SESSION}", "--allow-tool=write", f"--prompt={prompt}"]
    (tmp_path / "c.toml").write_text('copilotPermission = "--allow-all-tools"\n')
    assert "--allow-all-tools" in resume(load_config(tmp_path / "c.toml"))
    (tmp_path / "bad.toml").write_text('copilotPermission = "--yolo"\n')
    with pytest.raises(ConfigError, match="copilotPermission must be one of"):
        load_config(tmp_path / "bad.toml")
    assert registry.id_misfit("copilot", SESSION) is None
    assert registry.id_misfit("copilot", "--help") is not None


# -- a refused turn, stepped through the session rules and the queue ----------------------


def copilot_event(name: str, ts: float, **payload: object) -> events.Event:
    data = {"sessionId": SESSION, "cwd": "/home/user/project", "timestamp": int(ts * 1000),
            **payload}
    return events.parse(emit.envelope(json.dumps(data).encode(), [
        ("ts", repr(ts)), ("host", '"copilot"'), ("event", json.dumps(name))]), f"{ts}.json", ts)


def refused(ts: float) -> events.Event:
    return copilot_event("errorOccurred", ts, **json.loads(
        (FIXTURES / "errorOccurred.rate_limit.json").read_text()) | {"sessionId": SESSION})


@pytest.fixture
def h(tmp_path) -> Harness:
    return Harness(Workspace(tmp_path / "ws"))


def copilot_record(h) -> dict:
    return read_json(h.ws.session_dir(harness_id("copilot", SESSION)) / "session.json")


def test_a_turn_refused_after_retries_fails_once_and_its_end_queues_no_post_task(h):
    """Copilot fires errorOccurred for each attempt: the turn failed once, not once a retry."""
    h.apply(copilot_event("sessionStart", T0, source="new"),
            copilot_event("userPromptSubmitted", T0 + 1, prompt="go"),
            refused(T0 + 2), refused(T0 + 3), refused(T0 + 4),
            copilot_event("sessionEnd", T0 + 5, reason="error"))
    meta = copilot_record(h)["metadata"]["sidecar"]
    assert meta["completionReason"] == "error"
    assert meta["limit"]["failures"] == 1 and meta["limit"]["error"] == "rate_limit"
    [entry] = h.pending()  # resume-after-limit's first try, and no post-task
    assert entry.hook_id != "post-task" and entry.id.endswith("#1")


def test_a_retry_that_got_through_closes_the_limit_and_the_task_ends_as_usual(h):
    h.apply(copilot_event("sessionStart", T0, source="new"),
            copilot_event("userPromptSubmitted", T0 + 1, prompt="go"), refused(T0 + 2),
            copilot_event("agentStop", T0 + 3, stopReason="end_turn"),
            copilot_event("sessionEnd", T0 + 4, reason="complete"))
    assert "limit" not in copilot_record(h)["metadata"]["sidecar"]
    assert sorted(e.hook_id for e in h.pending()) == ["post-task", "resume-after-limit"]
    # The try the refusal queued is skipped when due: the limit has passed.
    facts = h.sessions.facts(harness_id("copilot", SESSION), ("copilot", SESSION))
    hook = h.hooks.snapshot(T0 + 9).hooks["resume-after-limit"]
    verdict = decide(hook, facts, T0 + 9)
    assert verdict.verdict == Verdict.SKIP and "limit has passed" in verdict.reason


def test_another_hosts_turn_end_after_a_refusal_still_closes_nothing(h):
    """opencode ends a refused turn with its idle status: that end is no sign of an answer."""
    h.apply(ev("SessionStart", T0), ev("UserPromptSubmit", T0 + 1), failed(T0 + 2),
            ev("Stop", T0 + 3), ev("SessionEnd", T0 + 4))
    assert "limit" in h.record()["metadata"]["sidecar"]
