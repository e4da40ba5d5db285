"""What `doctor` and `status` say of follow-ups that fail, of a broken hooks.json, of the
environment the running daemon gives follow-ups, and of hosts the user does not use."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import orjson
from test_hooks_daemon import command_hook, hook_status

from helpers import SIDECAR, end_session, fake_systemctl, read_json, run_cli, use_hooks, wait_until
from sidecar.followups.run import logtail
from support.fakes import fake_host

LOGIN = "Not logged in · Please run /login"


def failing(text: str) -> list[str]:
    """A command that says `text` on stderr (after some output) and exits 1, as a host does."""
    return [sys.executable, "-c", "import sys; print('starting'); print(sys.argv[1], "
            "file=sys.stderr); print(); sys.exit(1)", text]


def firings(ws, hook_id: str) -> list:
    return read_json(ws.hooks_file)["hooks"][hook_id].get("history", [])


def test_a_failed_follow_up_shows_its_logs_last_line_and_doctor_reports_one_that_keeps_failing(
        workspace, start_daemon):
    use_hooks(workspace, {"post": command_hook("post", failing(LOGIN), delay=0)})
    start_daemon(workspace.root)
    end_session(workspace.root, "s-fail")
    wait_until(lambda: hook_status(workspace, "post"), 20)
    text = run_cli("status", "--root", str(workspace.root)).stdout.decode()
    # the outcome, the line its log said and when, as a relative time
    assert re.search(rf"last error: exit status 1: {re.escape(LOGIN)} \((just now|\d+ s ago)\)",
                     text), text
    report = orjson.loads(run_cli("status", "--json", "--root", str(workspace.root)).stdout)
    [hook] = report["workspaces"][0]["hooks"]
    assert hook["lastLine"] == LOGIN and hook["lastLog"]
    history = run_cli("hooks", "history", "--root", str(workspace.root)).stdout.decode()
    assert f"error: exit status 1: {LOGIN}\n  log .context/runtime/logs/hooks/post/" in history, \
        history  # its log, on a line of its own, relative to the workspace
    session = run_cli("status", "--root", str(workspace.root), "--session", "s-fail").stdout
    assert f"error: exit status 1: {LOGIN}" in session.decode(), session
    out = run_cli("doctor", cwd=workspace.root).stdout.decode()
    assert f"note    hook post's last follow-up failed: error: exit status 1: {LOGIN}" in out, out
    end_session(workspace.root, "s-2")
    wait_until(lambda: len(firings(workspace, "post")) == 2, 20)
    result = run_cli("doctor", cwd=workspace.root)
    out = result.stdout.decode()
    assert f"PROBLEM hook post's last 2 follow-ups failed: error: exit status 1: {LOGIN}" in out
    log = firings(workspace, "post")[-1]["log"]
    assert f"fix: read {log}" in out and result.returncode == 1
    # The line was kept in the history as each firing finished: the log is no longer needed.
    assert [fired["lastLine"] for fired in firings(workspace, "post")] == [LOGIN, LOGIN]
    for log in (workspace.runtime / "logs" / "hooks" / "post").iterdir():
        log.unlink()
    report = orjson.loads(run_cli("status", "--json", "--root", str(workspace.root)).stdout)
    assert report["workspaces"][0]["hooks"][0]["lastLine"] == LOGIN
    session = run_cli("status", "--root", str(workspace.root), "--session", "s-fail").stdout
    assert f"error: exit status 1: {LOGIN}" in session.decode(), session


def test_the_last_line_is_read_from_the_tail_safely_and_shown_escaped(workspace, tmp_path):
    logs = workspace.logs / "hooks" / "post"
    logs.mkdir(parents=True)
    log = logs / "1.log"
    log.write_bytes(b"$ ['claude', '-p']\n(cwd /w)\n" + b"x" * 10_000 + b"\n\x1b[31mboom\x1b[0m"
                    b" \x1b]0;title\x07here\n\n  \n")
    assert logtail.last_line(workspace, "post", str(log)) == "boom \\x1b]0;title\\x07here"
    log.write_bytes(b"$ ['claude', '-p']\n(cwd /w)\n")  # the action said nothing
    assert logtail.last_line(workspace, "post", "1.log") is None
    log.write_bytes(b"50%\r100% done\n")
    assert logtail.last_line(workspace, "post", "1.log") == "100% done"
    secret = tmp_path / "secret.txt"
    secret.write_text("the secret\n")
    os.unlink(log)
    log.symlink_to(secret)  # a link in place of the log is never followed
    assert logtail.last_line(workspace, "post", "1.log") is None
    os.unlink(log)
    os.mkfifo(log)  # nor is a FIFO waited for
    assert logtail.last_line(workspace, "post", "1.log") is None
    os.unlink(log)
    os.link(secret, log)  # nor a hard link to another file read
    assert logtail.last_line(workspace, "post", "1.log") is None
    assert logtail.last_line(workspace, "post", "../../../x.log") is None


def test_doctor_reports_a_broken_hooks_json_with_the_fix(workspace):
    workspace.hooks_file.write_text('{"hooks": ')
    result = run_cli("doctor", cwd=workspace.root)
    out = result.stdout.decode()
    assert f"PROBLEM {workspace.hooks_file} is broken" in out, out
    assert f"fix: correct the file, or move it aside and run `sidecar init {workspace.root}`" in out
    assert result.returncode == 1 and b"Traceback" not in result.stderr


def test_doctor_checks_the_environment_of_the_running_sidecar_not_its_own_shell(
        workspace, config_home, start_daemon, tmp_path):
    home = tmp_path / "home"
    claude = fake_host(tmp_path / "nvm" / "bin", "claude")
    shell = {"HOME": str(home), "ANTHROPIC_API_KEY": "sk-mine",
             "PATH": f"{claude.parent}:{fake_systemctl(tmp_path, answers=False)}"}
    assert run_cli("integrate", "claude-code", cwd=workspace.root, env=shell).returncode == 0
    (config_home / "config.toml").write_text(  # resumed by bare name, found on PATH
        (config_home / "config.toml").read_text().split("[resume]")[0] + '[resume]\n'
        '"claude-code" = ["claude", "--resume", "{session_id}", "-p", "{prompt}"]\n')
    # Started by hand from another shell: without the key, without nvm's folder on PATH.
    started_with = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    daemon = start_daemon(workspace.root, env={**started_with, "HOME": str(home),
                                               "PATH": f"{Path(SIDECAR).parent}:/usr/bin:/bin"})
    os.environ.pop("ANTHROPIC_API_KEY", None)
    out = run_cli("doctor", cwd=workspace.root, env=shell).stdout.decode()
    where = f"the running sidecar's environment (pid {daemon.pid})"
    assert f"claude-code: ANTHROPIC_API_KEY is set in your shell but missing from {where}" \
        in out, out
    assert f"claude-code: the resume command's 'claude' is not on the PATH of {where}" in out
    # The key added to the environment file: the running daemon reads it again by itself, and
    # doctor, run at once, checks what the daemon has then.
    (config_home / "environment").write_text("ANTHROPIC_API_KEY=sk-mine\n")
    out = run_cli("doctor", cwd=workspace.root, env=shell).stdout.decode()
    assert "ANTHROPIC_API_KEY" not in out, out
    record = [read_json(p) for p in workspace.instances.glob("*.json")]
    assert [r["environment"]["variables"] for r in record] == [["ANTHROPIC_API_KEY"]]
    assert "sk-mine" not in str(record)  # names only, never a value


def test_a_host_installed_but_not_used_is_a_note_and_doctor_is_green(
        workspace, start_daemon, tmp_path):
    home = tmp_path / "home"
    bin_dir = tmp_path / "hostbin"
    fake_host(bin_dir, "claude")
    fake_host(bin_dir, "codex")
    env = {"HOME": str(home), "CODEX_HOME": str(tmp_path / "codex"),
           "PATH": f"{bin_dir}:{fake_systemctl(tmp_path, answers=False)}"}
    assert run_cli("integrate", "claude-code", cwd=workspace.root, env=env).returncode == 0
    start_daemon(workspace.root, env={"HOME": str(home), "PATH": env["PATH"]})
    result = run_cli("doctor", cwd=workspace.root, env=env)
    out = result.stdout.decode()
    assert "note    Codex is installed but not integrated" in out, out
    assert "(to use it: sidecar integrate codex)" in out
    assert "PROBLEM" not in out and result.returncode == 0, out


def test_a_daemon_that_cannot_act_for_the_workspace_reports_why_and_doctor_says_it(
        tmp_path, config_home):
    from sidecar.config import Config
    from sidecar.doctor import checks
    from sidecar.followups.run import environment as followup_env
    from sidecar.hosts import registry
    from sidecar.layout import Workspace

    real = tmp_path / "real"
    (real / "ws").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    report = followup_env.report(Workspace(tmp_path / "link" / "ws"), Config())
    assert report == {"error": f"{tmp_path / 'link'} is a symlink; a workspace is acted for "
                               "only through real folders (nothing was run)"}
    gone = followup_env.report(Workspace(tmp_path / "gone" / "ws"), Config())  # deleted meanwhile
    assert gone == {"error": f"[Errno 2] No such file or directory: '{tmp_path / 'gone'}'"}
    running = followup_env.Reported(4242, {"PATH": ""}, (), report["error"])
    (config_home / "config.toml").write_text('[resume]\n"claude-code" = ["/bin/sh"]\n')
    [finding] = checks._agent_environment([registry.get("claude-code")], tmp_path, "linux",
                                          running)
    assert not finding.ok
    assert finding.what == f"the running sidecar (pid 4242) cannot run follow-ups: {report['error']}"
