"""Cline CLI 3.0.65: its recorded payloads read as events, its session manifest read for the
end, tokens and a refused turn, and its hook files written and taken out again."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import orjson
import pytest

from helpers import FIXTURES
from sidecar.daemon.hostends import read_own
from sidecar.followups.run.actions import ActionError, CannotResume, Firing, build_argv
from sidecar.hosts import registry
from sidecar.hosts.base import EndFacts, IntegrateError, Spend, Tokens
from sidecar.hosts.cline import hooks as cline_hooks
from sidecar.hosts.cline.host import EVENTS, manifest_path, messages_path
from sidecar.inbox.events import parse
from sidecar.layout import Workspace
from sidecar.sessions import endfacts
from sidecar.sessions.model import SessionRecord
from sidecar.vocabulary import LIMIT_ERRORS, EventKind
from support.zones import local_zone

CLINE = registry.get("cline")
RECORDED = FIXTURES / "cline-3.0.65"
SESSION = "1796115993153_pbgzz"  # the recorded tool run's rootSessionId


def emitted(name: str) -> bytes:
    """A recorded payload as `sidecar emit --source cline` drops it."""
    payload = (RECORDED / name).read_bytes()
    return b'{"sidecarEnvelope":{"version":1,"ts":1796115993.5,"host":"cline"},"payload":' \
        + payload + b"}"


@pytest.mark.parametrize(("name", "kind"), [
    ("TaskStart.json", EventKind.SESSION_START), ("PreToolUse.json", EventKind.TOOL_USE),
    ("PostToolUse.json", EventKind.TOOL_USE), ("TaskComplete.tool.json", EventKind.TURN_END)])
def test_a_recorded_run_is_one_session_keyed_by_its_root_session_id(name, kind):
    event = parse(emitted(name), "f.json", 1.0)
    assert (event.host, event.session_id, event.kind) == ("cline", SESSION, kind)
    assert event.cwd == "/home/user/project"
    assert event.payload == json.loads((RECORDED / name).read_bytes())  # kept as it came


def test_a_resumed_run_has_a_new_task_id_and_the_same_session():
    first = parse(emitted("TaskStart.first-run-no-hub.json"), "a.json", 1.0)
    resumed = parse(emitted("TaskStart.resume-tui.json"), "b.json", 2.0)
    assert first.payload["taskId"] != resumed.payload["taskId"]
    assert first.session_id == resumed.session_id == "1796115858739_fq5jp"


def test_tool_hooks_name_their_tool():
    assert parse(emitted("PostToolUse.json"), "f.json", 1.0).tool_name == "run_commands"


def test_a_refused_turn_is_a_rate_limit_with_the_providers_text():
    event = parse(emitted("TaskError.rate_limit.json"), "f.json", 1.0)
    assert event.kind is EventKind.TURN_FAILED
    assert event.error_kind == "rate_limit" and event.error_kind in LIMIT_ERRORS
    assert event.error_message.startswith("Rate limit reached for requests (stub). Limit resets")


def test_another_error_is_no_limit():
    payload = json.loads((RECORDED / "TaskError.rate_limit.json").read_bytes())
    payload["error"]["message"] = "socket hang up"
    event = parse(orjson.dumps({**payload, "host": "cline"}), "f.json", 1.0)
    assert event.kind is EventKind.TURN_FAILED and event.error_kind not in LIMIT_ERRORS


def test_shutdown_ends_the_session_and_cancel_is_traced():
    assert parse(emitted("SessionShutdown.sigterm.json"), "f.json", 1.0).kind \
        is EventKind.SESSION_END
    payload = json.loads((RECORDED / "TaskStart.json").read_bytes())
    cancel = parse(orjson.dumps({**payload, "hookName": "agent_abort", "host": "cline"}), "c", 1)
    assert cancel.name == "TaskCancel" and cancel.kind is None


def test_an_event_given_by_hand_for_cline_is_read_as_any_hosts():
    event = parse(orjson.dumps({"event": "session-end", "session_id": "1_a", "host": "cline",
                                "cwd": "/w"}), "f.json", 1.0)
    assert (event.kind, event.session_id, event.cwd) == (EventKind.SESSION_END, "1_a", "/w")


def test_a_cline_payload_without_its_session_is_refused():
    payload = json.loads((RECORDED / "TaskStart.json").read_bytes())
    del payload["sessionContext"]
    with pytest.raises(ValueError, match="no session id"):
        parse(orjson.dumps({**payload, "host": "cline"}), "f.json", 1.0)


# -- the manifest ------------------------------------------------------------------------------


def place_manifest(home: Path, session: str, fixture: str, messages: str = "", **changes) -> Path:
    """The session's manifest as Cline writes it, and its conversation if `messages` names one."""
    path = manifest_path(home, session)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**json.loads((RECORDED / fixture).read_bytes()),
                                "session_id": session, **changes}))
    if messages:
        messages_path(home, session).write_bytes((RECORDED / messages).read_bytes())
    return path


def test_a_completed_manifest_is_the_sessions_end(tmp_path):
    place_manifest(tmp_path, "1_a", "session-manifest.completed.json")
    end = CLINE.recorded_end("1_a", tmp_path, read_own)
    assert end is not None and end.reason == "completed"
    assert end.transcript == str(messages_path(tmp_path, "1_a"))
    assert end.at is not None and end.at > 1.7e9  # its ended_at


def test_a_sigterm_cancelled_and_a_refused_run_failed(tmp_path):
    place_manifest(tmp_path, "1_b", "session-manifest.sigterm.json")
    place_manifest(tmp_path, "1_c", "session-manifest.rate_limit.json")
    assert CLINE.recorded_end("1_b", tmp_path, read_own).reason == "cancelled"
    assert CLINE.recorded_end("1_c", tmp_path, read_own).reason == "failed"


@pytest.mark.parametrize("spoil", ["running", "missing", "garbage", "symlink", "huge", "fifo",
                                   "list", "folder"])
def test_a_manifest_that_says_nothing_ends_nothing(tmp_path, spoil):
    path = place_manifest(tmp_path, "1_a", "session-manifest.completed.json")
    if spoil == "running":
        place_manifest(tmp_path, "1_a", "session-manifest.completed.json", status="running")
    elif spoil == "missing":
        path.unlink()
    elif spoil == "garbage":
        path.write_bytes(b'{"status": "completed"')
    elif spoil == "symlink":
        real = tmp_path / "elsewhere.json"
        path.rename(real)
        path.symlink_to(real)
    elif spoil == "huge":
        path.write_bytes(b'{"status": "completed", "pad": "' + b"x" * (2 << 20) + b'"}')
    elif spoil == "fifo":
        path.unlink()
        os.mkfifo(path)
    elif spoil == "list":
        path.write_text('["completed"]')
    else:
        path.unlink()
        path.mkdir()
    assert CLINE.recorded_end("1_a", tmp_path, read_own) is None


def test_no_session_id_reaches_out_of_the_sessions_folder(tmp_path):
    asked = []
    for session in ("..", "."):
        assert CLINE.recorded_end(session, tmp_path, lambda p: asked.append(p)) is None
    assert asked == []


def test_tokens_come_from_the_manifest_and_a_refusal_from_the_conversation(tmp_path):
    place_manifest(tmp_path, "1_a", "session-manifest.completed.json")
    facts = CLINE.end_facts(str(messages_path(tmp_path, "1_a")), "1_a")
    assert facts.tokens == Tokens(input=40, output=20) and facts.failure is None
    place_manifest(tmp_path, "1_c", "session-manifest.rate_limit.json",
                   "session-messages.rate_limit.json")
    facts = CLINE.end_facts(str(messages_path(tmp_path, "1_c")), "1_c")
    assert facts.failure is not None and facts.failure.kind == "rate_limit"
    assert facts.failure.message.startswith("Rate limit reached for requests (stub)")


def test_a_recorded_end_carries_what_its_own_reads_found_read_only_through_its_reader(
        tmp_path):
    # A root daemon reads the owner's files through `read` (as the owner): the tokens and the
    # refusal travel with the end, so nothing is read again with the daemon's own rights.
    place_manifest(tmp_path, "1_c", "session-manifest.rate_limit.json",
                   "session-messages.rate_limit.json")
    asked = []

    def read(path):
        asked.append(path)
        return read_own(path)

    end = CLINE.recorded_end("1_c", tmp_path, read)
    assert end is not None and end.facts.failure is not None
    assert end.facts.failure.kind == "rate_limit"
    assert end.facts == CLINE.end_facts(str(messages_path(tmp_path, "1_c")), "1_c")
    assert asked == [manifest_path(tmp_path, "1_c"), messages_path(tmp_path, "1_c")]
    place_manifest(tmp_path, "1_a", "session-manifest.completed.json")
    with local_zone("UTC"):
        assert CLINE.recorded_end("1_a", tmp_path, read).facts == EndFacts(
            None, Tokens(input=40, output=20), (Spend("stub-model", "2026-12-01", Tokens(40, 20), 0.0),))


def test_spend_is_the_manifests_figures_at_clines_own_cost_on_the_day_it_ended(tmp_path):
    """Cline prices the session itself (`metadata.usage.totalCost`): its spend is that, for
    the model the manifest names, on the user's own calendar; the recorded end carries it."""
    recorded = json.loads((RECORDED / "session-manifest.completed.json").read_bytes())
    usage = {"inputTokens": 1200, "outputTokens": 300, "cacheReadTokens": 9000,
             "cacheWriteTokens": 700, "totalCost": 0.04215}
    recorded["metadata"]["usage"] = usage
    recorded["metadata"]["totalCost"] = 0.04215
    recorded.update(session_id="1_a", model="claude-sonnet-4-5", started_at="2026-12-01T22:50:00.000Z",
                    ended_at="2026-12-01T23:10:00.000Z")  # past midnight in CET
    manifest = place_manifest(tmp_path, "1_a", "session-manifest.completed.json")
    manifest.write_text(json.dumps(recorded))
    with local_zone("CET-1"):
        facts = CLINE.end_facts(str(messages_path(tmp_path, "1_a")), "1_a")
        end = CLINE.recorded_end("1_a", tmp_path, read_own)
    assert facts.spend == (Spend("claude-sonnet-4-5", "2026-12-02", Tokens(1200, 300, 9000, 700), 0.04215),)
    assert facts.tokens == Tokens(1200, 300, 9000, 700)
    assert end is not None and end.facts == facts
    assert EndFacts.from_json(end.facts.to_json()) == facts  # as a root daemon's read sends it
    del recorded["ended_at"], usage["totalCost"]  # running: the day it began; not priced by Cline
    manifest.write_text(json.dumps({**recorded, "status": "running"}))
    with local_zone("UTC"):
        assert CLINE.end_facts(str(messages_path(tmp_path, "1_a")), "1_a").spend == (
            Spend("claude-sonnet-4-5", "2026-12-01", Tokens(1200, 300, 9000, 700), None),)


def test_without_a_named_conversation_the_users_own_manifest_is_read(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    place_manifest(tmp_path, "1_a", "session-manifest.completed.json")
    assert CLINE.end_facts(None, "1_a").tokens == Tokens(input=40, output=20)
    assert CLINE.end_facts(None, "1_zz").tokens is None  # no manifest: no figures


# -- its resume --------------------------------------------------------------------------------


def firing(tmp_path, host="cline", session_id=SESSION):
    return Firing(hook_id="post-task", host=host, session_id=session_id,
                  harness_session_id="h", prompt="go on", prompt_file=None, cwd=tmp_path)


def test_a_resume_of_cline_cannot_run_and_says_why(tmp_path):
    with pytest.raises(CannotResume, match="Cline 3.0.65 cannot resume a session without a "
                                           "terminal"):
        build_argv("resume", firing(tmp_path), {}, Workspace(tmp_path))


def test_a_users_own_resume_command_for_cline_is_honoured(tmp_path):
    command = build_argv("resume", firing(tmp_path), {"cline": ("my-cline", "{session_id}")},
                         Workspace(tmp_path))
    assert command.argv == ["my-cline", SESSION]


def test_a_host_that_says_nothing_of_its_resume_still_fails_without_one(tmp_path):
    with pytest.raises(ActionError, match="set \\[resume\\] in config.toml") as raised:
        build_argv("resume", firing(tmp_path, "hermes", "s"), {}, Workspace(tmp_path))
    assert not isinstance(raised.value, CannotResume)


# -- its hook files --------------------------------------------------------------------------


def test_integrate_writes_an_executable_script_per_event_and_takes_them_out(tmp_path):
    folder = tmp_path / "hooks"
    assert cline_hooks.integrate(folder, EVENTS, "/opt/my sidecar/bin/sidecar", False)
    for name in EVENTS:
        path = folder / name
        assert path.stat().st_mode & stat.S_IXUSR
        text = path.read_text()
        assert text.startswith("#!/bin/sh\n")  # run directly: it needs its shebang
        assert "exec '/opt/my sidecar/bin/sidecar' emit --source cline\n" in text
    assert not cline_hooks.integrate(folder, EVENTS, "/opt/my sidecar/bin/sidecar", False)
    assert CLINE.integrated(None, tmp_path / "home") is False
    assert cline_hooks.integrated(folder, EVENTS)
    assert cline_hooks.integrate(folder, EVENTS, "sidecar", True)
    assert list(folder.iterdir()) == []
    assert not cline_hooks.integrate(folder, EVENTS, "sidecar", True)


def test_a_users_own_file_of_that_name_is_never_replaced_nor_removed(tmp_path):
    folder = tmp_path / "hooks"
    folder.mkdir()
    theirs = folder / "TaskComplete"
    theirs.write_text("#!/bin/sh\nnotify-send done\n")
    with pytest.raises(IntegrateError, match="TaskComplete exists and is not sidecar's"):
        cline_hooks.integrate(folder, EVENTS, "sidecar", False)
    assert sorted(p.name for p in folder.iterdir()) == ["TaskComplete"]  # nothing written
    theirs.unlink()
    theirs.symlink_to(tmp_path / "mine.sh")  # a link is never sidecar's either
    with pytest.raises(IntegrateError):
        cline_hooks.integrate(folder, EVENTS, "sidecar", False)
    theirs.unlink()
    (folder / "TaskStart.sh").write_text("#!/bin/sh\n")  # another name: Cline runs both
    cline_hooks.integrate(folder, EVENTS, "sidecar", False)
    theirs.write_text("mine\n")  # replaced by the user after the integration
    cline_hooks.integrate(folder, EVENTS, "sidecar", True)
    assert sorted(p.name for p in folder.iterdir()) == ["TaskComplete", "TaskStart.sh"]
    assert theirs.read_text() == "mine\n"


def test_the_project_scope_writes_into_the_workspace(tmp_path):
    user, project = CLINE.scopes
    assert CLINE.place(user, tmp_path / "p", tmp_path / "h") == tmp_path / "h" / ".cline" / "hooks"
    assert CLINE.place(project, tmp_path / "p", tmp_path / "h") == \
        tmp_path / "p" / ".cline" / "hooks"
    assert project.on_path and not user.in_project


def test_a_session_end_takes_the_facts_found_with_a_recorded_end_and_reads_nothing(tmp_path):
    # What the daemon read as the owner wins over the transcript the end names (which, read
    # again, would be read with the daemon's rights).
    place_manifest(tmp_path, "1_a", "session-manifest.completed.json")  # 40 in, 20 out
    facts = EndFacts(None, Tokens(input=1, output=2))
    event = parse(orjson.dumps({"event": "session-end", "session_id": "1_a", "host": "cline",
                                "transcript_path": str(messages_path(tmp_path, "1_a")),
                                "recordedFacts": facts.to_json()}), "f.json", 1.0)
    record = SessionRecord.from_json({"id": "h", "status": "active"})
    ws = Workspace(tmp_path)  # this user's own: read with its rights
    assert endfacts.read(record, event, ws) == facts
    named = parse(orjson.dumps({"event": "session-end", "session_id": "1_a", "host": "cline",
                                "transcript_path": str(messages_path(tmp_path, "1_a"))}),
                  "g.json", 1.0)
    assert endfacts.read(record, named, ws).tokens == Tokens(input=40, output=20)
