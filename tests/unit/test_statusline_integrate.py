"""`sidecar integrate claude-code --statusline`: sidecar's status line in the settings file the
hooks go to, the user's own kept (run first, with its other keys as they were), and the
file given back byte for byte by `--uninstall`, through links and with its mode."""

from __future__ import annotations

import json
import shlex
import stat
from pathlib import Path

import pytest

from helpers import invoke
from sidecar.hosts import claude_code, claude_statusline
from support.user_files import dotfile, sidecar_hooks, user_env

THEIRS = "~/.claude/statusline.sh --short"
LAYOUTS = {
    "four spaces": '{\n    "model": "opus",\n    "env": {"FOO": "bar"}\n}\n',
    "tabs, CRLF": '{\r\n\t"model": "opus"\r\n}\r\n',
    "one line, no final newline": '{"model":"opus"}',
    "empty object": "{}\n",
    "theirs, two spaces": ('{\n  "statusLine": {\n    "type": "command",\n    "command": '
                           + json.dumps(THEIRS) + ',\n    "padding": 0\n  },\n  "model": "opus"\n}\n'),
    "theirs, one line": '{"statusLine":{"type":"command","command":"echo \\"$USER\\" ok"}}',
}


def run(*args: str, cwd: Path, env: dict[str, str]):
    result = invoke(*args, cwd=cwd, env=env)
    assert b"Traceback" not in result.stderr, result.stderr.decode()
    return result


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return user_env(tmp_path)


def status_line(path: Path) -> dict:
    return json.loads(path.read_text())["statusLine"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_status_line_goes_in_and_comes_out_byte_for_byte(workspace, env, layout):
    local = workspace.root / ".claude" / "settings.local.json"
    local.parent.mkdir()
    original = LAYOUTS[layout].encode()
    local.write_bytes(original)
    before = json.loads(original).get("statusLine")
    done = run("integrate", "claude-code", "--statusline", cwd=workspace.root, env=env)
    assert done.returncode == 0, done.stderr
    assert b"the status line runs `sidecar status --line`" in done.stdout
    line = status_line(local)
    argv = shlex.split(line["command"])
    assert argv[1:5] == ["status", "--line", "--source", "claude-code"]
    assert Path(argv[0]).name == "sidecar" and Path(argv[0]).is_absolute()
    if before is None:
        assert line == {"type": "command", "command": line["command"]} and "--then" not in argv
    else:  # theirs kept: run first, by the very command they wrote; their other keys as they were
        assert argv[5:] == ["--then", before["command"]]
        assert {k: v for k, v in line.items() if k != "command"} == \
            {k: v for k, v in before.items() if k != "command"}
    assert sorted(sidecar_hooks(local)) == sorted(claude_code.EVENTS)
    again = run("integrate", "claude-code", "--statusline", cwd=workspace.root, env=env)
    assert b"already so; nothing changed" in again.stdout
    assert status_line(local) == line  # not chained to itself
    assert run("integrate", "claude-code", "--uninstall", cwd=workspace.root, env=env).returncode == 0
    assert local.read_bytes() == original


def test_a_symlinked_settings_file_keeps_its_link_and_mode(workspace, env, tmp_path):
    original = '{\n    "statusLine": {"type": "command", "command": "mine"}\n}\n'
    target = dotfile(tmp_path, "settings.local.json", original, 0o640)
    local = workspace.root / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.symlink_to(target)
    assert run("integrate", "claude-code", "--statusline", cwd=workspace.root, env=env).returncode == 0
    assert local.is_symlink() and local.resolve() == target
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert shlex.split(status_line(target)["command"])[-2:] == ["--then", "mine"]
    assert run("integrate", "claude-code", "--uninstall", cwd=workspace.root, env=env).returncode == 0
    assert local.is_symlink() and target.read_text() == original
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_file_sidecar_created_is_removed_again(workspace, env):
    local = workspace.root / ".claude" / "settings.local.json"
    assert run("integrate", "claude-code", "--statusline", cwd=workspace.root, env=env).returncode == 0
    assert "statusLine" in json.loads(local.read_text())
    assert run("integrate", "claude-code", "--uninstall", cwd=workspace.root, env=env).returncode == 0
    assert not local.exists()


def test_the_user_settings_take_it_with_user(workspace, env):
    user = Path(env["HOME"]) / ".claude" / "settings.json"
    assert run("integrate", "claude-code", "--user", "--statusline", cwd=workspace.root,
               env=env).returncode == 0
    assert "status --line" in status_line(user)["command"]
    assert not (workspace.root / ".claude").exists()


@pytest.mark.parametrize(("original", "said"), [
    ('{"statusLine": {"type": "static", "text": "hi"}}\n', b"not a command sidecar can run first"),
    ('{"statusLine": "echo hi"}\n', b"not a command sidecar can run first"),
    # escapes JSON does not need: putting the command back could not give these bytes back
    ('{"statusLine": {"type": "command", "command": "\\u0065cho hi"}}\n', b"set its command to"),
])
def test_a_status_line_that_cannot_be_kept_whole_is_left_alone(workspace, env, original, said):
    local = workspace.root / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text(original)
    done = run("integrate", "claude-code", "--statusline", cwd=workspace.root, env=env)
    assert done.returncode != 0 and said in done.stderr, done.stderr
    assert local.read_text() == original  # not even the hooks: nothing was written


def test_only_sidecars_own_command_is_taken_for_its_own():
    assert claude_statusline.parse("/x/bin/sidecar status --line --source claude-code") == (True, None)
    assert claude_statusline.parse("sidecar status --line --then 'a b'") == (True, "a b")
    for theirs in ("sidecar status", "my-sidecar status --line", "echo sidecar status --line",
                   "sidecar 'unclosed", None, 3):
        assert claude_statusline.parse(theirs)[0] is False
