"""Claude Code's own usage-limit auto-resume and sidecar's resume-after-limit, taking turns
knowingly, with the real Claude Code 2.1.332 in a real terminal (tmux), logged in with an
OAuth token (its auto-resume is for claude.ai logins), offline against a loopback stub that
refuses turns with a usage-limit error naming its reset (`anthropic-ratelimit-unified-*`)
a few seconds ahead:

- the session left open: Claude Code resumes it itself (30-90 s after the reset, its own
  jitter), sidecar stands down while it waits: one resume in the episode, Claude Code's;
- the user quits during the wait: Claude Code cancels its own, sidecar's resumes it, once;
- the user turned Claude Code's own off (`autoContinueAtUsageLimit`, its /config's "Continue
  automatically at usage limit"): no hook says so, sidecar reads it from their settings and
  says so; once the user quits, sidecar resumes the session, once.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest

from helpers import npm_host, read_json, run_cli, wait_until
from sidecar.config import DEFAULT_RESUME
from stubs.anthropic_stub import AnthropicStub
from stubs.lifecycle import enable_limit_resume, limit_hook, user_texts
from stubs.loopback import Refusal
from support.tmux import Tmux

CLAUDE_VERSION = "2.1.332"
OWN_PROMPT = "Your claude.ai usage limit has reset"  # the prompt of Claude Code's own resume
MARKER = "LIMIT-MARKER-5e0a"  # in sidecar's resume-after-limit prompt


class UsageLimitedStub(AnthropicStub):
    """Refuses every turn until `until` as the API refuses a claude.ai usage limit."""

    until = 0.0

    def reply(self, path, body):
        if path.startswith("/v1/messages") and body.get("stream") and time.time() < self.until:
            reset = str(int(self.until))
            return Refusal(429, {"x-should-retry": "false", "anthropic-ratelimit-unified-status": "rejected",
                                 "anthropic-ratelimit-unified-reset": reset,
                                 "anthropic-ratelimit-unified-representative-claim": "five_hour"},
                           {"type": "error", "error": {"type": "rate_limit_error", "message": "limit"}})
        return super().reply(path, body)

    def turns(self, text: str) -> list[dict]:
        """The answered turns whose latest user message holds `text`."""
        return [r for r in self.requests if r["body"].get("stream") and r["path"].startswith("/v1/messages")
                and (texts := user_texts(r["body"])) and text in texts[-1]]


def first_turn(request: dict) -> list[str]:
    """The text blocks of a model request's first user message: the conversation's first turn,
    each without the newline Claude Code ends a block with when it joins a refused turn's
    message with the next one."""
    first = next(m for m in request["body"]["messages"] if m.get("role") == "user")
    return [block.removesuffix("\n") for block in user_texts({"messages": [first]})]


def assert_sidecars_resume_carried_the_earlier_turn(workspace, resumed: dict) -> None:
    """sidecar's resume reached the model in the same conversation: the user's earlier turn and
    sidecar's prompt (its file's text after the frontmatter), each exactly as written."""
    assert "do the task" in first_turn(resumed), first_turn(resumed)
    written = (workspace.prompts / "resume-after-limit.md").read_text().split("---\n", 2)[2].strip()
    texts = user_texts(resumed["body"])
    assert written in texts or written + "\n" in texts, texts


def logged_in(home: Path, project: Path, url: str) -> dict[str, str]:
    """A claude.ai login (an OAuth token; the account as a first run leaves it), the project
    trusted, offline against `url`."""
    home.mkdir()
    (home / ".claude.json").write_text(json.dumps({
        "hasCompletedOnboarding": True, "theme": "dark",
        "oauthAccount": {"accountUuid": "a", "emailAddress": "u@example.com", "organizationUuid": "o",
                         "billingType": "stripe_subscription"},
        "projects": {str(project): {"hasTrustDialogAccepted": True, "allowedTools": []}}}))
    return {"HOME": str(home), "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-test", "ANTHROPIC_BASE_URL": url,
            "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


def the_record(workspace) -> dict | None:
    records = list(workspace.sessions.glob("*/session.json"))
    return read_json(records[0]) if len(records) == 1 else None


def said(workspace) -> str | None:
    record = the_record(workspace)
    resume = record and record["metadata"]["sidecar"].get("hostResume")
    return resume["state"] if resume else None


@pytest.fixture
def auto_continue() -> bool:
    """Claude Code's own switch of its auto-resume, as the user left it (on by default)."""
    return True


@pytest.fixture
def limited(workspace, start_daemon, config_home, tmp_path, auto_continue):
    """Claude Code in tmux at the workspace, integrated, resume-after-limit on and trusted;
    its first turn is refused with a reset 5 s ahead. Yields (stub, tmux, reset)."""
    claude = npm_host("claude-code", CLAUDE_VERSION, "claude")
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (tests/install-hosts.sh installs it)")
    root = workspace.root
    with UsageLimitedStub() as stub:
        env = logged_in(tmp_path / "home", root, stub.url)
        if not auto_continue:  # as its /config writes it
            (tmp_path / "home" / ".claude").mkdir()
            (tmp_path / "home" / ".claude" / "settings.json").write_text('{"autoContinueAtUsageLimit": false}\n')
        assert run_cli("integrate", "claude-code", cwd=root, env=env).returncode == 0
        prompt = workspace.prompts / "resume-after-limit.md"
        prompt.write_text(prompt.read_text() + f"\n{MARKER}\n")
        enable_limit_resume(workspace, config_home, "claude-code",
                            [str(claude), *DEFAULT_RESUME["claude-code"][1:]], scale=0.002)
        start_daemon(root, env=env)
        tmux = Tmux(tmp_path / "tmux.sock")
        try:
            tmux.start([str(claude)], env, root)
            wait_until(lambda: "auto mode on" in tmux.screen(), 60, 0.2)
            stub.until = reset = time.time() + 5
            tmux.keys("do the task", literal=True)
            tmux.keys("Enter")
            wait_until(lambda: said(workspace) == ("expected" if auto_continue else "off"), 60, 0.2)
            yield stub, tmux, reset
        finally:
            tmux.stop()


def test_left_open_claude_code_resumes_the_session_itself_and_sidecar_stands_down(workspace, limited):
    stub, tmux, reset = limited
    assert "set to continue automatically" in tmux.screen()
    # its try came due (the reset is named to the minute) and stood down
    wait_until(lambda: "standing down: Claude Code resumes this session itself at"
               in str(limit_hook(workspace).get("lastStatus")), 60, 0.2)
    status = run_cli("status", cwd=workspace.root).stdout.decode()
    assert "Claude Code resumes this session itself at" in status
    # Claude Code's own resume: 30-90 s after the reset, checked every 30 s.
    wait_until(lambda: said(workspace) is None and not the_record(workspace)["metadata"]["sidecar"].get("limit")
               and stub.turns(OWN_PROMPT), 180, 0.5)
    trace = (workspace.session_dir(the_record(workspace)["id"]) / "trace.jsonl").read_text()
    assert "quota_auto_resume_fired: Usage limit reset — Claude is continuing your task" in trace
    tmux.stop()  # the user closes the terminal: the episode is over, nothing of it fires
    wait_until(lambda: the_record(workspace)["status"] == "completed", 60, 0.2)
    time.sleep(2)
    # sidecar's try: dropped, as Claude Code's own resume made it (or as its turn closed the limit)
    statuses = [h["status"] for h in limit_hook(workspace)["history"]]
    assert statuses == [] or len(statuses) == 1 and (
        statuses[0] == "skipped: the usage limit has passed: a later turn ended well"
        or re.fullmatch(r"skipped: Claude Code resumed this session itself at \d\d:\d\d: "
                        r"this usage limit's resume was its own", statuses[0])), statuses
    [own] = stub.turns(OWN_PROMPT)  # one resume: its own, in the same conversation
    assert stub.turns(MARKER) == [] and "do the task" in first_turn(own), first_turn(own)
    assert time.time() >= reset


def test_the_user_quits_during_the_wait_and_sidecar_resumes_the_session_once(workspace, limited):
    stub, tmux, reset = limited
    wait_until(lambda: time.time() > reset + 1, 10, 0.2)  # past the reset, within Claude Code's wait
    tmux.stop()  # the user closes the terminal: Claude Code's own resume is cancelled
    wait_until(lambda: limit_hook(workspace)["history"], 150, 0.5)
    time.sleep(2)
    assert [h["status"] for h in limit_hook(workspace)["history"]] == ["ok"]
    [resumed] = stub.turns(MARKER)  # sidecar's resume reached the model once
    assert_sidecars_resume_carried_the_earlier_turn(workspace, resumed)
    assert stub.turns(OWN_PROMPT) == []
    assert read_json(workspace.hooks_file)["pending"] == [] or all(
        p["hookId"] != "resume-after-limit" for p in read_json(workspace.hooks_file)["pending"])


@pytest.mark.parametrize("auto_continue", [False])
def test_its_own_resume_switched_off_sidecar_says_so_and_resumes_once_the_user_quits(workspace, limited):
    stub, tmux, reset = limited
    wait_until(lambda: "What do you want to do?" in tmux.screen(), 30, 0.2)  # its dialog, nothing armed
    status = run_cli("status", "--session", the_record(workspace)["id"], cwd=workspace.root).stdout.decode()
    assert "Claude Code will not resume this session itself (autoContinueAtUsageLimit is off in " \
           "~/.claude/settings.json); sidecar's resume-after-limit may" in status
    tmux.stop()  # the user leaves it there
    wait_until(lambda: limit_hook(workspace)["history"], 150, 0.5)
    time.sleep(2)
    assert [h["status"] for h in limit_hook(workspace)["history"]] == ["ok"]
    [resumed] = stub.turns(MARKER)  # sidecar's resume reached the model once
    assert_sidecars_resume_carried_the_earlier_turn(workspace, resumed)
    assert stub.turns(OWN_PROMPT) == []
    assert time.time() >= reset
