"""Claude Code's own usage-limit auto-resume, arbitrated: what its notices say becomes a fact
of the session (not an ask, but `_stale`), shown in its state, and resume-after-limit stands
down while Claude Code resumes the open session itself, and takes over when it will not.
The payloads are the real 2.1.332's (tests/e2e/claude_code/fixtures/claude-code-2.1.332/)."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import orjson
import pytest

from sidecar.base.ids import harness_id
from sidecar.base.timeutil import parse_ts
from sidecar.config import ConfigError, load_config
from sidecar.followups.decide import decide
from sidecar.followups.resets import parse_reset
from sidecar.followups.seeds import LIMIT_HOOK
from sidecar.layout import Workspace
from sidecar.views.activity import of as read
from sidecar.vocabulary import EventKind, Verdict
from support.limits import S1, T0, Harness, ev, failed

RECORDED = Path(__file__).parents[1] / "e2e" / "claude_code" / "fixtures" / "claude-code-2.1.332"


def real(name: str, ts: float, hook_id: str | None = None):
    payload = json.loads((RECORDED / name).read_text())
    return ev(payload.pop("hook_event_name"), ts, hook_id=hook_id,
              **{k: v for k, v in payload.items() if k != "session_id"})


@pytest.fixture
def h(tmp_path) -> Harness:
    return Harness(Workspace(tmp_path / "ws"))


def verdict(h: Harness, at: float, host_resume: bool = True):
    facts = h.sessions.facts(harness_id("claude-code", S1), ("claude-code", S1))
    return decide(h.hooks.snapshot(at).hooks[LIMIT_HOOK], facts, at, host_resume)


def said(h: Harness) -> dict:
    return h.record()["metadata"]["sidecar"].get("hostResume")


def trace(h: Harness) -> list[dict]:
    path = h.ws.session_dir(h.record()["id"]) / "trace.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_a_limit_naming_its_reset_in_an_open_session_is_left_to_claude_code(h):
    h.apply(ev("SessionStart", T0), ev("UserPromptSubmit", T0 + 1), real("StopFailure.usage_limit.json", T0 + 2))
    reset = parse_reset("resets 2:27am (UTC)", T0 + 2)
    assert said(h)["state"] == "expected" and parse_ts(said(h)["at"]) == reset
    words = f"Claude Code resumes this session itself at {datetime.fromtimestamp(reset):%H:%M}"
    decision = verdict(h, reset + 60)
    assert (decision.verdict, decision.reason) == (Verdict.POSTPONE, f"standing down: {words}")
    assert read(h.record()).why == words  # what status and top say of it
    # The user quit during the wait: Claude Code cancels its own, sidecar takes over.
    h.apply(ev("SessionEnd", T0 + 3, reason="prompt_input_exit"))
    assert verdict(h, reset + 60).verdict == Verdict.FIRE


def test_its_fired_notice_is_a_fact_not_an_ask_and_its_resumed_turn_ends_the_episode(h):
    h.apply(ev("SessionStart", T0), real("StopFailure.usage_limit.json", T0 + 2),
            real("Notification.quota_auto_resume_fired.json", T0 + 100))
    meta = h.record()["metadata"]["sidecar"]
    assert "needsInput" not in meta and meta["hostResume"]["state"] == "fired"
    assert read(h.record()).why == \
        f"Claude Code resumed this session itself at {datetime.fromtimestamp(T0 + 100):%H:%M}"
    assert "quota_auto_resume_fired: Usage limit reset — Claude is continuing your task" in \
        [t["message"] for t in trace(h)]
    decision = verdict(h, T0 + 101)  # its resume is the episode's one: sidecar's try is dropped
    assert decision.verdict == Verdict.SKIP and decision.reason.startswith("Claude Code resumed")
    h.apply(real("UserPromptSubmit.auto_resume.json", T0 + 101), real("Stop.after_auto_resume.json", T0 + 102))
    assert "hostResume" not in h.record()["metadata"]["sidecar"]
    h.apply(ev("SessionEnd", T0 + 200))
    assert verdict(h, T0 + 300).verdict == Verdict.SKIP  # one resume in the episode: its own


def test_a_disabled_notice_takes_the_resume_back_and_a_stale_one_asks(h):
    h.apply(ev("SessionStart", T0), real("StopFailure.usage_limit.json", T0 + 2),
            real("Notification.quota_auto_resume_disabled.json", T0 + 3))
    assert said(h)["state"] == "disabled"
    assert read(h.record()).why.startswith("Claude Code will not resume this session itself")
    decision = verdict(h, T0 + 90000)
    assert (decision.verdict, decision.reason) == (Verdict.POSTPONE, "session is live again")
    h.apply(ev("Notification", T0 + 4, notification_type="quota_auto_resume_stale",  # its words, read
               message="Usage limit reset — press enter to continue"))  # from the package
    assert h.record()["metadata"]["sidecar"]["needsInput"]["kind"] == "quota_auto_resume_stale"


def test_a_reset_beyond_24_hours_or_none_at_all_is_not_left_to_claude_code(h):
    far = datetime.fromtimestamp(T0 + 30 * 3600).astimezone().isoformat()
    h.apply(ev("SessionStart", T0), failed(T0 + 1, f"You've hit your weekly limit · resets at {far}"))
    assert said(h)["state"] == "beyond"
    assert verdict(h, T0 + 31 * 3600).reason == "session is live again"
    h.apply(failed(T0 + 2))  # an API key's plain 429: Claude Code has no reset to wait for
    assert said(h) is None


def test_the_arbitration_is_a_setting(h, tmp_path):
    h.apply(ev("SessionStart", T0), real("StopFailure.usage_limit.json", T0 + 2))
    assert verdict(h, T0 + 3, host_resume=False).reason == "session is live again"
    (tmp_path / "config.toml").write_text("hostResume = false\n")
    assert load_config(tmp_path / "config.toml").host_resume is False
    assert load_config(tmp_path / "missing.toml").host_resume is True
    (tmp_path / "config.toml").write_text('hostResume = "no"\n')
    with pytest.raises(ConfigError, match="hostResume must be true or false"):
        load_config(tmp_path / "config.toml")


def test_its_own_resume_switched_off_in_the_users_settings_is_not_waited_for(h, tmp_path, monkeypatch):
    """Claude Code 2.1.332 with `autoContinueAtUsageLimit: false` sends no notice at all (it
    opens its dialog instead): sidecar reads the user's switch, and does not say, nor stand
    down for, a resume that will not come."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    settings = home / ".claude" / "settings.json"
    settings.write_text('{"autoContinueAtUsageLimit": false, "theme": "dark"}')
    monkeypatch.setenv("HOME", str(home))
    h.apply(ev("SessionStart", T0), real("StopFailure.usage_limit.json", T0 + 2))
    reset = parse_reset("resets 2:27am (UTC)", T0 + 2)
    assert said(h)["state"] == "off"
    assert read(h.record()).why == ("Claude Code will not resume this session itself (autoContinueAtUsage"
                                    "Limit is off in ~/.claude/settings.json); sidecar's resume-after-limit may")
    assert verdict(h, reset + 60).reason == "session is live again"  # open: not raced, not stood down for
    h.apply(ev("SessionEnd", T0 + 3, reason="prompt_input_exit"))
    assert verdict(h, reset + 60).verdict == Verdict.FIRE
    settings.write_text('{"autoContinueAtUsageLimit": true}')  # on again: the next limit is its own
    h.apply(ev("SessionStart", T0 + 10), real("StopFailure.usage_limit.json", T0 + 12))
    assert said(h)["state"] == "expected"


def test_with_the_arbitration_off_nothing_of_the_hosts_own_resume_is_kept_or_said(tmp_path):
    h = Harness(Workspace(tmp_path / "ws"), host_resume=False)  # config.toml's hostResume = false
    h.apply(ev("SessionStart", T0), real("StopFailure.usage_limit.json", T0 + 2),
            real("Notification.quota_auto_resume_disabled.json", T0 + 3))
    assert said(h) is None
    assert read(h.record()).why.startswith("a turn hit a usage limit")
    assert "quota_auto_resume_disabled" not in [t["message"].split(":")[0] for t in trace(h)]
    assert verdict(h, T0 + 90000).reason == "session is live again"


def test_once_claude_code_resumed_the_session_itself_sidecar_does_not_resume_it_again(h):
    # Its own resume fired and its resumed turn began; the user quits during that turn: the
    # limit episode had its one resume, so sidecar's try is skipped, not fired.
    h.apply(ev("SessionStart", T0), ev("UserPromptSubmit", T0 + 1), real("StopFailure.usage_limit.json", T0 + 2),
            real("Notification.quota_auto_resume_fired.json", T0 + 100),
            real("UserPromptSubmit.auto_resume.json", T0 + 101))
    h.apply(ev("SessionEnd", T0 + 150, reason="prompt_input_exit"))
    decision = verdict(h, T0 + 400)
    assert decision.verdict == Verdict.SKIP
    assert decision.reason.startswith("Claude Code resumed this session itself at")
    # Its resumed turn refused again is a new try, Claude Code's own or sidecar's.
    h.apply(ev("SessionStart", T0 + 500, source="resume"), real("StopFailure.usage_limit.json", T0 + 502))
    assert said(h)["state"] == "expected"


def test_a_run_sidecar_started_is_not_promised_claude_codes_own_resume(h):
    # sidecar's resume is `claude -p`, in which Claude Code arms no resume of its own.
    result = h.apply(ev("SessionStart", T0, hook_id=LIMIT_HOOK, source="resume"),
                     ev("UserPromptSubmit", T0 + 1, hook_id=LIMIT_HOOK),
                     real("StopFailure.usage_limit.json", T0 + 2, LIMIT_HOOK))
    assert said(h) is None
    [failed_turn] = [c for c in result.changes if c.kind == EventKind.TURN_FAILED]
    assert not failed_turn.host_resumes  # the limit's notice promises nothing of it


def test_with_host_resume_off_an_earlier_episodes_word_is_dropped(tmp_path):
    ws = Workspace(tmp_path / "ws")
    Harness(ws).apply(ev("SessionStart", T0), real("StopFailure.usage_limit.json", T0 + 2))
    off = Harness(ws, host_resume=False)  # the user set hostResume = false since
    off.apply(ev("UserPromptSubmit", T0 + 3), ev("Stop", T0 + 4), ev("UserPromptSubmit", T0 + 5),
              failed(T0 + 6))
    assert "hostResume" not in off.record()["metadata"]["sidecar"]
    assert "itself" not in read(off.record()).why


def test_a_managed_settings_file_is_read_only_as_roots_own(tmp_path):
    # Claude Code's managed settings outrank the user's: sidecar reads them only from a regular
    # file of root's that nobody else may write (a user daemon and a root one alike).
    from sidecar import owner

    managed = tmp_path / "managed-settings.json"
    managed.write_text('{"autoContinueAtUsageLimit": false}')
    os.chmod(managed, 0o644)
    if os.geteuid() != 0:
        assert owner.read_system(managed) is None  # the user's own file is not the system's
        return
    assert owner.read_system(managed) == b'{"autoContinueAtUsageLimit": false}'
    os.chmod(managed, 0o664)
    assert owner.read_system(managed) is None  # its group could write it
    os.chmod(managed, 0o644)
    os.chown(managed, 1000, 1000)
    assert owner.read_system(managed) is None  # another user's
    os.mkfifo(tmp_path / "fifo")
    assert owner.read_system(tmp_path / "fifo") is None  # never opened as anything but a file
