"""`sidecar integrate`: host hook configuration merged in, kept, upgraded and removed.

In process; those that start real processes are in tests/daemon/test_integrate_daemon.py.
"""

from __future__ import annotations

import copy
import hashlib
import json
import tomllib
from pathlib import Path

import pytest

from helpers import SIDECAR, invoke, read_json
from sidecar.hosts.claude_code import host as claude_code
from sidecar.hosts.codex import hooks as codex_hooks
from sidecar.hosts.files import settings as settings_mod

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
            for g in groups for h in g["hooks"] if settings_mod.is_ours(h)]


def test_claude_code_keeps_everything_else_and_upgrades_its_old_entry(workspace):
    settings_path = workspace.root / ".claude" / "settings.local.json"  # this machine's own
    settings_path.parent.mkdir()
    settings_path.write_text(json.dumps(USER_SETTINGS))
    result = invoke("integrate", "claude-code", cwd=workspace.root)
    assert result.returncode == 0, result.stderr
    merged = read_json(settings_path)
    expected_command = f"{SIDECAR} emit --source claude-code"
    assert sorted(ours(merged)) == sorted((e, expected_command) for e in claude_code.EVENTS)
    assert {k: v for k, v in merged.items() if k != "hooks"} == {k: v for k, v in USER_SETTINGS.items() if k != "hooks"}
    assert merged["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    assert merged["hooks"]["SessionStart"][0] == USER_SETTINGS["hooks"]["SessionStart"][0]
    assert merged["hooks"]["Stop"][0]["hooks"] == [{"type": "command", "command": "say done"}]

    before = settings_path.read_bytes()
    again = invoke("integrate", "claude-code", cwd=workspace.root)
    assert b"nothing changed" in again.stdout and settings_path.read_bytes() == before

    removed = invoke("integrate", "claude-code", "--uninstall", cwd=workspace.root)
    assert removed.returncode == 0
    left = read_json(settings_path)
    original = copy.deepcopy(USER_SETTINGS)
    original["hooks"]["Stop"][0]["hooks"] = [{"type": "command", "command": "say done"}]
    assert left == original


def test_claude_code_user_settings(tmp_path, config_home):
    home = tmp_path / "home"
    result = invoke("integrate", "claude-code", "--user", env={"HOME": str(home)}, cwd=tmp_path)
    assert result.returncode == 0
    assert len(ours(read_json(home / ".claude/settings.json"))) == len(claude_code.EVENTS) == 7  # StopFailure and Notification too


def expected_hash(event: str, handler: dict) -> str:
    """The trust hash as Codex 0.169.0's `hooks/list` reports it, computed independently:
    SessionEnd's timeout is clamped to 1 s before hashing (tests/e2e/codex/test_codex_e2e.py asks the
    real Codex for the same hashes)."""
    snake = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit",
             "PostToolUse": "post_tool_use", "Stop": "stop", "SessionEnd": "session_end",
             "PermissionRequest": "permission_request"}[event]
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


def codex_home_with(tmp_path, config: str) -> Path:
    """A CODEX_HOME holding this config.toml."""
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(config)
    return codex_home


def test_codex_hooks_are_written_and_trusted(tmp_path, config_home):
    codex_home = codex_home_with(tmp_path, CODEX_CONFIG)
    (codex_home / "hooks.json").write_text(json.dumps(
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}))
    result = invoke("integrate", "codex", env={"CODEX_HOME": str(codex_home)})
    assert result.returncode == 0, result.stderr
    hooks = read_json(codex_home / "hooks.json")["hooks"]
    assert hooks["Stop"][0]["hooks"][0]["command"] == "say done"
    config = tomllib.loads((codex_home / "config.toml").read_text())
    assert config["model"] == "gpt-5.5" and config["features"] == {"plugins": False, "hooks": True}
    state = config["hooks"]["state"]
    assert state["/elsewhere/hooks.json:stop:0:0"] == {"trusted_hash": "sha256:abc"}
    canonical = str((codex_home / "hooks.json").resolve())
    for event in codex_hooks.EVENTS:
        index = len(hooks[event]) - 1
        handler = hooks[event][index]["hooks"][0]
        assert "matcher" not in hooks[event][index]
        key = f"{canonical}:{codex_hooks.snake(event)}:{index}:0"
        assert state[key]["trusted_hash"] == expected_hash(event, handler)
    assert f"{canonical}:stop:0:0" not in state  # the user's own hook is theirs to trust

    before = (codex_home / "config.toml").read_text()
    assert b"nothing changed" in invoke("integrate", "codex", env={"CODEX_HOME": str(codex_home)}).stdout
    assert (codex_home / "config.toml").read_text() == before

    assert invoke("integrate", "codex", "--uninstall", env={"CODEX_HOME": str(codex_home)}).returncode == 0
    config = tomllib.loads((codex_home / "config.toml").read_text())
    assert config["hooks"]["state"] == {"/elsewhere/hooks.json:stop:0:0": {"trusted_hash": "sha256:abc"}}
    assert read_json(codex_home / "hooks.json") == {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}


@pytest.mark.parametrize("config,message", [
    ("model = \n", b"not valid TOML"),
    ("[features]\nhooks = false\n", b"hooks is off"),  # switched off: not overruled
])
def test_codex_with_a_config_it_cannot_use_changes_nothing(tmp_path, config_home, config, message):
    codex_home = codex_home_with(tmp_path, config)
    result = invoke("integrate", "codex", env={"CODEX_HOME": str(codex_home)})
    assert result.returncode == 1 and message in result.stderr
    assert (codex_home / "config.toml").read_text() == config


@pytest.mark.parametrize("content,message", [
    (b"{oops", b"not valid JSON"),
    (b"[]", b"does not hold a JSON object"),
    (b'{"hooks": []}', b"`hooks` is not an object"),
])
def test_claude_settings_it_cannot_read_or_use_are_left_alone(workspace, content, message):
    path = workspace.root / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_bytes(content)
    result = invoke("integrate", "claude-code", cwd=workspace.root)
    assert result.returncode == 1 and message in result.stderr
    assert path.read_bytes() == content


def test_an_upgrade_from_the_old_marked_block_keeps_what_codex_put_inside_it(tmp_path, config_home):
    old_key = f"{(tmp_path / 'codex' / 'hooks.json').resolve()}:session_start:0:0"
    codex_home = codex_home_with(tmp_path, (
        'model = "gpt-5.5"\n\n[features]\nhooks = true\n\n'
        "# >>> sidecar integrate codex: trust for sidecar's hooks (managed; do not edit)\n"
        f'[hooks.state."{old_key}"]\ntrusted_hash = "sha256:old"\n\n'
        '[mcp_servers.demo]  # added by `codex mcp add` inside the old block\ncommand = "echo"\n'
        "# <<< sidecar integrate codex\n"))
    (codex_home / "hooks.json").write_text(json.dumps({"hooks": {"SessionStart": [
        {"hooks": [{"type": "command", "command": "/old/venv/bin/sidecar emit --source codex"}]}]}}))
    env = {"CODEX_HOME": str(codex_home)}
    assert invoke("integrate", "codex", env=env).returncode == 0
    text = (codex_home / "config.toml").read_text()
    config = tomllib.loads(text)
    assert config["mcp_servers"] == {"demo": {"command": "echo"}}
    assert "# added by `codex mcp add`" in text and ">>> sidecar" not in text
    assert config["hooks"]["state"][old_key]["trusted_hash"] != "sha256:old"  # renewed, not kept
    assert invoke("integrate", "codex", "--uninstall", env=env).returncode == 0
    config = tomllib.loads((codex_home / "config.toml").read_text())
    assert config == {"model": "gpt-5.5", "features": {"hooks": True},
                      "mcp_servers": {"demo": {"command": "echo"}}}


def test_a_project_gemini_integration_calls_sidecar_from_path(workspace):
    result = invoke("integrate", "gemini", "--project", cwd=workspace.root)
    assert result.returncode == 0 and b"from PATH" in result.stderr
    settings = read_json(workspace.root / ".gemini" / "settings.json")
    commands = {h["command"] for groups in settings["hooks"].values() for g in groups for h in g["hooks"]}
    assert commands == {"sidecar emit --source gemini"}


def test_claude_code_goes_where_it_belongs_and_shared_settings_resolve_on_any_machine(workspace):
    committed = workspace.root / ".claude" / "settings.json"
    local = workspace.root / ".claude" / "settings.local.json"
    assert invoke("integrate", "claude-code", cwd=workspace.root).returncode == 0
    assert not committed.exists()  # a committed file never gets this machine's path
    assert {cmd for _, cmd in ours(read_json(local))} == {f"{SIDECAR} emit --source claude-code"}
    shared = invoke("integrate", "claude-code", "--shared", cwd=workspace.root)
    assert shared.returncode == 0 and b"from PATH" in shared.stderr
    assert {cmd for _, cmd in ours(read_json(committed))} == {"sidecar emit --source claude-code"}


def test_an_integration_whose_sidecar_cannot_be_found_changes_nothing_even_with_init(
        tmp_path, config_home, monkeypatch):
    """The hooks would call a `sidecar` by its absolute path: where none can be found, the
    command stops before `--init` makes and registers a workspace."""
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setattr("sys.executable", str(tmp_path / "nowhere" / "python"))
    result = invoke("integrate", "claude-code", "--init", cwd=project,
                    env={"PATH": str(tmp_path / "empty")})
    assert result.returncode == 1
    assert result.stderr == b"sidecar: cannot find the `sidecar` command; install the package first\n"
    assert not (project / ".context").exists() and not (project / ".claude").exists()
    registry = config_home / "workspaces.json"
    assert not registry.exists() or str(project) not in registry.read_text()
