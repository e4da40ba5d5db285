"""End to end with the real Claude Code CLI, offline against a loopback stub of its API.

A `claude -p` session in a workspace whose hooks call `sidecar emit`; the `post-task` hook
resumes that same session through the real `claude --resume`; the resumed run's own
session-end does not queue the hook again; the API saw exactly one resumed request.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import orjson
import pytest

from helpers import SIDECAR, npm_host, read_json, run_cli, wait_until
from sidecar.base.ids import harness_id
from sidecar.base.timeutil import parse_ts
from sidecar.config import DEFAULT_RESUME
from stubs.anthropic_stub import AnthropicStub, LimitedAnthropicStub
from stubs.lifecycle import (
    assert_whole_lifecycle,
    carries_marker,
    enable_limit_resume,
    limit_hook,
    post_task,
    prepare_post_task,
    set_resume,
    settled,
    trace_events,
    trace_lines,
)

CLAUDE_VERSION = "2.1.332"
CLAUDE_EVENTS = ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd"]


def claude_binary() -> Path:
    return npm_host("claude-code", CLAUDE_VERSION, "claude")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A throwaway home for Claude Code."""
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def claude_env(home: Path, stub_url: str) -> dict[str, str]:
    """Claude Code offline against the stub, with a throwaway home."""
    return {"HOME": str(home), "ANTHROPIC_BASE_URL": stub_url, "ANTHROPIC_API_KEY": "sk-test",
            "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


def run_claude(claude: Path, cwd: Path, env: dict[str, str], *args: str):
    return subprocess.run([str(claude), *args], cwd=cwd, env={**os.environ, **env},
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=180)


@contextlib.contextmanager
def served_by(workspace, argv: list[str], log: Path, env: dict[str, str] | None = None):
    """A daemon started as `argv`, as a service manager starts it, once it serves the workspace
    (its instance file is written); at the end of the block SIGTERM ends it, exiting 0."""
    with open(log, "wb") as out:
        daemon = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
        try:
            wait_until(lambda: list(workspace.instances.glob("*.json")), 15)
            yield
        finally:
            daemon.terminate()
            assert daemon.wait(20) == 0


def write_claude_hooks(root: Path, events: list[str] = CLAUDE_EVENTS) -> None:
    command = f"{shlex.quote(SIDECAR)} emit --source claude-code"
    entry = [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(
        orjson.dumps({"hooks": {event: entry for event in events}}).decode())


def test_post_task_resumes_the_real_session_exactly_once(workspace, start_daemon, config_home, home):
    claude = claude_binary()
    write_claude_hooks(workspace.root)
    prepare_post_task(workspace)
    # The default resume command, with the permissions its prompt needs, by absolute path.
    set_resume(config_home, "claude-code", [str(claude), *DEFAULT_RESUME["claude-code"][1:]])

    with AnthropicStub() as stub:
        env = claude_env(home, stub.url)
        start_daemon(workspace.root, env=env)
        first = run_claude(claude, workspace.root, env, "-p", "do the task")
        assert first.returncode == 0, first.stderr.decode()[-2000:]
        wait_until(lambda: settled(workspace), 120, 0.2)
        requests = list(stub.requests)
    session_id = post_task(workspace)["history"][-1]["sessionId"]
    record = workspace.session_dir(harness_id("claude-code", session_id)) / "session.json"
    assert_whole_lifecycle(workspace, record, requests, "do the task")
    log = Path(post_task(workspace)["history"][0]["log"]).read_text()
    assert "--resume" in log and session_id in log
    assert "'--permission-mode', 'acceptEdits'" in log  # the permissions it ran with, shown
    status = run_cli("status", "--root", str(workspace.root))
    assert b"post-task" in status.stdout and b"last ok" in status.stdout


def test_hooks_written_by_integrate_drive_a_daemon_started_as_the_unit_starts_it(
        workspace, config_home, tmp_path, home):
    from sidecar.install import service

    claude = claude_binary()
    assert run_cli("integrate", "claude-code", cwd=workspace.root).returncode == 0
    doc = read_json(workspace.hooks_file)
    doc["hooks"]["post-task"]["enabled"] = False
    workspace.hooks_file.write_bytes(orjson.dumps(doc))
    unit = service.render_unit(service.sidecar_path())
    exec_start = next(line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("ExecStart="))
    with AnthropicStub() as stub:
        env = {**os.environ, **claude_env(home, stub.url)}
        with served_by(workspace, shlex.split(exec_start), tmp_path / "unit.log", env):
            run = run_claude(claude, workspace.root, env, "-p", "hello")
            assert run.returncode == 0, run.stderr.decode()[-2000:]
            def report():
                return orjson.loads(run_cli("status", "--root", str(workspace.root), "--json").stdout)["workspaces"][0]
            wait_until(lambda: report()["sessions"]["completed"] == 1 and report()["inbox"]["backlog"] == 0, 30)
            [session_dir] = [p for p in workspace.sessions.iterdir() if p.is_dir()]
            events = trace_events(session_dir / "session.json")
            assert events[0] == "session.created" and events[-1] == "session.completed"
            assert "session.start" in events and "turn.start" in events and "turn.end" in events
            record = read_json(session_dir / "session.json")
            assert record["metadata"]["host"] == "claude-code"


STILL_LIMITED = "This request would exceed your account's rate limit. Please try again later."


@pytest.mark.parametrize("refusals, statuses", [
    (1, ["ok"]),  # the stated reset was right: one firing in the episode
    (2, ["error: exit status 1", "ok"]),  # the first try is refused too: the episode's next
])
def test_a_turn_refused_by_a_usage_limit_is_resumed_once_the_limit_resets(
        workspace, start_daemon, config_home, home, refusals, statuses):
    """The API refuses the first turn with a reset stated a few seconds ahead (and, in the
    second case, the first resume too, with no reset: the back-off, scaled down). The end
    queues no post-task; once the limit has passed, the session is resumed, the same
    conversation, once; a refused try is followed by the same episode's next, never a new
    chain; nothing is queued after."""
    claude = claude_binary()
    write_claude_hooks(workspace.root, [*CLAUDE_EVENTS, "StopFailure"])
    limit_prompt = workspace.prompts / "resume-after-limit.md"
    limit_prompt.write_text(limit_prompt.read_text() + "\nLIMIT-MARKER-77c1\n")
    enable_limit_resume(workspace, config_home, "claude-code",  # trusted, as the user would
                        [str(claude), *DEFAULT_RESUME["claude-code"][1:]], scale=0.002)  # 15 min: 1.8 s
    reset = int(time.time()) + 4
    messages = [f"Claude AI usage limit reached|{reset}", STILL_LIMITED][:refusals]

    with LimitedAnthropicStub(messages) as stub:
        env = claude_env(home, stub.url)
        start_daemon(workspace.root, env=env)
        first = run_claude(claude, workspace.root, env, "-p", "do the task")
        assert first.returncode == 1 and b"429" in first.stdout + first.stderr

        wait_until(lambda: len(limit_hook(workspace)["history"]) == len(statuses)
                   and not read_json(workspace.hooks_file)["pending"]
                   and not list(workspace.inbox.glob("*.json")), 120, 0.2)
        time.sleep(2)  # long enough for a wrong post-task (1 s delay) or try to come and fire
        history = limit_hook(workspace)["history"]
        answered = [r for r in stub.requests if r["body"].get("stream")
                    and r["body"] not in stub.refused]

    assert [h["status"] for h in history] == statuses
    assert parse_ts(history[0]["at"]) >= reset  # not before the limit said it resets
    assert len(stub.refused) == refusals
    [resumed] = answered  # the successful try reached the model, once
    text = orjson.dumps(resumed["body"]).decode()
    assert "do the task" in text and "LIMIT-MARKER-77c1" in text  # the same conversation
    assert post_task(workspace)["history"] == []  # the task was not finished by the first end
    assert read_json(workspace.hooks_file)["pending"] == []
    session_id = history[-1]["sessionId"]
    record = read_json(workspace.session_dir(harness_id("claude-code", session_id)) / "session.json")
    assert record["status"] == "completed" and "limit" not in record["metadata"]["sidecar"]
    trace = trace_lines(workspace.session_dir(record["id"]) / "session.json")
    assert [t["event"] for t in trace].count("turn.failed") == refusals
    assert "the usage limit has passed" in trace[[t["event"] for t in trace].index("turn.end")]["message"]


def test_a_daemon_with_a_bare_environment_resumes_with_what_integrate_and_the_environment_file_give(
        workspace, config_home, tmp_path, home):
    """The service's environment is not the user's: `env -i` with PATH=/usr/bin:/bin. The
    executable comes from `integrate` (recorded by absolute path), the API's address and key
    from the environment file; doctor names the key while the file lacks it."""
    from sidecar.install import service

    claude = claude_binary()
    prepare_post_task(workspace)
    with AnthropicStub() as stub:
        keys = {k: v for k, v in claude_env(home, stub.url).items() if k != "HOME"}
        shell = {"HOME": str(home), "PATH": f"{claude.parent}{os.pathsep}/usr/bin:/bin", **keys}
        result = run_cli("integrate", "claude-code", cwd=workspace.root, env=shell)
        assert result.returncode == 0 and f"resume runs {claude}".encode() in result.stdout
        # The unit `service install` writes from a shell whose PATH lacks claude's folder.
        unit = service.systemd_unit_path(home)
        unit.parent.mkdir(parents=True)
        unit.write_text(service.render_unit(Path(SIDECAR), "/usr/bin:/bin"))
        said = run_cli("doctor", cwd=workspace.root, env=shell).stdout.decode()
        assert "ANTHROPIC_API_KEY is set in your shell but missing from the service's " \
               "environment" in said, said
        (config_home / "environment").write_text(
            "".join(f"{k}={v}\n" for k, v in keys.items()))
        said = run_cli("doctor", cwd=workspace.root, env=shell).stdout.decode()
        assert "ANTHROPIC_API_KEY" not in said and \
            f"claude-code: the resume command resolves in the service's environment ({claude})" \
            in said, said

        with served_by(workspace, ["env", "-i", f"HOME={home}", "PATH=/usr/bin:/bin",
                                   f"SIDECAR_CONFIG_HOME={config_home}", SIDECAR, "run", "--root",
                                   str(workspace.root)], tmp_path / "bare-daemon.log"):
            first = run_claude(claude, workspace.root, shell, "-p", "do the task")
            assert first.returncode == 0, first.stderr.decode()[-2000:]
            wait_until(lambda: settled(workspace), 120, 0.2)
            requests = list(stub.requests)
    hook = post_task(workspace)
    assert [h["status"] for h in hook["history"]] == ["ok"], (tmp_path / "bare-daemon.log").read_text()
    resumed = [r for r in requests if carries_marker(r, False)]
    assert len(resumed) == 1 and "do the task" in orjson.dumps(resumed[0]["body"]).decode()
    assert f"'{claude}'" in Path(hook["history"][0]["log"]).read_text()  # by absolute path


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill"])
def test_a_session_the_user_stops_mid_turn_is_never_resumed(workspace, start_daemon, config_home,
                                                            home, stop):
    """`claude -p "a long task"`, then Ctrl-C (SIGINT to its process group, as a terminal sends
    it) or a kill while the model is still answering: the session ends, by its own SessionEnd
    (reason `other`, as for a normal end) or by the process watch, and post-task says why it
    did not run instead of resuming the conversation with edit rights."""
    claude = claude_binary()
    write_claude_hooks(workspace.root)
    prepare_post_task(workspace, delay=1)
    set_resume(config_home, "claude-code", [str(claude), *DEFAULT_RESUME["claude-code"][1:]])
    with AnthropicStub() as stub:
        env = claude_env(home, stub.url)
        start_daemon(workspace.root, env=env)
        stub.hold()  # the model is still answering
        host = subprocess.Popen([str(claude), "-p", "a long task"], cwd=workspace.root,
                                env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            wait_until(lambda: any("a long task" in orjson.dumps(r["body"]).decode()
                                   for r in stub.requests), 60, 0.1)
            os.killpg(host.pid, stop)
            host.wait(30)
        finally:
            if host.poll() is None:
                os.killpg(host.pid, signal.SIGKILL)
                host.wait()
        stub.release()
        wait_until(lambda: post_task(workspace)["history"], 30, 0.1)
        time.sleep(3)  # past the hook's delay: a wrong firing would have started by now
        requests = list(stub.requests)
    [said] = post_task(workspace)["history"]
    assert said["status"] == "skipped: the last turn was interrupted"
    assert read_json(workspace.hooks_file)["pending"] == []
    assert not [r for r in requests if carries_marker(r, False)]
    record = read_json(workspace.session_dir(harness_id("claude-code", said["sessionId"]))
                       / "session.json")
    assert record["status"] == "completed"
    assert record["metadata"]["sidecar"]["completionReason"] == (
        "other" if stop == signal.SIGINT else "host-exited")
    status = run_cli("status", "--root", str(workspace.root)).stdout.decode()
    assert "skipped: the last turn was interrupted" in status, status


def test_a_resume_that_is_not_logged_in_shows_what_claude_said(
        workspace, start_daemon, config_home, home, monkeypatch):
    """A session run with a key; its follow-up, from a daemon started without one, meets the
    real `claude` saying `Not logged in · Please run /login` (exit 1): `status` shows that
    line beside the outcome, and `doctor` notes the failure."""
    claude = claude_binary()
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    write_claude_hooks(workspace.root)
    prepare_post_task(workspace)
    set_resume(config_home, "claude-code", [str(claude), *DEFAULT_RESUME["claude-code"][1:]])
    with AnthropicStub() as stub:
        start_daemon(workspace.root, env={"HOME": str(home), "DISABLE_TELEMETRY": "1",
                                          "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"})
        first = run_claude(claude, workspace.root, claude_env(home, stub.url), "-p", "do the task")
        assert first.returncode == 0, first.stderr.decode()[-2000:]
        wait_until(lambda: settled(workspace), 120, 0.2)
    said = "error: exit status 1: Not logged in · Please run /login"
    status = run_cli("status", "--root", str(workspace.root)).stdout.decode()
    assert re.search(rf"last {re.escape(said)} \((just now|\d+ (s|min) ago)\)", status), status
    doctor = run_cli("doctor", cwd=workspace.root, env={"HOME": str(home)}).stdout.decode()
    assert f"note    hook post-task's last follow-up failed: {said}" in doctor, doctor
