"""Set-up and the way back out: unregister, uninstall, the version, a deleted workspace.

In process; those that start real processes are in tests/daemon/test_setup_daemon.py.
"""

from __future__ import annotations

from helpers import invoke, no_manager_path, read_json


def test_uninstall_with_a_registry_it_cannot_read_purges_nothing(tmp_path, config_home, workspace):
    """Which daemons serve a workspace cannot be told from a broken registry: uninstall says
    so, removes what it can, and keeps sidecar's folder (the registry and its last good copy)."""
    registry = config_home / "workspaces.json"
    registry.write_text(registry.read_text().rstrip().rstrip("}").rstrip() + ",}")  # a trailing comma
    broken = registry.read_bytes()
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": "", "PATH": no_manager_path(tmp_path)}
    result = invoke("uninstall", "--purge", cwd=tmp_path, env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert b"nothing is purged" in result.stderr and b"Traceback" not in result.stderr
    assert registry.read_bytes() == broken


def test_uninstall_says_what_it_cannot_undo_and_purges_nothing_then(tmp_path, config_home,
                                                                     workspace):
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": "", "PATH": no_manager_path(tmp_path)}
    (config_home / "integrations.json").write_text("{not json")  # a corrupt record: read as empty
    assert invoke("integrate", "claude-code", cwd=workspace.root, env=env).returncode == 0
    assert "claude-code" in read_json(config_home / "integrations.json")
    local = workspace.root / ".claude" / "settings.local.json"
    local.write_text("{oops")  # the user broke it meanwhile
    result = invoke("uninstall", "--purge", cwd=workspace.root, env=env)
    assert result.returncode == 1 and b"not valid JSON" in result.stderr
    assert local.read_text() == "{oops" and config_home.exists()  # nothing lost, nothing purged
