"""What a follow-up does with a session the user stopped, resumed, or never could have had.

A session whose last turn began and never ended (Ctrl-C, a kill, the host gone mid-turn) is
not resumed; "once per session" is said, not silent; a command runs when it is due; an id the
host could never have issued is not spent on a real resume.
"""

from __future__ import annotations

import sys
import tempfile

import orjson
import pytest
from freezegun import freeze_time
from test_followups import SID, T0, Harness, ev

from helpers import read_json, run_cli
from sidecar.base.timeutil import iso
from sidecar.followups.queue import TURN_INTERRUPTED
from sidecar.hosts.base import EndFacts, Failure
from sidecar.hosts.claude_code import host as claude_code
from sidecar.hosts.registry import id_misfit as misfit
from sidecar.sessions.batch import open_batch


def hooked(tmp_path, **fields) -> Harness:
    """A harness whose one hook, `rec`, is a command with these fields."""
    harness = Harness(tmp_path)
    harness.use_command_hook(**fields)
    return harness


@pytest.fixture
def h(tmp_path) -> Harness:
    return hooked(tmp_path)


def fire_at(h: Harness, at: float) -> None:
    """Fire the first entry due, the clock held at `at`."""
    with freeze_time(iso(at)):
        h.fire_due()


def history(h, hook_id="rec"):
    return [(f.session_id, f.status) for f in h.hook(hook_id).history]


# -- never resume what the user stopped ------------------------------------------------------


def test_a_session_stopped_mid_turn_queues_nothing_and_says_why(h):
    # Claude Code's Ctrl-C: the prompt was submitted, no Stop came, SessionEnd says `other`.
    h.apply(ev("SessionStart"), ev("UserPromptSubmit", ts=T0 + 1),
            ev("SessionEnd", ts=T0 + 2, reason="other"))
    assert h.pending() == []
    assert history(h) == [("s1", str(TURN_INTERRUPTED))]
    assert h.hook().last_status == "skipped: the last turn was interrupted"
    assert h.hook().last_fired_at is None  # a note, not a firing


@pytest.mark.parametrize("fields,events", [
    ({}, [ev("SessionStart"), ev("UserPromptSubmit", ts=T0 + 1), ev("Stop", ts=T0 + 2),
          ev("SessionEnd", ts=T0 + 3, reason="other")]),
    ({}, [ev("SessionStart"), ev("UserPromptSubmit", ts=T0 + 1),
          ev("StopFailure", ts=T0 + 2, error="server_error"), ev("SessionEnd", ts=T0 + 3)]),
    ({"alsoInterrupted": True},
     [ev("SessionStart"), ev("UserPromptSubmit", ts=T0 + 1), ev("SessionEnd", ts=T0 + 2)]),
], ids=["ended-between-turns", "last-turn-failed-is-not-interrupted", "hook-opts-in-to-interrupted"])
def test_a_session_not_stopped_mid_turn_or_a_hook_that_opts_in_is_followed_up(
        tmp_path, fields, events):
    h = hooked(tmp_path, **fields)
    h.apply(*events)
    assert [e.session_id for e in h.pending()] == ["s1"]


def test_a_last_turn_failed_by_the_transcript_alone_is_not_an_interrupted_one(h, monkeypatch):
    """Codex tells a refused turn only in its rollout file: the end learns it from there."""
    told = EndFacts(Failure("server_error", "the API failed"))  # as the transcript tells it
    monkeypatch.setattr(claude_code.ClaudeCode, "end_facts", lambda self, path, sid: told)
    h.apply(ev("SessionStart"), ev("UserPromptSubmit", ts=T0 + 1), ev("SessionEnd", ts=T0 + 3))
    assert [e.session_id for e in h.pending()] == ["s1"]


def test_an_interrupted_session_the_user_finishes_later_is_followed_up_then(h):
    h.apply(ev("SessionStart"), ev("UserPromptSubmit", ts=T0 + 1), ev("SessionEnd", ts=T0 + 2))
    assert h.pending() == []
    # The user resumes it themselves and lets the turn finish.
    h.apply(ev("SessionStart", ts=T0 + 30, source="resume"), ev("UserPromptSubmit", ts=T0 + 31),
            ev("Stop", ts=T0 + 32), ev("SessionEnd", ts=T0 + 33))
    assert [e.session_id for e in h.pending()] == ["s1"]


def test_a_replayed_interrupted_end_says_it_once(h):
    batch = [ev("SessionStart"), ev("UserPromptSubmit", ts=T0 + 1), ev("SessionEnd", ts=T0 + 2)]
    h.apply(*batch)
    with open_batch(h.sessions, replay=True) as again:
        h.queue.add(again.plan(batch), T0)  # a crash replay plans nothing new
    assert history(h) == [("s1", str(TURN_INTERRUPTED))]


def test_hooks_add_and_update_set_reasons_and_the_interrupted_choice(workspace):
    result = run_cli("hooks", "add", "notify", "--reasons", "exit, host-exited",
                     "--also-interrupted", "--no-prompt", "--", "true", cwd=workspace.root)
    assert result.returncode == 0, result.stderr
    hook = read_json(workspace.hooks_file)["hooks"]["notify"]
    assert hook["reasons"] == ["exit", "host-exited"] and hook["alsoInterrupted"] is True
    result = run_cli("hooks", "update", "notify", "--reasons", "default", "--not-interrupted",
                     "--again-after-user-turn", cwd=workspace.root)
    assert result.returncode == 0, result.stderr
    hook = read_json(workspace.hooks_file)["hooks"]["notify"]
    assert "reasons" not in hook and "alsoInterrupted" not in hook
    assert hook["againAfterUserTurn"] is True
    refused = run_cli("hooks", "update", "notify", "--reasons", " , ", cwd=workspace.root)
    assert refused.returncode == 1 and b"at least one end reason" in refused.stderr
    assert "reasons" not in read_json(workspace.hooks_file)["hooks"]["notify"]


# -- once per session, said -----------------------------------------------------------------


def test_a_conversation_the_user_resumes_after_the_hook_ran_is_told_once_per_session(h):
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    fire_at(h, T0 + 20)
    ran_at = h.hook().history[-1].at
    # The user resumes the conversation themselves: a turn of theirs, then the end.
    h.apply(ev("SessionStart", ts=T0 + 60, source="resume"), ev("UserPromptSubmit", ts=T0 + 61),
            ev("Stop", ts=T0 + 62), ev("SessionEnd", ts=T0 + 63))
    assert h.pending() == [] and h.firings() == ["s1"]
    said = f"skipped: rec already ran for this conversation at {ran_at} (once per session)"
    assert history(h) == [("s1", "ok"), ("s1", said)]
    h.apply(ev("SessionStart", ts=T0 + 90, source="resume"), ev("SessionEnd", ts=T0 + 91))
    assert history(h) == [("s1", "ok"), ("s1", said)]  # said once, not at every end


def test_a_hook_may_run_again_after_the_users_own_next_turn(tmp_path):
    h = hooked(tmp_path, againAfterUserTurn=True)
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    fire_at(h, T0 + 20)
    # The follow-up's own run (its events carry the hook's id) never counts as the user's.
    h.apply(ev("SessionStart", ts=T0 + 30, source="resume", sidecarHookId="rec"),
            ev("UserPromptSubmit", ts=T0 + 31, sidecarHookId="rec"),
            ev("Stop", ts=T0 + 32, sidecarHookId="rec"), ev("SessionEnd", ts=T0 + 33))
    assert h.pending() == []
    # An end with no turn of the user's since: still once.
    h.apply(ev("SessionStart", ts=T0 + 40, source="resume"), ev("SessionEnd", ts=T0 + 41))
    assert h.pending() == []
    # The user's own turn ends: the hook runs again for the conversation.
    h.apply(ev("SessionStart", ts=T0 + 60, source="resume"), ev("UserPromptSubmit", ts=T0 + 61),
            ev("Stop", ts=T0 + 62), ev("SessionEnd", ts=T0 + 63))
    fire_at(h, T0 + 90)
    assert h.firings() == ["s1", "s1"]


def test_a_hook_that_ran_again_needs_another_turn_of_the_users_to_run_once_more(tmp_path):
    """Each batch is applied when it comes, as a daemon does: the second queuing is the one a
    later turn of the user's must follow."""
    h = hooked(tmp_path, againAfterUserTurn=True)
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1), at=T0 + 2)
    fire_at(h, T0 + 20)
    h.apply(ev("SessionStart", ts=T0 + 60, source="resume"), ev("UserPromptSubmit", ts=T0 + 61),
            ev("Stop", ts=T0 + 62), ev("SessionEnd", ts=T0 + 63), at=T0 + 64)
    fire_at(h, T0 + 90)
    assert h.firings() == ["s1", "s1"]
    # The user opens the conversation and leaves it without a turn: not a third time.
    h.apply(ev("SessionStart", ts=T0 + 120, source="resume"), ev("SessionEnd", ts=T0 + 121),
            at=T0 + 122)
    assert h.pending() == []


def test_a_turn_end_hook_that_runs_again_fires_after_each_of_the_users_turns(tmp_path):
    h = hooked(tmp_path, event="turn-end", delaySeconds=0, againAfterUserTurn=True)
    for turn in range(3):
        at = T0 + 10 * turn
        h.apply(ev("UserPromptSubmit", ts=at + 1), ev("Stop", ts=at + 2))
        fire_at(h, at + 3)
    assert h.firings() == ["s1", "s1", "s1"]


# -- a command runs when it is due ----------------------------------------------------------


def test_a_command_runs_when_due_though_the_session_is_live_and_its_transcript_fresh(h, tmp_path):
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("{}\n")  # written just now
    h.apply(ev("SessionStart", transcript_path=str(transcript)), ev("SessionEnd", ts=T0 + 1))
    h.apply(ev("SessionStart", ts=T0 + 5, source="resume"))  # live again
    h.fire_due()
    assert h.firings() == ["s1"] and h.hook().last_status == "ok"


def test_a_turn_end_command_fires_at_once_while_the_session_goes_on(tmp_path):
    h = hooked(tmp_path, event="turn-end", delaySeconds=0)
    h.apply(ev("SessionStart"), ev("UserPromptSubmit", ts=T0 + 1), ev("Stop", ts=T0 + 2),
            ev("UserPromptSubmit", ts=T0 + 3))  # the next turn has begun already
    h.fire_due()
    assert h.firings() == ["s1"] and h.hook().last_status == "ok"


# -- ids a host could never have --------------------------------------------------------------


@pytest.mark.parametrize("action,fired,status", [
    ("resume", [], "skipped: session id 'bench-1' cannot be claude-code's (its ids are a UUID); "
                   "not resumed"),
    ("command", ["bench-1"], "ok"),
], ids=["a-resume-is-skipped-not-run", "a-command-runs-whatever-the-id"])
def test_an_id_the_host_never_issues_stops_a_resume_not_a_command(tmp_path, action, fired, status):
    h = Harness(tmp_path)
    h.use_resume_hook() if action == "resume" else h.use_command_hook()
    h.apply(ev("SessionStart", session="bench-1"), ev("SessionEnd", session="bench-1", ts=T0 + 1))
    fire_at(h, T0 + 20)
    assert h.firings() == fired
    assert h.hook().last_status == status


@pytest.mark.parametrize("host,good,bad", [
    ("claude-code", SID, "s1"),
    ("codex", "01a22640-33e9-7193-bfc7-e43fd6ff322c", "thread-1"),
    ("gemini", "c6fb0697-18dd-4dfd-b1a8-7b634cbd8469", "not a uuid"),
    ("opencode", "ses_dd4eb69eeffeJGgJGOX3UnY9cm", "ses_short"),
])
def test_each_host_knows_its_id_shape(host, good, bad):
    assert misfit(host, good) is None
    assert misfit(host, bad) is not None and host in misfit(host, bad)
    assert misfit("some-other-host", bad) is None  # an id shape nobody knows holds nothing back


# -- placeholders, once ---------------------------------------------------------------------


def test_placeholders_are_filled_once_over_the_template_never_inside_the_values(tmp_path):
    h = hooked(tmp_path, promptFile="hooks/p.md")
    out = tmp_path / "argv.json"
    (h.ws.prompts / "p.md").write_text("Keep {workspace}, {host} and {session_id} as written.\n")
    h.set_action([sys.executable, "-c", "import json,sys; open(sys.argv[1],'w').write("
                  "json.dumps(sys.argv[2:]))", str(out), "{prompt}", "{host}:{session_id}"])
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    fire_at(h, T0 + 20)
    assert orjson.loads(out.read_bytes()) == [
        "Keep {workspace}, {host} and {session_id} as written.", "claude-code:s1"]


def test_a_prompt_given_on_standard_input_arrives_exactly(tmp_path):
    """`<{prompt}` in a resume command: how opencode takes a prompt without re-quoting it."""
    h = Harness(tmp_path)
    out = tmp_path / "stdin.txt"
    prompt = 'Say "done", then  stop.\n\nA second paragraph.'
    (h.ws.prompts / "p.md").write_text(prompt + "\n")
    reader = (sys.executable, "-c", "import sys; open(sys.argv[1],'w').write(sys.stdin.read())",
              str(out), "<{prompt}")
    h.use_resume_hook(promptFile="hooks/p.md")
    h.config = type(h.config)(resume={"claude-code": reader})
    h.apply(ev("SessionStart", session=SID), ev("SessionEnd", session=SID, ts=T0 + 1))
    fire_at(h, T0 + 20)
    assert h.hook().last_status == "ok"
    assert out.read_text() == prompt


def test_a_prompt_that_cannot_be_put_on_standard_input_is_an_error_status(tmp_path, monkeypatch):
    h = Harness(tmp_path)
    (h.ws.prompts / "p.md").write_text("hello\n")
    h.use_resume_hook(promptFile="hooks/p.md")
    h.config = type(h.config)(resume={"claude-code": (sys.executable, "-c", "pass", "<{prompt}")})
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-folder"))  # no room for it
    h.apply(ev("SessionStart", session=SID), ev("SessionEnd", session=SID, ts=T0 + 1))
    fire_at(h, T0 + 20)
    assert h.hook().last_status.startswith(f"error: cannot give {sys.executable!r} its standard "
                                           "input: No such file or directory")
    assert h.pending() == []
