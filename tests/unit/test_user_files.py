"""Other programs' files: edited where they are, in their own layout, links and modes kept.

Integrating and then uninstalling gives the user's file back byte for byte; a file reached
through the user's symlink (dotfiles, stow) is edited at its target and the link stays; a
read-only file, or one of a shape sidecar cannot edit, is refused with one line.

In process; those that start real processes are in tests/daemon/test_user_files_daemon.py.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from helpers import read_json, write_file
from sidecar.hosts.claude_code import host as claude_code
from support.user_files import dotfile, run, sidecar_hooks

LAYOUTS = {
    "four spaces, one-line objects": (
        '{\n    "permissions": {"allow": ["Bash(ls:*)"], "deny": []},\n'
        '    "env": {"FOO": "bar"},\n    "model": "opus"\n}\n'),
    "tabs": '{\n\t"permissions": {\n\t\t"allow": [\n\t\t\t"Bash(ls:*)"\n\t\t]\n\t}\n}\n',
    "CRLF": '{\r\n  "model": "opus",\r\n  "env": {\r\n    "FOO": "bar"\r\n  }\r\n}\r\n',
    "one line, no final newline": '{"model":"opus","env":{"FOO":"bar"}}',
    "the user's own hooks": (
        '{\n    "hooks": {\n        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],\n'
        '        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", '
        '"command": "guard.sh"}]}]\n    }\n}\n'),
    "empty object": "{}\n",
    "byte-order mark": '\ufeff{ "model" : "opus" }\n',
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_integrate_then_uninstall_gives_the_users_settings_back_byte_for_byte(local, integrate,
                                                                               layout):
    original = write_file(local, LAYOUTS[layout]).read_bytes()
    assert integrate("claude-code").returncode == 0
    written = local.read_bytes()
    assert sorted(sidecar_hooks(local)) == sorted(claude_code.EVENTS)
    if layout.startswith("four spaces"):  # the user's lines are still there, as they were
        assert b'    "permissions": {"allow": ["Bash(ls:*)"], "deny": []},\n' in written
        assert b'\n        "SessionStart": [\n            {\n' in written  # their indent unit
    if layout == "CRLF":
        assert b"\n" not in written.replace(b"\r\n", b"")
    if layout == "tabs":
        assert b'\n\t"hooks": {\n\t\t"SessionStart"' in written
    assert integrate("claude-code", "--uninstall").returncode == 0
    assert local.read_bytes() == original


def test_gemini_settings_with_comments_keep_them_and_come_back_whole(env, integrate):
    original = ('{\n  // my theme\n  "ui": {"theme": "dark"}, /* the model */\n'
                '  "model": {"name": "gemini-2.5-pro"}\n}\n')
    settings = write_file(Path(env["HOME"]) / ".gemini" / "settings.json", original)
    assert integrate("gemini").returncode == 0
    text = settings.read_text()
    assert "// my theme" in text and "/* the model */" in text
    assert len(sidecar_hooks(settings, comments=True)) == 6  # Notification too
    assert integrate("gemini", "--uninstall").returncode == 0
    assert settings.read_text() == original


def test_a_symlinked_settings_file_is_edited_at_its_target_keeping_link_and_mode(
        local, integrate, tmp_path):
    original = '{\n    "model": "opus"\n}\n'
    target = dotfile(tmp_path, "settings.local.json", original, 0o664)
    local.parent.mkdir()
    local.symlink_to(target)
    assert integrate("claude-code").returncode == 0
    assert local.is_symlink() and local.resolve() == target
    assert stat.S_IMODE(target.stat().st_mode) == 0o664
    assert sidecar_hooks(target) == claude_code.EVENTS
    assert integrate("claude-code", "--uninstall").returncode == 0
    assert local.is_symlink() and target.read_text() == original
    assert stat.S_IMODE(target.stat().st_mode) == 0o664


def test_codex_files_behind_links_stay_links_with_their_modes(env, integrate, tmp_path):
    codex_home = Path(env["CODEX_HOME"])
    codex_home.mkdir()
    config = dotfile(tmp_path, "config.toml", '# mine\nmodel = "gpt-5.5"\n', 0o640)
    hooks = dotfile(tmp_path, "hooks.json",
                    '{\n    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}\n}\n',
                    0o644)
    (codex_home / "config.toml").symlink_to(config)
    (codex_home / "hooks.json").symlink_to(hooks)
    before = {p: p.read_bytes() for p in (config, hooks)}
    assert integrate("codex").returncode == 0
    for link, target, mode in ((codex_home / "config.toml", config, 0o640),
                               (codex_home / "hooks.json", hooks, 0o644)):
        assert link.is_symlink() and link.resolve() == target
        assert stat.S_IMODE(target.stat().st_mode) == mode
    assert "trusted_hash" in config.read_text() and len(sidecar_hooks(hooks)) == 6
    assert integrate("codex", "--uninstall").returncode == 0
    assert {p: p.read_bytes() for p in (config, hooks)} == before


def test_sidecars_own_config_toml_behind_a_link_stays_one(workspace, env, tmp_path, config_home):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\n")
    (bin_dir / "claude").chmod(0o755)
    env = {**env, "PATH": f"{bin_dir}:{env['PATH']}"}
    own = config_home / "config.toml"
    target = dotfile(tmp_path, "sidecar.toml", own.read_text(), 0o644)
    own.unlink()
    own.symlink_to(target)
    result = run("integrate", "claude-code", cwd=workspace.root, env=env)
    assert result.returncode == 0 and b"resume runs" in result.stdout
    assert own.is_symlink() and stat.S_IMODE(target.stat().st_mode) == 0o644
    assert str(bin_dir / "claude") in target.read_text()


@pytest.mark.parametrize("host", ["claude-code", "gemini"])
def test_a_read_only_settings_file_is_refused_in_one_line_and_left_alone(env, local, integrate,
                                                                         host):
    path = local if host == "claude-code" else Path(env["HOME"]) / ".gemini" / "settings.json"
    write_file(path, '{"model": "opus"}\n').chmod(0o444)
    result = integrate(host)
    assert result.returncode == 1
    assert result.stderr.decode().count("\n") == 1 and b"read-only (mode 0444)" in result.stderr
    assert path.read_text() == '{"model": "opus"}\n' and stat.S_IMODE(path.stat().st_mode) == 0o444


@pytest.mark.parametrize("thing", ["link loop", "FIFO", "key twice"])
def test_a_settings_file_sidecar_cannot_edit_is_one_line(local, integrate, thing):
    local.parent.mkdir()
    if thing == "link loop":
        local.symlink_to(local)
    elif thing == "FIFO":
        os.mkfifo(local)  # never opened for a read that would wait
    else:
        local.write_text('{"hooks": {}, "model": "a", "hooks": {}}\n')
    result = integrate("claude-code")
    assert result.returncode == 1 and result.stderr.decode().count("\n") == 1
    said = {"link loop": b"cannot be read", "FIFO": b"is not a regular file",
            "key twice": b"has a key twice; fix it first"}[thing]
    assert said in result.stderr


@pytest.mark.parametrize("hooks", [{"SessionEnd": "x"}, {"Stop": {"hooks": []}}])
def test_an_event_that_is_not_a_list_is_refused_in_one_line(local, integrate, hooks):
    write_file(local, json.dumps({"hooks": hooks}))
    result = integrate("claude-code")
    assert result.returncode == 1 and result.stderr.decode().count("\n") == 1
    assert b"is not a list; fix it first" in result.stderr
    assert read_json(local) == {"hooks": hooks}


def test_folders_sidecar_made_go_once_empty_and_the_users_stay(workspace, integrate):
    assert integrate("opencode").returncode == 0
    assert (workspace.root / ".opencode" / "plugins" / "sidecar.js").is_file()
    result = integrate("opencode", "--uninstall")
    assert result.returncode == 0 and not (workspace.root / ".opencode").exists()
    assert b"sidecar created it" in result.stdout

    mine = write_file(workspace.root / ".opencode" / "opencode.json", "{}\n")  # their folder, from before
    assert integrate("opencode").returncode == 0
    (workspace.root / ".opencode" / "plugins" / "notes.txt").write_text("mine\n")
    assert integrate("opencode", "--uninstall").returncode == 0
    assert mine.read_text() == "{}\n"  # not sidecar's: stays, though it holds `{}`
    assert (workspace.root / ".opencode" / "plugins" / "notes.txt").read_text() == "mine\n"
    assert not (workspace.root / ".opencode" / "plugins" / "sidecar.js").exists()
