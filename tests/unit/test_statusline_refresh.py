"""`sidecar integrate claude-code --statusline` sets the status line's `refreshInterval`
(`--refresh-interval SECONDS`, 2 by default, 0 for none), so that Claude Code runs it again
during a turn; a value the user set is theirs: never overridden, never taken out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.user_files import run

THEIRS = '{\n  "statusLine": {"type": "command", "command": "mine"}\n}\n'
THEIRS_REFRESHED = '{\n  "statusLine": {"type": "command", "command": "mine", "refreshInterval": 10}\n}\n'


def local_file(workspace, before: str | None) -> Path:
    local = workspace.root / ".claude" / "settings.local.json"
    if before is not None:
        local.parent.mkdir()
        local.write_text(before)
    return local


def statusline(workspace, env, *flags: str):
    done = run("integrate", "claude-code", "--statusline", *flags, cwd=workspace.root, env=env)
    assert done.returncode == 0, done.stderr
    return done


def uninstall(workspace, env) -> None:
    assert run("integrate", "claude-code", "--uninstall", cwd=workspace.root, env=env).returncode == 0


def refresh(local: Path):
    return json.loads(local.read_text())["statusLine"].get("refreshInterval")


@pytest.mark.parametrize(("flags", "expected"), [([], 2), (["--refresh-interval", "5"], 5),
                                                 (["--refresh-interval", "0"], None)])
@pytest.mark.parametrize("before", [None, THEIRS])
def test_the_refresh_interval_is_set_and_taken_out_again(workspace, env, flags, expected, before):
    local = local_file(workspace, before)
    done = statusline(workspace, env, *flags)
    assert refresh(local) == expected
    assert (f"every {expected} s".encode() in done.stdout) == (expected is not None), done.stdout
    uninstall(workspace, env)
    assert (local.read_text() if local.exists() else None) == before


@pytest.mark.parametrize("flags", [[], ["--refresh-interval", "3"], ["--refresh-interval", "0"]])
def test_the_users_own_refresh_interval_is_kept(workspace, env, flags):
    local = local_file(workspace, THEIRS_REFRESHED)
    done = statusline(workspace, env, *flags)
    assert refresh(local) == 10
    assert b"every 10 s (your own refreshInterval, kept)" in done.stdout, done.stdout
    uninstall(workspace, env)
    assert local.read_text() == THEIRS_REFRESHED


@pytest.mark.parametrize("before", [None, THEIRS])
def test_integrating_again_changes_sidecars_value_not_the_users(workspace, env, before):
    local = local_file(workspace, before)
    statusline(workspace, env)
    statusline(workspace, env, "--refresh-interval", "7")  # sidecar's own: changed
    assert refresh(local) == 7
    statusline(workspace, env, "--refresh-interval", "0")
    assert refresh(local) is None
    statusline(workspace, env)
    data = json.loads(local.read_text())
    data["statusLine"]["refreshInterval"] = 4  # by hand: the user's from now on
    local.write_text(json.dumps(data, indent=2) + "\n")
    statusline(workspace, env, "--refresh-interval", "9")
    assert refresh(local) == 4
    uninstall(workspace, env)
    # their own line keeps the value they chose; a line sidecar added goes whole
    assert (json.loads(local.read_text()) if local.exists() else None) == \
        (None if before is None else {"statusLine": {"type": "command", "command": "mine",
                                                     "refreshInterval": 4}})


@pytest.mark.parametrize(("args", "said"), [
    (["--refresh-interval", "5"], b"--refresh-interval goes with --statusline"),
    (["--statusline", "--refresh-interval", "-1"], b"Invalid value for '--refresh-interval'"),
    (["--uninstall", "--refresh-interval", "5"], b"--refresh-interval goes with --statusline"),
])
def test_a_refresh_interval_without_its_status_line_is_refused(workspace, env, args, said):
    done = run("integrate", "claude-code", *args, cwd=workspace.root, env=env)
    assert done.returncode != 0 and said in done.stderr, done.stderr
    assert not (workspace.root / ".claude").exists()
