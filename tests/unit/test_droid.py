"""Factory Droid, as its recorded payloads and session files (the real droid 0.215.0, offline)
show it: what each event means, the token figures at its end, and its settings written and
given back byte for byte."""

from __future__ import annotations

import json
import os

import orjson
import pytest

from helpers import SIDECAR, TRANSCRIPTS, fixture_payload, invoke, read_json
from sidecar.hosts import droid, registry
from sidecar.hosts.base import Spend, Tokens
from sidecar.hosts.files import settings
from sidecar.inbox.events import parse
from sidecar.vocabulary import EventKind
from support.zones import local_zone

T0 = 1_796_351_222.0
SESSION = "5d36011f-afd1-4542-ab74-4ec2727834c7"  # the recorded run: one LS tool call
TRANSCRIPT = TRANSCRIPTS / f"droid-0.215.0/{SESSION}.jsonl"


def payload(name: str) -> dict:
    return orjson.loads(fixture_payload(f"droid-0.215.0/{name}.json"))


def event(body: dict):
    wrapped = {"sidecarEnvelope": {"version": 1, "host": "droid", "ts": T0}, "payload": body}
    return parse(orjson.dumps(wrapped), "e.json", T0)


def notification(kind: str) -> dict:
    """A Notification as 0.215.0 builds it (its hook input in the package's source; exec,
    offline, never asks)."""
    return {**payload("Stop"), "hook_event_name": "Notification", "notification_type": kind,
            "message": "Factory CLI needs permission to execute 1 tool(s)"}


@pytest.mark.parametrize(("name", "kind"), [
    ("SessionStart", EventKind.SESSION_START), ("PostToolUse", EventKind.TOOL_USE),
    ("Stop", EventKind.TURN_END), ("SessionEnd", EventKind.SESSION_END),
    ("PreToolUse", None),  # traced only: its PostToolUse says the tool ran
])
def test_each_recorded_event_means_what_droid_does(name, kind):
    assert event(payload(name)).kind is kind


def test_the_session_end_names_its_reason_and_session():
    end = event(payload("SessionEnd"))
    assert end.reason == "other" and end.session_id == SESSION


@pytest.mark.parametrize("kind", ["permission_prompt", "idle_prompt", "elicitation_dialog"])
def test_every_notification_droid_sends_waits_for_the_user(kind):
    asked = event(notification(kind))
    assert asked.kind is EventKind.NEEDS_INPUT
    assert droid.HOST.is_ask(asked.input_kind)


def test_a_notification_of_a_type_droid_did_not_send_is_no_ask():
    assert not droid.HOST.is_ask("auth_success")


def test_tokens_and_spend_are_the_session_settings_usage_of_its_model():
    # The recorded run: two model calls of 10 in and 3 out each (the stub's), on a custom
    # model droid calls `custom:tool-model-0`; the transcript itself holds no figures.
    assert b"Tokens" not in TRANSCRIPT.read_bytes()
    with local_zone("UTC"):
        facts = droid.HOST.end_facts(str(TRANSCRIPT), SESSION)
    assert facts.tokens == Tokens(input=20, output=6)
    assert facts.spend == (Spend("custom:tool-model-0", "2026-12-04", Tokens(input=20, output=6)),)
    assert facts.failure is None


def test_cache_figures_are_read_apart(tmp_path):
    # As 0.215.0 recorded a chat completions answer of 100 prompt tokens (40 of them cached)
    # and 30 completion tokens (20 of them reasoning): the input already without the cached
    # part, the reasoning inside the output.
    (tmp_path / f"{SESSION}.jsonl").write_text("")
    (tmp_path / f"{SESSION}.settings.json").write_text(json.dumps({"model": "custom:r-model-1", "tokenUsage": {
        "inputTokens": 60, "outputTokens": 30, "cacheCreationTokens": 0, "cacheReadTokens": 40,
        "thinkingTokens": 0, "factoryCredits": 0}}))
    facts = droid.HOST.end_facts(str(tmp_path / f"{SESSION}.jsonl"), SESSION)
    assert facts.tokens == Tokens(input=60, output=30, cache_read=40)
    assert facts.spend == (Spend("custom:r-model-1", None, facts.tokens),)  # no dated entry: no day


@pytest.mark.parametrize("transcript", [
    f"elsewhere/{SESSION}.txt",  # not the session's own transcript: its sibling is not read
    "elsewhere/other.jsonl",
])
def test_only_the_named_sessions_own_settings_file_is_read(tmp_path, transcript):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / f"{SESSION}.settings.json").write_text(
        json.dumps({"tokenUsage": {"inputTokens": 5}}))
    assert droid.HOST.end_facts(str(tmp_path / transcript), SESSION).tokens is None
    assert droid.HOST.end_facts(str(tmp_path / f"elsewhere/{SESSION}.jsonl"), "../x").tokens is None


def test_a_session_settings_file_that_is_not_json_gives_no_figures(tmp_path):
    (tmp_path / f"{SESSION}.settings.json").write_text("{torn")
    assert droid.HOST.end_facts(str(tmp_path / f"{SESSION}.jsonl"), SESSION).tokens is None


def test_the_resume_runs_exec_on_the_session_with_the_prompt_after_the_options():
    assert registry.default_resume()["droid"] == (
        "droid", "exec", "--auto", "{droid_autonomy}", "-s", "{session_id}", "--", "{prompt}")
    assert registry.default_options()["droid_autonomy"] == "low"
    assert droid.HOST.id_misfit("ses_1") is not None and droid.HOST.id_misfit(SESSION) is None


# -- its settings ---------------------------------------------------------------------------

USER_FILE = """{
  "customModels": [
    {"model": "my-model", "baseUrl": "https://models.example/v1", "apiKey": "k",
     "provider": "generic-chat-completion-api", "maxOutputTokens": 8192}
  ],
  "hooks": {
    "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]
  },
  "enableCustomDroids": true
}
"""


def test_integrate_writes_the_users_settings_and_uninstall_gives_back_the_bytes(tmp_path, config_home):
    home = tmp_path / "home"
    path = home / ".factory" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(USER_FILE)
    os.chmod(path, 0o600)
    result = invoke("integrate", "droid", env={"HOME": str(home)})
    assert result.returncode == 0, result.stderr
    merged = settings.load_json(path)
    assert merged["customModels"] == json.loads(USER_FILE)["customModels"]
    assert merged["hooks"]["Stop"][0]["hooks"][0]["command"] == "say done"  # the user's first
    for name in droid.EVENTS:
        handler = merged["hooks"][name][-1]["hooks"][0]
        assert handler == {"type": "command", "command": f"{SIDECAR} emit --source droid"}
    assert droid.HOST.integrated(None, home)
    assert b"nothing changed" in invoke("integrate", "droid", env={"HOME": str(home)}).stdout
    removed = invoke("integrate", "droid", "--uninstall", env={"HOME": str(home)})
    assert removed.returncode == 0, removed.stderr
    assert path.read_text() == USER_FILE
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert not droid.HOST.integrated(None, home)


def test_a_settings_file_with_comments_is_integrated_and_given_back_byte_for_byte(tmp_path, config_home):
    # Droid reads its settings as JSONC (0.215.0 runs a turn on a file with `//` comments).
    home = tmp_path / "home"
    path = home / ".factory" / "settings.json"
    path.parent.mkdir(parents=True)
    commented = USER_FILE.replace('  "customModels": [', '  // my own model\n  "customModels": [')
    path.write_text(commented)
    result = invoke("integrate", "droid", env={"HOME": str(home)})
    assert result.returncode == 0, result.stderr
    assert "// my own model" in path.read_text() and droid.HOST.integrated(None, home)
    removed = invoke("integrate", "droid", "--uninstall", env={"HOME": str(home)})
    assert removed.returncode == 0, removed.stderr
    assert path.read_text() == commented and not droid.HOST.integrated(None, home)


def test_a_settings_file_that_is_not_json_is_left_as_it_is(tmp_path, config_home):
    home = tmp_path / "home"
    path = home / ".factory" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"customModels": [')
    result = invoke("integrate", "droid", env={"HOME": str(home)})
    assert result.returncode != 0 and b"not valid JSON" in result.stderr
    assert path.read_text() == '{"customModels": ['


def test_a_project_integration_calls_sidecar_from_path(workspace):
    result = invoke("integrate", "droid", "--project", cwd=workspace.root)
    assert result.returncode == 0, result.stderr
    written = read_json(workspace.root / ".factory" / "settings.json")
    commands = {h["command"] for groups in written["hooks"].values() for g in groups
                for h in g["hooks"]}
    assert commands == {"sidecar emit --source droid"}
    assert sorted(written["hooks"]) == sorted(droid.EVENTS)
