"""Pi: what its extension's events mean, what its session file says at a session's end (a
turn the API refused, the tokens), where `sidecar integrate pi` writes its extension and how
it gives the place back, and what `doctor` checks of it."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from helpers import FIXTURES, TRANSCRIPTS, fixture_payload, invoke, write_file
from sidecar.hosts import registry
from sidecar.hosts.base import Failure, IntegrateError, Spend, Tokens
from sidecar.hosts.files import plugin_file
from sidecar.hosts.pi import host as pi
from sidecar.inbox.events import parse
from sidecar.vocabulary import LIMIT_ERRORS, EventKind
from support.zones import local_zone

HOST = registry.get("pi")


def as_the_extension_sends(name: str, fixture: str, **extra: object):
    """The event the extension drops for one recorded handler call (ids from its ctx)."""
    recorded = orjson.loads(fixture_payload(f"pi-0.73.1/{fixture}.json"))
    ctx = recorded["ctx"]
    body = {"event": name, "host": "pi", "session_id": ctx["sessionId"], "cwd": ctx["cwd"],
            "transcript_path": ctx["sessionFile"], "ts": 1.0, "hostPid": 4321, **extra}
    return parse(orjson.dumps(body), "f.json", 1.0)


@pytest.mark.parametrize("name, kind", [  # each recorded as the handler of its name got it
    ("session_start", EventKind.SESSION_START), ("agent_start", EventKind.TURN_START),
    ("tool_execution_end", EventKind.TOOL_USE), ("agent_end", EventKind.TURN_END),
    ("session_shutdown", EventKind.SESSION_END),
])
def test_each_event_the_extension_sends_means_its_kind(name, kind):
    event = as_the_extension_sends(name, name)
    assert event.kind is kind and event.host == "pi"
    assert event.session_id == "01a230c6-43b6-7042-84ae-136bf573a080" or name.startswith("tool")
    assert event.transcript_path and event.transcript_path.endswith(f"{event.session_id}.jsonl")


def test_a_refused_or_stopped_prompt_ends_no_turn():
    """Pi retries a refused prompt itself, and a stopped one is the user's interrupt: neither
    may close the turn (or clear a usage limit) the way a prompt that ended well does."""
    for name in ("agent_end:error", "agent_end:aborted"):
        event = as_the_extension_sends(name, "agent_end.rate_limit", error_message="429 ...")
        assert event.kind is None
    assert registry.event_kind("pi", "agent_end") is EventKind.TURN_END


def test_the_session_file_of_a_refused_prompt_says_a_rate_limit_with_the_providers_text():
    failure = HOST.end_facts(str(TRANSCRIPTS / "pi-0.73.1.rate-limit.jsonl"), "").failure
    assert failure == Failure("rate_limit", "429 Rate limit reached for requests (stub). Limit "
                                            "resets at 1796118441. Please try again in 3600s.")
    assert failure.kind in LIMIT_ERRORS  # so resume-after-limit takes it up


def test_a_session_whose_last_prompt_ended_well_did_not_fail(tmp_path):
    assert HOST.end_facts(str(TRANSCRIPTS / "pi-0.73.1.jsonl"), "").failure is None
    # Refused, then answered on Pi's own retry: the last word counts.
    lines = (TRANSCRIPTS / "pi-0.73.1.rate-limit.jsonl").read_bytes().splitlines()
    answered = (TRANSCRIPTS / "pi-0.73.1.jsonl").read_bytes().splitlines()[4]
    path = tmp_path / "retried.jsonl"
    path.write_bytes(b"\n".join([*lines, answered]) + b"\n")
    assert HOST.end_facts(str(path), "").failure is None


@pytest.mark.parametrize("text, kind", [
    ("429 Rate limit reached for requests. Please try again in 20s.", "rate_limit"),
    ('429 {"type":"error","error":{"type":"rate_limit_error","message":"..."}}', "rate_limit"),
    ("429 You exceeded your current quota, please check your plan (insufficient_quota)",
     "quota_exceeded"),
    ("RESOURCE_EXHAUSTED: too much", "resource_exhausted"),
    ("You have reached your usage limit; it resets at 5pm", "usage_limit"),
    ("400 context length exceeded", "api_error"),
    ("", "api_error"),
])
def test_the_error_kind_is_read_from_the_providers_text(text, kind):
    assert pi.error_kind(text) == kind


def test_a_stopped_prompt_is_no_failure(tmp_path):
    entry = {"type": "message", "message": {"role": "assistant", "stopReason": "aborted",
                                            "errorMessage": "Request was aborted"}}
    path = tmp_path / "aborted.jsonl"
    path.write_bytes(orjson.dumps(entry) + b"\n")
    assert HOST.end_facts(str(path), "").failure is None


def test_tokens_are_every_assistant_messages_usage_summed():
    # Three prompts, the stub's usage 10 in / 5 out each; the refused tries used nothing.
    assert HOST.end_facts(str(TRANSCRIPTS / "pi-0.73.1.jsonl"), "").tokens == \
        Tokens(input=30, output=15)
    assert HOST.end_facts(str(TRANSCRIPTS / "pi-0.73.1.rate-limit.jsonl"), "").tokens == Tokens()


def test_cached_tokens_are_kept_apart(tmp_path):
    usage = {"input": 7, "output": 3, "cacheRead": 100, "cacheWrite": 20}
    lines = [{"type": "message", "message": {"role": "assistant", "usage": usage}},
             {"type": "message", "message": {"role": "user", "usage": usage}},  # not counted
             {"type": "message", "message": {"role": "assistant", "usage": "broken"}}]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
    assert HOST.end_facts(str(path), "").tokens == Tokens(7, 3, 100, 20)



def _answered(entry: dict, model: str, at: str, usage: dict, cost: float) -> dict:
    """A recorded assistant entry of Pi's, answered by `model` at `at` with `usage`, which Pi
    priced at `cost` dollars."""
    entry = json.loads(json.dumps(entry))
    entry["timestamp"] = at
    entry["message"].update(provider="anthropic", model=model, usage={
        **usage, "totalTokens": sum(usage.values()),
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}})
    return entry


def test_spend_is_pis_own_cost_summed_by_model_and_local_day(tmp_path):
    """Pi prices each answer itself (`usage.cost.total`): the session's spend is those
    prices summed by the model that answered and the day, on the user's own calendar."""
    recorded = [orjson.loads(line) for line in (TRANSCRIPTS / "pi-0.73.1.jsonl").read_bytes().splitlines()]
    answers = [i for i, e in enumerate(recorded) if e["type"] == "message" and e["message"]["role"] == "assistant"]
    usage = {"input": 1000, "output": 200, "cacheRead": 5000, "cacheWrite": 300}
    sonnet, gpt = "claude-sonnet-4-5", "gpt-5"
    recorded[answers[0]] = _answered(recorded[answers[0]], sonnet, "2026-12-01T22:30:00.000Z", usage, 0.0123)
    recorded[answers[1]] = _answered(recorded[answers[1]], sonnet, "2026-12-01T23:30:00.000Z", usage, 0.0456)
    recorded[answers[2]] = _answered(recorded[answers[2]], sonnet, "2026-12-02T08:00:00.000Z", usage, 0.0789)
    recorded.append(_answered(recorded[answers[2]], gpt, "2026-12-02T08:05:00.000Z",
                              {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0}, 0.0004))
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(e) for e in recorded) + b"\n")
    with local_zone("CET-1"):  # 23:30 in UTC is past midnight there
        facts = HOST.end_facts(str(path), "")
    twice = Tokens(2000, 400, 10000, 600)
    assert facts.spend == (Spend(sonnet, "2026-12-01", Tokens(1000, 200, 5000, 300), 0.0123),
                           Spend(sonnet, "2026-12-02", twice, 0.0456 + 0.0789),
                           Spend(gpt, "2026-12-02", Tokens(10, 5), 0.0004))
    assert facts.tokens == Tokens(3010, 605, 15000, 900)  # the totals, as before


def test_the_recorded_sessions_spend_is_the_stub_models_at_pis_price_of_nothing():
    with local_zone("UTC"):
        facts = HOST.end_facts(str(TRANSCRIPTS / "pi-0.73.1.jsonl"), "")
    assert facts.spend == (Spend("stub-model", "2026-12-01", Tokens(input=30, output=15), 0.0),)


def test_a_model_pi_gave_no_price_for_is_left_to_the_price_table(tmp_path):
    """An answer without `usage.cost` makes its model's day unpriced by the host (None), not
    a smaller sum."""
    priced = {"type": "message", "timestamp": "2026-12-01T10:00:00Z", "message": {
        "role": "assistant", "model": "m", "usage": {"input": 7, "output": 3, "cost": {"total": 0.5}}}}
    unpriced = {"type": "message", "timestamp": "2026-12-01T11:00:00Z", "message": {
        "role": "assistant", "model": "m", "usage": {"input": 7, "output": 3}}}
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(e) for e in (priced, unpriced)) + b"\n")
    with local_zone("UTC"):
        assert HOST.end_facts(str(path), "").spend == (Spend("m", "2026-12-01", Tokens(14, 6), None),)

# -- sidecar integrate pi ----------------------------------------------------------------


def test_the_extension_holds_the_shared_writer_and_nothing_of_this_machine(tmp_path):
    source = pi.extension_source()
    assert source.startswith(pi.MARK.encode() + b"\n")
    assert plugin_file.PLACEHOLDER not in source
    assert b"function inboxWriter(host)" in source and b'inboxWriter("pi")' in source
    assert str(Path.home()).encode() not in source and b"/tmp" not in source


def integrate_pi(workspace, *args: str):
    return invoke("integrate", "pi", *args, "--root", str(workspace.root))


def test_a_project_integration_round_trip(workspace):
    root = workspace.root
    result = integrate_pi(workspace)
    assert result.returncode == 0, result.stderr
    assert (root / ".pi" / "extensions" / "sidecar.ts").read_bytes() == pi.extension_source()
    assert HOST.integrated(root, root / "nohome")
    assert b"nothing changed" in integrate_pi(workspace).stdout
    assert integrate_pi(workspace, "--uninstall").returncode == 0
    assert not (root / ".pi").exists()  # sidecar made the folders: it takes them away again
    assert not HOST.integrated(root, root / "nohome")


def test_uninstall_leaves_the_users_own_extensions(workspace):
    theirs = write_file(workspace.root / ".pi" / "extensions" / "mine.ts",
                        "export default function (pi) {}\n")
    assert integrate_pi(workspace).returncode == 0
    assert integrate_pi(workspace, "--uninstall").returncode == 0
    assert sorted(p.name for p in theirs.parent.iterdir()) == ["mine.ts"]
    assert theirs.read_text() == "export default function (pi) {}\n"


def test_a_foreign_file_of_the_same_name_is_never_replaced_or_removed(workspace):
    theirs = write_file(workspace.root / ".pi" / "extensions" / "sidecar.ts",
                        "export default function (pi) { /* the user's own */ }\n")
    result = integrate_pi(workspace)
    assert result.returncode == 1 and b"not sidecar's plugin" in result.stderr
    assert integrate_pi(workspace, "--uninstall").returncode == 1
    assert theirs.read_text() == "export default function (pi) { /* the user's own */ }\n"
    with pytest.raises(IntegrateError):
        HOST.integrate(theirs, "sidecar", uninstall=False)


def test_a_user_integration_goes_into_pis_own_folder(tmp_path, monkeypatch):
    home = tmp_path / "home"
    scope = next(s for s in HOST.scopes if s.flag == "--user")
    monkeypatch.delenv(pi.AGENT_DIR, raising=False)
    assert HOST.place(scope, tmp_path, home) == home / ".pi" / "agent" / "extensions" / "sidecar.ts"
    monkeypatch.setenv(pi.AGENT_DIR, str(tmp_path / "agent"))
    place = HOST.place(scope, tmp_path, home)
    assert place == tmp_path / "agent" / "extensions" / "sidecar.ts"
    assert HOST.integrate(place, "sidecar", uninstall=False) is True
    assert HOST.integrated(None, home)
    assert HOST.integrate(place, "sidecar", uninstall=True) is True and not place.exists()


# -- doctor --------------------------------------------------------------------------------


def test_doctor_notes_the_retry_after_hang_until_pis_settings_bound_it(tmp_path, monkeypatch):
    monkeypatch.delenv(pi.AGENT_DIR, raising=False)
    home, root = tmp_path / "home", tmp_path / "project"
    [finding] = HOST.findings(root, home)
    assert finding.ok and finding.note and "retry-after" in finding.what
    assert '"maxRetries": 0' in finding.fix
    settings = write_file(home / ".pi" / "agent" / "settings.json", "not json")
    assert len(HOST.findings(root, home)) == 1  # a broken file bounds nothing
    settings.write_bytes(fixture_payload("pi-0.73.1/settings.json"))
    assert HOST.findings(root, home) == []
    settings.unlink()
    write_file(root / ".pi" / "settings.json", '{"retry": {"provider": {"maxRetries": 1}}}')
    assert HOST.findings(root, home) == []


def test_the_variables_models_json_reads_its_keys_from_are_needed(tmp_path):
    home = tmp_path / "home"
    models = json.loads(fixture_payload("pi-0.73.1/models.json"))
    models["providers"]["mine"] = {"apiKey": "MY_PROVIDER_KEY"}
    models["providers"]["shell"] = {"apiKey": "!pass show key"}
    path = home / ".pi" / "agent" / "models.json"

    def read(p: Path) -> bytes | None:
        return json.dumps(models).encode() if p == path else None

    assert HOST.needed_variables({}, home, read) == ("MY_PROVIDER_KEY",)
    assert HOST.needed_variables({pi.AGENT_DIR: str(tmp_path)}, home, read) == ()
    assert pi.key_names(b"[not json") == () and pi.key_names(b"[]") == ()


def test_the_resume_takes_the_whole_id_and_the_prompt_on_standard_input():
    assert HOST.resume == ("pi", "--session", "{session_id}", "-p", "<{prompt}")
    assert HOST.id_misfit("01a230c6-43b6-7042-84ae-136bf573a080") is None
    assert HOST.id_misfit("01a230c6") is not None  # a prefix pi would match loosely


def test_the_fixtures_are_neutralised():
    for path in (FIXTURES / "pi-0.73.1").iterdir():
        text = path.read_text()
        assert "/root" not in text and str(Path.home()) not in text
