"""A running daemon takes up config.toml and the environment file as they change, a follow-up
fired right after a change runs with it, `reload` returns once the daemon has read them, and
`doctor` checks what the daemon resolved (its report), not the files."""

from __future__ import annotations

import os
import signal
import sys
import uuid
from pathlib import Path

import orjson

from helpers import SIDECAR, emit, fake_systemctl, read_json, run_cli, wait_until
from support.fakes import fake_host

DAEMON_PATH = f"{Path(SIDECAR).parent}:/usr/bin:/bin"  # a service's: no nvm, no npm prefix


def ended(root: Path, name: str) -> str:
    """A Claude Code session (its id a UUID, as Claude makes them) with one turn, ended."""
    session = str(uuid.uuid5(uuid.NAMESPACE_URL, name))
    for event in ("session-start", "turn-start", "turn-end", "session-end"):
        done = emit(root, None, event, "--session-id", session, "--source", "claude-code")
        assert done.returncode == 0, done.stderr
    return session


def post_task(ws) -> dict:
    return read_json(ws.hooks_file)["hooks"]["post-task"]


def test_a_follow_up_fired_right_after_config_toml_changed_runs_with_the_new_settings(
        workspace, config_home, start_daemon, tmp_path):
    assert run_cli("hooks", "update", "post-task", "--delay", "0", "--root",
                   str(workspace.root)).returncode == 0
    start_daemon(workspace.root, env={"PATH": DAEMON_PATH})  # `claude` is not on its PATH
    told = tmp_path / "resumed.txt"
    resume = [sys.executable, "-c", "import sys; open(sys.argv[1], 'a').write(sys.argv[2])",
              str(told), "{session_id}"]
    with (config_home / "config.toml").open("a") as config:  # as `integrate` records one
        config.write(f'[resume]\n"claude-code" = {orjson.dumps(resume).decode()}\n')
    session = ended(workspace.root, "right-after")  # fired at once: before any periodic look
    wait_until(lambda: post_task(workspace)["history"], 20)
    assert [h["status"] for h in post_task(workspace)["history"]] == ["ok"], post_task(workspace)
    assert told.read_text() == session


def test_doctor_fails_while_the_running_daemon_lacks_the_resume_executable(
        workspace, config_home, start_daemon, tmp_path, monkeypatch):
    home = tmp_path / "home"
    claude = fake_host(tmp_path / "nvm" / "bin", "claude")
    shell = {"HOME": str(home), "ANTHROPIC_API_KEY": "sk-mine",
             "PATH": f"{claude.parent}:{fake_systemctl(tmp_path, answers=False)}"}
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    daemon = start_daemon(workspace.root, env={"HOME": str(home), "PATH": DAEMON_PATH})
    where = f"the running sidecar's environment (pid {daemon.pid})"
    # Frozen, it reads nothing again: a daemon that has not taken up what integrate wrote.
    os.kill(daemon.pid, signal.SIGSTOP)
    try:
        assert run_cli("integrate", "claude-code", cwd=workspace.root, env=shell).returncode == 0
        (config_home / "environment").write_text("ANTHROPIC_API_KEY=sk-mine\n")
        result = run_cli("doctor", cwd=workspace.root, env=shell)
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
    out = result.stdout.decode()
    assert result.returncode == 1
    assert f"PROBLEM claude-code: the resume command's 'claude' is not on the PATH of {where} " \
           f"({DAEMON_PATH})" in out, out
    assert f"PROBLEM the running sidecar (pid {daemon.pid}) has not read {config_home / 'config.toml'} " \
           f"and {config_home / 'environment'} since they changed" in out
    assert f"ANTHROPIC_API_KEY is in {config_home / 'environment'} but not in {where}, which read " \
           f"the file before; make it read the file again: sidecar reload (or kill -HUP {daemon.pid})" in out
    # Running again, it reads both by itself; doctor, run at once, waits for that.
    result = run_cli("doctor", cwd=workspace.root, env=shell)
    out = result.stdout.decode()
    assert f"ok      claude-code: the resume command resolves in {where} ({claude})" in out, out
    assert "ANTHROPIC_API_KEY" not in out and "PROBLEM" not in out and result.returncode == 0


def test_doctor_right_after_reload_no_longer_reports_what_the_reload_fixed(
        workspace, config_home, start_daemon, tmp_path, monkeypatch):
    (config_home / "config.toml").write_text("")  # the default heartbeat: once a minute
    home = tmp_path / "home"
    claude = fake_host(tmp_path / "nvm" / "bin", "claude")
    shell = {"HOME": str(home), "ANTHROPIC_API_KEY": "sk-mine",
             "PATH": f"{claude.parent}:{fake_systemctl(tmp_path, answers=False)}"}
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert run_cli("integrate", "claude-code", cwd=workspace.root, env=shell).returncode == 0
    daemon = start_daemon(workspace.root, env={"HOME": str(home), "PATH": DAEMON_PATH})
    missing = "claude-code: ANTHROPIC_API_KEY is set in your shell but missing from the running " \
              f"sidecar's environment (pid {daemon.pid})"
    assert missing in run_cli("doctor", cwd=workspace.root, env=shell).stdout.decode()
    (config_home / "environment").write_text("ANTHROPIC_API_KEY=sk-mine\n")
    reloaded = run_cli("reload", env=shell)
    [instance] = [read_json(p) for p in workspace.instances.glob("*.json")]
    assert instance["environment"]["variables"] == ["ANTHROPIC_API_KEY"]  # as reload returns
    result = run_cli("doctor", cwd=workspace.root, env=shell)
    assert "ANTHROPIC_API_KEY" not in result.stdout.decode() and result.returncode == 0, result.stdout
    assert reloaded.returncode == 0, reloaded.stderr
    assert f"the daemon with pid {daemon.pid} read config.toml and the environment file again" \
        in reloaded.stdout.decode()


def test_reload_of_a_bad_config_toml_says_the_daemon_kept_its_settings_and_doctor_too(
        workspace, config_home, start_daemon):
    daemon = start_daemon(workspace.root)
    (config_home / "config.toml").write_text("staleAfter = 'soon'\n")
    reloaded = run_cli("reload")
    said = reloaded.stderr.decode()
    assert reloaded.returncode == 2, said
    assert f"the daemon with pid {daemon.pid} could not read its settings again, and runs with " \
           "those it had: " in said and "staleAfter" in said
    out = run_cli("doctor", cwd=workspace.root).stdout.decode()
    assert f"PROBLEM the running sidecar (pid {daemon.pid}) could not read its settings again" in out
    (config_home / "config.toml").write_text("staleAfter = '2h'\n")  # read by itself, at once
    assert "could not read" not in run_cli("doctor", cwd=workspace.root).stdout.decode()
