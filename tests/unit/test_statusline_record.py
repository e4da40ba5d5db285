"""What sidecar remembers of the status line it writes (`integrations.json`) and the file
itself stay in step: remembered before it is written, forgotten again if the write fails; and
what the user added to sidecar's status line by hand stays as long as it does, and goes with
it (a `statusLine` without its command makes Claude Code skip the whole file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import write_file
from sidecar import layout

MINE = '{\n  "statusLine": {"type": "command", "command": "mine"}\n}\n'


def remembered() -> dict:
    try:
        return json.loads((layout.config_home() / "integrations.json").read_text())
    except FileNotFoundError:
        return {}


def test_a_status_line_sidecar_cannot_remember_is_not_written(local, integrate):
    """Unremembered, uninstall would leave it, and a reinstall would call it the user's."""
    write_file(local, MINE)
    (layout.config_home() / "integrations.lock").mkdir(parents=True)  # the record's lock cannot be taken
    done = integrate("claude-code", "--statusline")
    assert done.returncode != 0 and b"integrations" in done.stderr, done.stderr
    assert b"nothing was written" in done.stderr
    assert local.read_text() == MINE


def test_a_status_line_that_cannot_be_written_is_not_remembered(local, integrate):
    write_file(local, MINE).chmod(0o444)
    done = integrate("claude-code", "--statusline")
    assert done.returncode != 0 and b"read-only" in done.stderr, done.stderr
    assert local.read_text() == MINE
    assert str(local) not in json.dumps(remembered())  # nothing of it is sidecar's


@pytest.mark.parametrize("before", [None, '{\n  "model": "opus"\n}\n'])
def test_what_the_user_adds_to_sidecars_status_line_goes_with_it(local, integrate, before):
    if before is not None:
        write_file(local, before)
    assert integrate("claude-code", "--statusline").returncode == 0
    data = json.loads(local.read_text())
    data["statusLine"]["padding"] = 2  # by hand, afterwards
    local.write_text(json.dumps(data, indent=2) + "\n")
    again = integrate("claude-code", "--statusline")
    assert again.returncode == 0 and json.loads(local.read_text())["statusLine"]["padding"] == 2
    assert integrate("claude-code", "--uninstall").returncode == 0
    # the whole line sidecar added goes: never a statusLine without its command
    assert (json.loads(local.read_text()) if local.exists() else None) == \
        (None if before is None else {"model": "opus"})


def test_keys_sidecar_took_from_a_lower_file_go_with_it(env, local, integrate):
    write_file(Path(env["HOME"]) / ".claude" / "settings.json",
               '{"statusLine": {"type": "command", "command": "users", "padding": 1}}\n')
    write_file(local, '{\n  "model": "opus"\n}\n')
    assert integrate("claude-code", "--statusline").returncode == 0
    data = json.loads(local.read_text())
    data["statusLine"]["refreshInterval"] = 7  # by hand
    local.write_text(json.dumps(data, indent=2) + "\n")
    assert integrate("claude-code", "--uninstall").returncode == 0
    assert json.loads(local.read_text()) == {"model": "opus"}  # the user's file: theirs still
