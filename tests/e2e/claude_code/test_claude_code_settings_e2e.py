"""What `sidecar integrate claude-code --statusline` leaves in a settings file, loaded by the
real Claude Code 2.1.328 (offline, against a loopback stub of its API) after the integrate and
after the uninstall. Claude Code skips a file it cannot load whole, the user's permission rules
with it, and says so: whatever the user added to sidecar's status line in between, `claude -p`
must print no settings error, and the file must be the user's again.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_claude_code_e2e import claude_binary, claude_env, run_claude
from test_claude_code_needs_input_e2e import claude_home, claude_in_tmux

from helpers import run_cli, wait_until
from stubs.anthropic_stub import AnthropicStub

pytestmark = pytest.mark.e2e

THEIRS = {"type": "command", "command": "echo line-of-the-user"}
PERMISSIONS = {"permissions": {"allow": ["Bash(ls)"]}}

# (the file sidecar writes, as the user had it (None: none), their own line in
# ~/.claude/settings.json, the flags, what they set by hand in the status line sidecar wrote,
# the file's value after the uninstall (None: no file))
ROUND_TRIPS = {
    "a line sidecar added, the user's refreshInterval in it":
        (None, None, [], {"refreshInterval": 5}, None),
    "a line sidecar added to the user's file, their padding in it":
        (PERMISSIONS, None, [], {"padding": 1}, PERMISSIONS),
    "the user's own line run first, their padding added to it":
        ({"statusLine": THEIRS}, None, [], {"padding": 2}, {"statusLine": {**THEIRS, "padding": 2}}),
    "the user's line of ~/.claude run first, their key in the copy":
        (PERMISSIONS, THEIRS, [], {"hideVimModeIndicator": True}, PERMISSIONS),
    "the user's settings (--user), their refreshInterval in sidecar's line":
        (PERMISSIONS, None, ["--user"], {"refreshInterval": 9}, PERMISSIONS),
}


def settings_errors(claude: Path, root: Path, env: dict[str, str]) -> str:
    """What `claude -p` says of the settings files it could not load ('' if none)."""
    done = run_claude(claude, root, env, "-p", "hello")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    said = done.stderr.decode()
    return said if "did not load" in said or "Settings Error" in said else ""


def working(screen: str) -> str | None:
    """The seconds of `working N s` in the status line on `screen`, if it says so."""
    found = re.search(r"^\s*working (\d+) s\s*$", screen, re.M)
    return found.group(1) if found else None


@pytest.mark.parametrize("trip", ROUND_TRIPS)
def test_claude_code_loads_the_file_after_integrate_and_after_uninstall(workspace, tmp_path, trip):
    before, users_line, flags, by_hand, after = ROUND_TRIPS[trip]
    claude = claude_binary()
    home = tmp_path / "home"
    user = home / ".claude" / "settings.json"
    user.parent.mkdir(parents=True)
    if users_line is not None:
        user.write_text(json.dumps({"statusLine": users_line}, indent=2) + "\n")
    place = user if "--user" in flags else workspace.root / ".claude" / "settings.local.json"
    if before is not None:
        place.parent.mkdir(exist_ok=True)
        place.write_text(json.dumps(before, indent=2) + "\n")
    with AnthropicStub() as stub:
        env = claude_env(home, stub.url)
        done = run_cli("integrate", "claude-code", "--statusline", *flags, cwd=workspace.root,
                       env=env)
        assert done.returncode == 0, done.stderr
        settings = json.loads(place.read_text())
        assert "status --line" in settings["statusLine"]["command"]
        assert settings_errors(claude, workspace.root, env) == ""
        settings["statusLine"].update(by_hand)  # the user's own touch, in an editor
        place.write_text(json.dumps(settings, indent=2) + "\n")
        assert settings_errors(claude, workspace.root, env) == ""
        done = run_cli("uninstall", cwd=workspace.root, env=env)
        assert done.returncode == 0, done.stderr
        assert settings_errors(claude, workspace.root, env) == ""
    assert (json.loads(place.read_text()) if place.exists() else None) == after


def test_the_status_line_counts_while_a_turn_runs(workspace, start_daemon, tmp_path):
    """Claude Code runs its status line again when its own state changes, not as time goes:
    the `refreshInterval` sidecar sets keeps `working N s` counting through a long turn."""
    claude = claude_binary()
    root = workspace.root
    env = claude_home(tmp_path / "home", root)
    assert run_cli("integrate", "claude-code", "--statusline", cwd=root, env=env).returncode == 0
    with AnthropicStub() as stub, \
            claude_in_tmux(claude, stub, env, root, start_daemon, tmp_path) as tmux:
        wait_until(lambda: re.search(r"^\s*idle \d+ s\s*$", tmux.screen(), re.M), 60, 0.2)
        stub.hold()  # the model thinks, for as long as the test wants
        tmux.type("take your time")
        first = int(wait_until(lambda: working(tmux.screen()), 30, 0.2))
        # later in the same turn, with nothing new on Claude Code's screen but the time
        wait_until(lambda: int(working(tmux.screen()) or 0) >= first + 2, 30, 0.2)
        stub.release()
