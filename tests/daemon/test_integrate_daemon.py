"""`sidecar integrate`: host hook configuration merged in, kept, upgraded and removed.

Those that start real processes; the rest run in process in tests/unit/test_integrate.py.
"""

from __future__ import annotations

import json

from helpers import SIDECAR, fake_systemctl, read_json, run_cli
from sidecar.hosts import gemini
from support.fakes import fake_host


def test_doctor_names_problems_and_fixes(workspace, tmp_path):
    home = tmp_path / "home"
    env = {"HOME": str(home), "XDG_CONFIG_HOME": "", "CODEX_HOME": str(tmp_path / "codex"),
           "PATH": fake_systemctl(tmp_path, answers=True)}
    result = run_cli("doctor", cwd=workspace.root, env=env)
    assert result.returncode == 1
    out = result.stdout.decode()
    assert "PROBLEM the service is not installed" in out and "fix: sidecar service install" in out
    assert "no agent host is integrated" in out and "fix: sidecar integrate claude-code" in out
    assert "Claude Code is not installed here" in out  # not a problem: nothing to integrate
    assert "no live instance serves" in out
    assert f"workspace {workspace.root} is registered" in out

    run_cli("integrate", "claude-code", cwd=workspace.root, env=env)
    out = run_cli("doctor", cwd=workspace.root, env=env).stdout.decode()
    assert "ok      Claude Code hooks go through sidecar" in out

    elsewhere = tmp_path / "unregistered"
    (elsewhere / ".context").mkdir(parents=True)
    out = run_cli("doctor", cwd=elsewhere, env=env).stdout.decode()
    assert f"workspace {elsewhere} is not registered" in out and f"fix: sidecar init {elsewhere}" in out


def test_doctor_spots_a_low_inotify_limit(tmp_path, workspace):
    from sidecar.doctor import checks

    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "max_user_watches").write_text("1024\n")
    (proc / "max_user_instances").write_text("128\n")
    findings = checks.check(workspace.root, tmp_path / "home", "linux", proc)
    low = [f for f in findings if "max_user_watches" in f.what]
    assert low and not low[0].ok and "sysctl fs.inotify.max_user_watches" in low[0].fix


def test_gemini_hooks_are_merged_and_an_untrusted_folder_is_named_by_doctor(workspace, tmp_path):
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    settings = home / ".gemini" / "settings.json"
    mine = {"ui": {"theme": "dark"}, "hooks": {"AfterAgent": [
        {"matcher": "*", "hooks": [{"type": "command", "command": "notify-send done"}]}]}}
    settings.write_text(json.dumps(mine))
    env = {"HOME": str(home)}
    assert run_cli("integrate", "gemini", env=env, cwd=workspace.root).returncode == 0
    merged = read_json(settings)
    assert merged["ui"] == {"theme": "dark"}
    assert merged["hooks"]["AfterAgent"][0] == mine["hooks"]["AfterAgent"][0]  # theirs first
    assert sorted(merged["hooks"]) == sorted(gemini.EVENTS)
    out = run_cli("doctor", cwd=workspace.root, env=env).stdout.decode()
    assert "Gemini CLI hooks go through sidecar" in out
    assert f"Gemini CLI does not trust {workspace.root}" in out and "TRUST_FOLDER" in out
    (home / ".gemini" / "trustedFolders.json").write_text(
        json.dumps({str(workspace.root.parent): "TRUST_FOLDER"}))
    assert "does not trust" not in run_cli("doctor", cwd=workspace.root, env=env).stdout.decode()
    assert run_cli("integrate", "gemini", "--uninstall", env=env).returncode == 0
    assert read_json(settings) == mine


def test_integrating_a_folder_that_is_not_a_workspace_is_refused_with_the_fix(tmp_path, config_home):
    plain = tmp_path / "plain"
    plain.mkdir()
    for host in (["claude-code"], ["gemini", "--project"], ["opencode"]):
        result = run_cli("integrate", *host, cwd=plain)
        assert result.returncode == 4, host
        assert f"sidecar init {plain}".encode() in result.stderr and b"--init" in result.stderr
    assert not (plain / ".claude").exists() and not (plain / ".gemini").exists()
    result = run_cli("integrate", "claude-code", "--init", cwd=plain)
    assert result.returncode == 0 and (plain / ".context" / "runtime").is_dir()
    assert str(plain) in read_json(config_home / "workspaces.json")["workspaces"]
    out = run_cli("doctor", cwd=plain, env={"HOME": str(tmp_path / "home")}).stdout.decode()
    assert "ok      Claude Code hooks go through sidecar" in out  # doctor reads the local file


def test_without_a_user_manager_doctor_recommends_what_works_and_accepts_a_hand_started_run(
        workspace, tmp_path, start_daemon):
    home = tmp_path / "home"
    env = {"HOME": str(home), "XDG_CONFIG_HOME": "", "CODEX_HOME": str(tmp_path / "codex"),
           "PATH": fake_systemctl(tmp_path, answers=False)}
    out = run_cli("doctor", cwd=workspace.root, env=env).stdout.decode()
    assert "fix: sidecar service install" not in out  # it cannot work on this machine
    assert f"fix: run `{SIDECAR} run` under your own supervisor" in out
    for host in ("claude-code", "gemini", "codex"):
        assert run_cli("integrate", host, cwd=workspace.root, env=env).returncode == 0
    (home / ".gemini" / "trustedFolders.json").write_text(
        json.dumps({str(workspace.root): "TRUST_FOLDER"}))
    start_daemon(workspace.root, env={"HOME": str(home)})  # started by hand, not by a service
    result = run_cli("doctor", cwd=workspace.root, env=env)
    out = result.stdout.decode()
    assert "note    every registered workspace is served by a running `sidecar run`; the " \
        "service is not installed, so nothing starts one at login\n" in out, out
    assert "PROBLEM" not in out and result.returncode == 0, out


def test_doctor_notes_an_installed_host_that_is_not_integrated(workspace, tmp_path):
    bin_dir = fake_host(tmp_path / "hostbin", "gemini").parent
    env = {"HOME": str(tmp_path / "home"), "PATH": f"{bin_dir}:{fake_systemctl(tmp_path, True)}"}
    out = run_cli("doctor", cwd=workspace.root, env=env).stdout.decode()
    assert "note    Gemini CLI is installed but not integrated (to use it: sidecar integrate " \
        "gemini)" in out
    assert "PROBLEM Gemini CLI" not in out
