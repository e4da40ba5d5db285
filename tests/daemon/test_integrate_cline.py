"""`sidecar integrate cline` and `--uninstall`, as a user runs them: the hook folder given
back as it was, the user's own hook files untouched."""

from __future__ import annotations

from helpers import SIDECAR, run_cli
from sidecar.hosts.cline.host import EVENTS


def test_a_user_integration_round_trips_and_leaves_the_users_hooks(workspace, tmp_path):
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    result = run_cli("integrate", "cline", cwd=workspace.root, env=env)
    assert result.returncode == 0, result.stderr
    hooks = home / ".cline" / "hooks"
    assert sorted(p.name for p in hooks.iterdir()) == sorted(EVENTS)
    assert f"exec {SIDECAR} emit --source cline" in (hooks / "TaskStart").read_text()
    assert b"already so" in run_cli("integrate", "cline", cwd=workspace.root, env=env).stdout
    assert run_cli("integrate", "cline", "--uninstall", cwd=workspace.root,
                   env=env).returncode == 0
    assert not (home / ".cline").exists()  # sidecar made it, and it is empty again

    hooks.mkdir(parents=True)
    mine = hooks / "TaskComplete.sh"
    mine.write_bytes(b"#!/bin/sh\necho done\n")
    mine.chmod(0o750)
    assert run_cli("integrate", "cline", cwd=workspace.root, env=env).returncode == 0
    assert run_cli("integrate", "cline", "--uninstall", cwd=workspace.root,
                   env=env).returncode == 0
    assert [p.name for p in hooks.iterdir()] == ["TaskComplete.sh"]
    assert mine.read_bytes() == b"#!/bin/sh\necho done\n" and mine.stat().st_mode & 0o777 == 0o750


def test_a_project_integration_calls_sidecar_from_path(workspace, tmp_path):
    env = {"HOME": str(tmp_path / "home")}
    result = run_cli("integrate", "cline", "--project", cwd=workspace.root, env=env)
    assert result.returncode == 0, result.stderr
    script = (workspace.root / ".cline" / "hooks" / "TaskStart").read_text()
    assert "exec sidecar emit --source cline" in script and str(tmp_path) not in script
    theirs = workspace.root / ".cline" / "hooks" / "TaskError"
    theirs.unlink()
    theirs.write_text("their own\n")
    refused = run_cli("integrate", "cline", "--project", cwd=workspace.root, env=env)
    assert refused.returncode == 1 and b"is not sidecar's hook" in refused.stderr
    assert theirs.read_text() == "their own\n"
