"""`sidecar integrate`: host hook configuration merged in, kept, upgraded and removed."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import tomllib
from pathlib import Path

import pytest

from helpers import SIDECAR, read_json, run_cli
from sidecar.hosts import claude_code, codex, gemini
from sidecar.hosts import settings as integrate

USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(echo:*)"], "deny": []},
    "env": {"FOO": "bar"},
    "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "notify-send hi"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 5}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "say done"},
                            {"type": "command", "command": "/old/venv/bin/sidecar emit --source claude-code"}]}],
    },
}


def ours(settings: dict) -> list[tuple[str, str]]:
    return [(event, h["command"]) for event, groups in settings.get("hooks", {}).items()
            for g in groups for h in g["hooks"] if integrate.is_ours(h)]


def test_claude_code_keeps_everything_else_and_upgrades_its_old_entry(workspace):
    settings_path = workspace.root / ".claude" / "settings.local.json"  # this machine's own
    settings_path.parent.mkdir()
    settings_path.write_text(json.dumps(USER_SETTINGS))
    result = run_cli("integrate", "claude-code", cwd=workspace.root)
    assert result.returncode == 0, result.stderr
    merged = read_json(settings_path)
    expected_command = f"{SIDECAR} emit --source claude-code"
    assert sorted(ours(merged)) == sorted((e, expected_command) for e in claude_code.EVENTS)
    assert {k: v for k, v in merged.items() if k != "hooks"} == {k: v for k, v in USER_SETTINGS.items() if k != "hooks"}
    assert merged["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    assert merged["hooks"]["SessionStart"][0] == USER_SETTINGS["hooks"]["SessionStart"][0]
    assert merged["hooks"]["Stop"][0]["hooks"] == [{"type": "command", "command": "say done"}]

    before = settings_path.read_bytes()
    again = run_cli("integrate", "claude-code", cwd=workspace.root)
    assert b"nothing changed" in again.stdout and settings_path.read_bytes() == before

    removed = run_cli("integrate", "claude-code", "--uninstall", cwd=workspace.root)
    assert removed.returncode == 0
    left = read_json(settings_path)
    original = copy.deepcopy(USER_SETTINGS)
    original["hooks"]["Stop"][0]["hooks"] = [{"type": "command", "command": "say done"}]
    assert left == original


def test_claude_code_user_settings(tmp_path, config_home):
    home = tmp_path / "home"
    result = run_cli("integrate", "claude-code", "--user", env={"HOME": str(home)}, cwd=tmp_path)
    assert result.returncode == 0
    assert len(ours(read_json(home / ".claude/settings.json"))) == len(claude_code.EVENTS) == 6  # StopFailure too


def test_a_broken_settings_file_is_left_alone(workspace):
    path = workspace.root / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_text("{oops")
    result = run_cli("integrate", "claude-code", cwd=workspace.root)
    assert result.returncode == 1 and b"not valid JSON" in result.stderr
    assert path.read_text() == "{oops"


def expected_hash(event: str, handler: dict) -> str:
    """The trust hash as Codex 0.169.0's `hooks/list` reports it, computed independently:
    SessionEnd's timeout is clamped to 1 s before hashing (tests/e2e/codex/test_codex_e2e.py asks the
    real Codex for the same hashes)."""
    snake = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit",
             "PostToolUse": "post_tool_use", "Stop": "stop", "SessionEnd": "session_end"}[event]
    timeout = handler.get("timeout", 600)
    if snake == "session_end":
        timeout = min(timeout, 1)
    body = {"event_name": snake, "hooks": [{"type": "command", "command": handler["command"],
                                            "timeout": timeout, "async": False}]}
    return "sha256:" + hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


CODEX_CONFIG = '''model = "gpt-5.5"

[model_providers.stub]
base_url = "http://127.0.0.1:9/v1"

[features]
plugins = false

[hooks.state."/elsewhere/hooks.json:stop:0:0"]
trusted_hash = "sha256:abc"
'''


def test_codex_hooks_are_written_and_trusted(tmp_path, config_home):
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(CODEX_CONFIG)
    (codex_home / "hooks.json").write_text(json.dumps(
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}))
    result = run_cli("integrate", "codex", env={"CODEX_HOME": str(codex_home)})
    assert result.returncode == 0, result.stderr
    hooks = read_json(codex_home / "hooks.json")["hooks"]
    assert hooks["Stop"][0]["hooks"][0]["command"] == "say done"
    config = tomllib.loads((codex_home / "config.toml").read_text())
    assert config["model"] == "gpt-5.5" and config["features"] == {"plugins": False, "hooks": True}
    state = config["hooks"]["state"]
    assert state["/elsewhere/hooks.json:stop:0:0"] == {"trusted_hash": "sha256:abc"}
    canonical = str((codex_home / "hooks.json").resolve())
    for event in codex.EVENTS:
        index = len(hooks[event]) - 1
        handler = hooks[event][index]["hooks"][0]
        assert "matcher" not in hooks[event][index]
        key = f"{canonical}:{codex.snake(event)}:{index}:0"
        assert state[key]["trusted_hash"] == expected_hash(event, handler)
    assert f"{canonical}:stop:0:0" not in state  # the user's own hook is theirs to trust

    before = (codex_home / "config.toml").read_text()
    assert b"nothing changed" in run_cli("integrate", "codex", env={"CODEX_HOME": str(codex_home)}).stdout
    assert (codex_home / "config.toml").read_text() == before

    assert run_cli("integrate", "codex", "--uninstall", env={"CODEX_HOME": str(codex_home)}).returncode == 0
    config = tomllib.loads((codex_home / "config.toml").read_text())
    assert config["hooks"]["state"] == {"/elsewhere/hooks.json:stop:0:0": {"trusted_hash": "sha256:abc"}}
    assert read_json(codex_home / "hooks.json") == {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}


def test_codex_with_a_broken_config_changes_nothing(tmp_path, config_home):
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text("model = \n")
    result = run_cli("integrate", "codex", env={"CODEX_HOME": str(codex_home)})
    assert result.returncode == 1 and b"not valid TOML" in result.stderr
    assert (codex_home / "config.toml").read_text() == "model = \n"


def fake_systemctl(tmp_path, answers: bool) -> str:
    """A PATH whose systemctl has a user manager behind it (or, like a container's, none)."""
    bin_dir = tmp_path / ("withbus" if answers else "nobus")
    bin_dir.mkdir()
    body = ("exit 0\n" if answers else
            'echo "Failed to connect to bus: No medium found" >&2\nexit 1\n')
    (bin_dir / "systemctl").write_text("#!/bin/sh\n" + body)
    (bin_dir / "systemctl").chmod(0o755)
    return f"{bin_dir}:{Path(SIDECAR).parent}:{os.environ['PATH']}"


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


@pytest.mark.parametrize("content,message", [
    (b"[]", b"does not hold a JSON object"),
    (b'{"hooks": []}', b"`hooks` is not an object"),
])
def test_claude_settings_of_the_wrong_shape_are_left_alone(workspace, content, message):
    path = workspace.root / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_bytes(content)
    result = run_cli("integrate", "claude-code", cwd=workspace.root)
    assert result.returncode == 1 and message in result.stderr
    assert path.read_bytes() == content


def test_codex_with_hooks_switched_off_is_not_overruled(tmp_path, config_home):
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text("[features]\nhooks = false\n")
    result = run_cli("integrate", "codex", env={"CODEX_HOME": str(codex_home)})
    assert result.returncode == 1 and b"hooks is off" in result.stderr
    assert (codex_home / "config.toml").read_text() == "[features]\nhooks = false\n"


def test_an_upgrade_from_the_old_marked_block_keeps_what_codex_put_inside_it(tmp_path, config_home):
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    hooks_path = codex_home / "hooks.json"
    hooks_path.write_text(json.dumps({"hooks": {"SessionStart": [
        {"hooks": [{"type": "command", "command": "/old/venv/bin/sidecar emit --source codex"}]}]}}))
    old_key = f"{hooks_path.resolve()}:session_start:0:0"
    (codex_home / "config.toml").write_text(
        'model = "gpt-5.5"\n\n[features]\nhooks = true\n\n'
        "# >>> sidecar integrate codex: trust for sidecar's hooks (managed; do not edit)\n"
        f'[hooks.state."{old_key}"]\ntrusted_hash = "sha256:old"\n\n'
        '[mcp_servers.demo]  # added by `codex mcp add` inside the old block\ncommand = "echo"\n'
        "# <<< sidecar integrate codex\n")
    env = {"CODEX_HOME": str(codex_home)}
    assert run_cli("integrate", "codex", env=env).returncode == 0
    text = (codex_home / "config.toml").read_text()
    config = tomllib.loads(text)
    assert config["mcp_servers"] == {"demo": {"command": "echo"}}
    assert "# added by `codex mcp add`" in text and ">>> sidecar" not in text
    assert config["hooks"]["state"][old_key]["trusted_hash"] != "sha256:old"  # renewed, not kept
    assert run_cli("integrate", "codex", "--uninstall", env=env).returncode == 0
    config = tomllib.loads((codex_home / "config.toml").read_text())
    assert config == {"model": "gpt-5.5", "features": {"hooks": True},
                      "mcp_servers": {"demo": {"command": "echo"}}}


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


def test_a_project_gemini_integration_calls_sidecar_from_path(workspace):
    result = run_cli("integrate", "gemini", "--project", cwd=workspace.root)
    assert result.returncode == 0 and b"from PATH" in result.stderr
    settings = read_json(workspace.root / ".gemini" / "settings.json")
    commands = {h["command"] for groups in settings["hooks"].values() for g in groups for h in g["hooks"]}
    assert commands == {"sidecar emit --source gemini"}


def test_claude_code_goes_where_it_belongs_and_shared_settings_resolve_on_any_machine(workspace):
    committed = workspace.root / ".claude" / "settings.json"
    local = workspace.root / ".claude" / "settings.local.json"
    assert run_cli("integrate", "claude-code", cwd=workspace.root).returncode == 0
    assert not committed.exists()  # a committed file never gets this machine's path
    assert {cmd for _, cmd in ours(read_json(local))} == {f"{SIDECAR} emit --source claude-code"}
    shared = run_cli("integrate", "claude-code", "--shared", cwd=workspace.root)
    assert shared.returncode == 0 and b"from PATH" in shared.stderr
    assert {cmd for _, cmd in ours(read_json(committed))} == {"sidecar emit --source claude-code"}


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
    assert "ok      every registered workspace is served by a running `sidecar run`" in out, out
    assert "PROBLEM" not in out and result.returncode == 0, out


def test_doctor_notes_an_installed_host_that_is_not_integrated(workspace, tmp_path):
    bin_dir = tmp_path / "hostbin"
    bin_dir.mkdir()
    (bin_dir / "gemini").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "gemini").chmod(0o755)
    env = {"HOME": str(tmp_path / "home"), "PATH": f"{bin_dir}:{fake_systemctl(tmp_path, True)}"}
    out = run_cli("doctor", cwd=workspace.root, env=env).stdout.decode()
    assert "note    Gemini CLI is installed but not integrated (to use it: sidecar integrate " \
        "gemini)" in out
    assert "PROBLEM Gemini CLI" not in out
