"""`sidecar integrate claude-code --statusline`: sidecar's status line in the settings file the
hooks go to, the user's own kept (run first, with its other keys as they were), and the
file given back byte for byte by `--uninstall`, through links and with its mode."""

from __future__ import annotations

import json
import shlex
import stat
from pathlib import Path

import pytest

from helpers import write_file
from sidecar.hosts.claude_code import host as claude_code
from sidecar.hosts.claude_code import statusline as claude_statusline
from support.user_files import dotfile, run, sidecar_hooks

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


def status_line(path: Path) -> dict:
    return json.loads(path.read_text())["statusLine"]


def argv(path: Path) -> list[str]:
    """The status line's command, as a shell splits it."""
    return shlex.split(status_line(path)["command"])


def line_of(command: str) -> str:
    """A settings file whose status line runs `command`."""
    return json.dumps({"statusLine": {"type": "command", "command": command}}) + "\n"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_status_line_goes_in_and_comes_out_byte_for_byte(local, integrate, layout):
    original = write_file(local, LAYOUTS[layout]).read_bytes()
    before = json.loads(original).get("statusLine")
    done = integrate("claude-code", "--statusline")
    assert done.returncode == 0, done.stderr
    assert b"the status line runs `sidecar status --line`" in done.stdout
    line = status_line(local)
    words = argv(local)
    assert words[1:5] == ["status", "--line", "--source", "claude-code"]
    assert Path(words[0]).name == "sidecar" and Path(words[0]).is_absolute()
    if before is None:
        assert line == {"type": "command", "command": line["command"], "refreshInterval": 2}
        assert "--then" not in words
    else:  # theirs kept: run first, by the very command they wrote; their other keys as they were
        assert words[5:] == ["--then", before["command"]]
        assert {k: v for k, v in line.items() if k != "command"} == \
            {**{k: v for k, v in before.items() if k != "command"}, "refreshInterval": 2}
    assert sorted(sidecar_hooks(local)) == sorted(claude_code.EVENTS)
    again = integrate("claude-code", "--statusline")
    assert b"already so; nothing changed" in again.stdout
    assert status_line(local) == line  # not chained to itself
    assert integrate("claude-code", "--uninstall").returncode == 0
    assert local.read_bytes() == original


def test_a_symlinked_settings_file_keeps_its_link_and_mode(local, integrate, tmp_path):
    original = '{\n    "statusLine": {"type": "command", "command": "mine"}\n}\n'
    target = dotfile(tmp_path, "settings.local.json", original, 0o640)
    local.parent.mkdir()
    local.symlink_to(target)
    assert integrate("claude-code", "--statusline").returncode == 0
    assert local.is_symlink() and local.resolve() == target
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert argv(target)[-2:] == ["--then", "mine"]
    assert integrate("claude-code", "--uninstall").returncode == 0
    assert local.is_symlink() and target.read_text() == original
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_file_sidecar_created_is_removed_again(local, integrate):
    assert integrate("claude-code", "--statusline").returncode == 0
    assert "statusLine" in json.loads(local.read_text())
    assert integrate("claude-code", "--uninstall").returncode == 0
    assert not local.exists()


def test_the_user_settings_take_it_with_user(workspace, env, integrate):
    assert integrate("claude-code", "--user", "--statusline").returncode == 0
    assert "status --line" in status_line(settings_file("user", workspace.root, env))["command"]
    assert not (workspace.root / ".claude").exists()


@pytest.mark.parametrize(("original", "said"), [
    ('{"statusLine": {"type": "static", "text": "hi"}}\n', b"not a command sidecar can run first"),
    ('{"statusLine": "echo hi"}\n', b"not a command sidecar can run first"),
    # escapes JSON does not need: putting the command back could not give these bytes back
    ('{"statusLine": {"type": "command", "command": "\\u0065cho hi"}}\n', b"set its command to"),
])
def test_a_status_line_that_cannot_be_kept_whole_is_left_alone(local, integrate, original, said):
    write_file(local, original)
    done = integrate("claude-code", "--statusline")
    assert done.returncode != 0 and said in done.stderr, done.stderr
    assert local.read_text() == original  # not even the hooks: nothing was written


def test_only_sidecars_own_command_is_taken_for_its_own():
    assert claude_statusline.parse("/x/bin/sidecar status --line --source claude-code") == (True, None)
    assert claude_statusline.parse("sidecar status --line --then 'a b'") == (True, "a b")
    for theirs in ("sidecar status", "my-sidecar status --line", "echo sidecar status --line",
                   "sidecar 'unclosed", None, 3):
        assert claude_statusline.parse(theirs)[0] is False


def test_a_file_it_cannot_give_back_whole_is_left_alone_with_a_clear_error(local, integrate):
    write_file(local, "{\n}\n")  # adding a key and taking it out again gives `{}`
    done = integrate("claude-code", "--statusline")
    assert done.returncode != 0 and b"byte for byte" in done.stderr, done.stderr
    assert b"statusLine" in done.stderr and b"status --line --source claude-code" in done.stderr
    assert local.read_text() == "{\n}\n"


def settings_file(where: str, root: Path, env: dict[str, str]) -> Path:
    return Path(env["HOME"]) / ".claude" / "settings.json" if where == "user" \
        else root / ".claude" / "settings.json"


BELOW = '{\n  "statusLine": {"type": "command", "command": "~/bin/line.sh", "padding": 1}\n}\n'


@pytest.mark.parametrize("where", ["user", "shared"])
@pytest.mark.parametrize("local_before", [None, '{\n  "model": "opus"\n}\n'])
def test_a_status_line_of_a_lower_ranked_file_is_run_first_not_overridden(workspace, env, local,
                                                                         integrate, where,
                                                                         local_before):
    """Claude Code ranks the project's local settings above its shared ones and the user's: a
    status line sidecar adds there would hide the user's own, so theirs runs first."""
    lower = write_file(settings_file(where, workspace.root, env), BELOW)
    if local_before is not None:
        write_file(local, local_before)
    done = integrate("claude-code", "--statusline")
    assert done.returncode == 0, done.stderr
    assert f"~/bin/line.sh of {lower}".encode() in done.stdout, done.stdout
    line = status_line(local)
    assert shlex.split(line["command"])[4:] == ["claude-code", "--then", "~/bin/line.sh"]
    assert line["padding"] == 1  # as Claude Code showed theirs
    again = integrate("claude-code", "--statusline")
    assert b"already so; nothing changed" in again.stdout and status_line(local) == line
    assert lower.read_text() == BELOW  # never written
    assert integrate("claude-code", "--uninstall").returncode == 0
    assert lower.read_text() == BELOW
    assert (local.read_text() if local.exists() else None) == local_before


def test_the_nearest_lower_status_line_is_the_one_claude_code_shows(workspace, env, local,
                                                                   integrate):
    write_file(settings_file("user", workspace.root, env), line_of("users"))
    shared = write_file(settings_file("shared", workspace.root, env), line_of("projects"))
    assert integrate("claude-code", "--statusline").returncode == 0
    assert argv(local)[-2:] == ["--then", "projects"]
    assert integrate("claude-code", "--uninstall").returncode == 0
    shared.write_text('{"model": "opus"}\n')
    # the local file is this machine's: it takes the user's line too, when it is the nearest
    assert integrate("claude-code", "--statusline").returncode == 0
    assert argv(local)[-2:] == ["--then", "users"]
    assert integrate("claude-code", "--uninstall").returncode == 0


PRIVATE = '{"statusLine": {"type": "command", "command": "~/bin/my-line --token=abc123"}}\n'


def test_the_committed_settings_never_take_the_users_own_line(workspace, env, local, integrate):
    """The committed settings go to every collaborator: the user's own status line (a
    command of their machine, maybe a secret in it) is never copied into them."""
    user = write_file(settings_file("user", workspace.root, env), PRIVATE)
    shared = write_file(settings_file("shared", workspace.root, env), '{"model": "opus"}\n')
    done = integrate("claude-code", "--shared", "--statusline")
    assert done.returncode == 0, done.stderr
    assert b"abc123" not in shared.read_bytes() and b"my-line" not in shared.read_bytes()
    assert argv(shared) == ["sidecar", "status", "--line", "--source", "claude-code"]
    assert f"hides in this project the status line of {user}".encode() in done.stdout, done.stdout
    assert b"abc123" not in done.stdout
    assert user.read_text() == PRIVATE
    # as it says: this machine's own file shows both (sidecar's committed line adds nothing)
    assert integrate("claude-code", "--statusline").returncode == 0
    assert argv(local)[-2:] == ["--then", "~/bin/my-line --token=abc123"]
    assert integrate("claude-code", "--uninstall").returncode == 0
    assert integrate("claude-code", "--shared", "--uninstall").returncode == 0
    assert shared.read_text() == '{"model": "opus"}\n'


def test_the_users_settings_take_no_projects_line(workspace, env, integrate):
    write_file(settings_file("shared", workspace.root, env), line_of("projects"))
    assert integrate("claude-code", "--user", "--statusline").returncode == 0
    assert "--then" not in argv(settings_file("user", workspace.root, env))


def test_sidecars_own_line_below_is_not_run_inside_itself(workspace, env, local, integrate):
    write_file(settings_file("user", workspace.root, env), line_of("mine"))
    assert integrate("claude-code", "--user", "--statusline").returncode == 0
    assert integrate("claude-code", "--statusline").returncode == 0
    words = argv(local)
    assert words[5:] == ["--then", "mine"] and words.count("status") == 1


def test_a_lower_status_line_that_is_no_command_stops_it_with_nothing_written(workspace, env,
                                                                             integrate):
    user = write_file(settings_file("user", workspace.root, env), '{"statusLine": "echo hi"}\n')
    done = integrate("claude-code", "--statusline")
    assert done.returncode != 0 and str(user).encode() in done.stderr, done.stderr
    assert b"not a command sidecar can run first" in done.stderr
    assert not (workspace.root / ".claude").exists()


HAND_WRITTEN = '{\n  "statusLine": {"type": "command", "command": "sidecar status --line --source claude-code"}\n}\n'


@pytest.mark.parametrize("statusline", [False, True])
def test_a_status_line_the_user_wrote_by_hand_stays_on_uninstall(local, integrate, statusline):
    write_file(local, HAND_WRITTEN)
    done = integrate("claude-code", *(["--statusline"] if statusline else []))
    assert done.returncode == 0, done.stderr
    if statusline:
        assert b"yours, left as it is" in done.stdout, done.stdout
    assert status_line(local) == json.loads(HAND_WRITTEN)["statusLine"]
    assert integrate("claude-code", "--uninstall").returncode == 0
    assert local.read_text() == HAND_WRITTEN


def test_the_status_line_sidecar_wrote_goes_with_sidecar_uninstall(workspace, env, local,
                                                                   integrate):
    original = '{\n  "statusLine": {"type": "command", "command": "mine"}\n}\n'
    write_file(local, original)
    assert integrate("claude-code", "--statusline").returncode == 0
    assert run("uninstall", cwd=workspace.root, env=env).returncode == 0
    assert local.read_text() == original
