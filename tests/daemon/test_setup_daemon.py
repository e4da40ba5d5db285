"""Set-up and the way back out: unregister, uninstall, the version, a deleted workspace.

Those that start real processes; the rest run in process in tests/unit/test_setup.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from helpers import SIDECAR, no_manager_env, read_json, run_cli, wait_until


def test_version():
    # The version and the commit this code was built from (tests/daemon/test_build.py shows where
    # the commit comes from); the version alone, said so, when it cannot be told.
    from sidecar.base.version import __version__, commit

    found = commit()
    expected = f"{__version__}+{found[:12]}" if found else f"{__version__} (commit unknown)"
    for args in (["--version"], ["version"]):
        result = run_cli(*args)
        assert result.returncode == 0 and result.stdout.decode().strip() == expected


def test_a_deleted_workspace_is_skipped_with_a_warning_and_can_be_unregistered(
        tmp_path, config_home, workspace, start_daemon):
    gone = tmp_path / "gone"
    gone.mkdir()
    assert run_cli("init", str(gone)).returncode == 0
    shutil.rmtree(gone)
    # The registry names both; `run` serves the one that exists and warns once of the other.
    registry_daemon = start_daemon(wait_leader=False)
    wait_until(lambda: "registered but not a workspace" in registry_daemon.output(), 15)
    wait_until(lambda: run_cli("status", "--root", str(workspace.root)).returncode == 0, 15)
    assert registry_daemon.proc.poll() is None
    status = run_cli("status", "--all")
    assert b"is registered but is not a workspace" in status.stderr
    assert b"sidecar unregister" in status.stderr and status.returncode == 0
    assert str(workspace.root).encode() in status.stdout

    result = run_cli("unregister", str(gone))
    assert result.returncode == 0, result.stderr
    assert read_json(config_home / "workspaces.json")["workspaces"] == [str(workspace.root)]
    assert b"is registered but" not in run_cli("status", "--all").stderr
    again = run_cli("unregister", str(gone))
    assert again.returncode == 1 and b"is not registered" in again.stderr


def test_uninstall_takes_out_everything_sidecar_wrote_and_purge_its_own_folder(
        tmp_path, config_home, workspace):
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps({"ui": {"theme": "dark"}}))
    codex_home = home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text('# mine\nmodel = "gpt-5.5"\n')
    local = workspace.root / ".claude" / "settings.local.json"
    local.parent.mkdir()
    mine = b'{\n    "permissions": {"allow": ["Bash(ls:*)"]},\n    "model": "opus"\n}\n'
    local.write_bytes(mine)  # four spaces, a one-line object: the user's own layout
    env = {**no_manager_env(tmp_path), "CODEX_HOME": str(codex_home)}
    for host in (["claude-code"], ["claude-code", "--user"], ["gemini"], ["codex"], ["opencode"]):
        result = run_cli("integrate", *host, cwd=workspace.root, env=env)
        assert result.returncode == 0, (host, result.stderr)
    unit = home / ".config" / "systemd" / "user" / "sidecar.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\n")  # installed once where a manager ran

    result = run_cli("uninstall", "--purge", cwd=workspace.root, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert local.read_bytes() == mine
    assert not (home / ".claude").exists()  # sidecar made it for its hooks alone
    assert read_json(home / ".gemini" / "settings.json") == {"ui": {"theme": "dark"}}
    assert (codex_home / "config.toml").read_text() == '# mine\nmodel = "gpt-5.5"\n'
    assert not (codex_home / "hooks.json").exists()
    assert not (workspace.root / ".opencode").exists()  # made for the plugin, and empty now
    assert not unit.exists()
    assert not config_home.exists()  # --purge: registry, config.toml, integrations.json
    assert (workspace.context / "runtime").is_dir()  # the user's workspace data stays
    assert b"pipx uninstall agent-sidecar" in result.stdout

    again = run_cli("uninstall", "--purge", cwd=workspace.root, env=env)
    assert again.returncode == 0, again.stderr
    assert b"nothing left to remove" in again.stdout and not config_home.exists()


def uninstall(tmp_path, *args: str):
    """`sidecar uninstall` run from `tmp_path` by a user of its own, with no service manager."""
    return run_cli("uninstall", *args, cwd=tmp_path, env=no_manager_env(tmp_path))


def test_uninstall_stops_a_daemon_started_by_hand_and_purges_its_log(tmp_path, config_home,
                                                                     workspace, start_daemon):
    daemon = start_daemon(workspace.root)
    state = tmp_path / "state" / "sidecar"  # $XDG_STATE_HOME/sidecar: the daemon logs there
    wait_until(lambda: (state / "daemon.log").exists(), 15)
    (state / "daemon.log.1").write_text("INFO rotated\n")
    result = uninstall(tmp_path, "--purge")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"stopped the daemon serving {workspace.root} (pid {daemon.pid})".encode() \
        in result.stdout
    assert daemon.proc.wait(15) == 0
    status = run_cli("status", "--root", str(workspace.root))
    assert b"served     NO" in status.stdout
    assert not state.exists() and state.parent.is_dir()  # what sidecar wrote there, and no more


HOLDER = """
import os, signal, socket, sys, time
from pathlib import Path
from sidecar import jsonfile, locks
from sidecar.coordination import instances
from sidecar.layout import Workspace
ws, uid = Workspace(Path(sys.argv[2])), int(sys.argv[3])
if sys.argv[4:] != ["mortal"]:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a daemon stuck in a step
lock = locks.try_lock(instances.life_lock(ws, "holder000001"))
jsonfile.write_json_atomic(ws.instances / "holder000001.json", {
    "pid": os.getpid(), "hostname": socket.gethostname(), "role": "leader"})
if uid != os.getuid():
    os.setuid(uid)
print("ready", flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("whose", ["mine", "another user's"])
def test_a_daemon_that_cannot_be_stopped_is_named_with_its_pid_and_nothing_is_purged(
        tmp_path, config_home, workspace, whose):
    if whose != "mine" and os.geteuid() != 0:
        pytest.skip("running a process as another user needs root")
    uid = os.getuid() if whose == "mine" else 65534
    # A stand-in for a daemon stuck in a step: run as `.../sidecar run`, as a daemon is.
    stuck = tmp_path / "stuck" / "sidecar"
    stuck.parent.mkdir()
    stuck.write_text(HOLDER)
    holder = subprocess.Popen([sys.executable, str(stuck), "run", str(workspace.root), str(uid)],
                              stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"ready\n"
        result = uninstall(tmp_path, "--purge")
        assert result.returncode == 1
        why = "did not stop in time" if whose == "mine" else "is another user's"
        assert (f"pid {holder.pid} still serves {workspace.root} ({why}): stop it with "
                f"`kill {holder.pid}`").encode() in result.stderr
        assert holder.poll() is None and config_home.exists()
    finally:
        holder.kill()
        holder.communicate()


def test_a_planted_instance_file_never_makes_uninstall_signal_another_process(
        tmp_path, config_home, workspace):
    """An instance file names the pid of a process that is not sidecar (the runtime is the
    workspace owner's to write): uninstall, perhaps run as root, never signals it."""
    victim = subprocess.Popen([sys.executable, "-c", HOLDER, "x", str(workspace.root),
                               str(os.getuid()), "mortal"], stdout=subprocess.PIPE)
    try:
        assert victim.stdout is not None and victim.stdout.readline() == b"ready\n"
        result = uninstall(tmp_path)
        assert f"pid {victim.pid}, named by".encode() in result.stderr
        assert b"is not a `sidecar run`; not signalled" in result.stderr
        assert victim.poll() is None  # a SIGTERM would have ended it
        assert b"stopped the daemon" not in result.stdout
    finally:
        victim.kill()
        victim.communicate()


def test_uninstall_looks_through_no_link_for_daemons_and_runs_from_a_removed_folder(
        tmp_path, config_home, workspace):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(workspace.instances)
    workspace.instances.symlink_to(elsewhere)  # a tampered runtime: never read through
    gone = tmp_path / "gone"
    gone.mkdir()
    result = subprocess.run(  # from a folder removed under it
        ["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "{SIDECAR}" uninstall'],
        capture_output=True, env={**os.environ, **no_manager_env(tmp_path)}, timeout=30)
    assert result.returncode == 0, result.stderr
    assert b"Traceback" not in result.stderr
    assert f"cannot tell what serves {workspace.root}".encode() in result.stderr
    assert b"is a symlink" in result.stderr


def test_stop_stops_a_hand_started_daemon_and_nothing_else(tmp_path, config_home, workspace,
                                                           start_daemon):
    """`sidecar stop` without a service manager: the daemon started by hand stops; a process
    a planted instance file names and another user's daemon are named and left running, and
    nothing of the set-up is removed."""
    if os.geteuid() != 0:
        pytest.skip("running a process as another user needs root")
    daemon = start_daemon(workspace.root)
    others = [subprocess.Popen([sys.executable, "-c", HOLDER, "x", str(workspace.root),
                                str(os.getuid()), "mortal"], stdout=subprocess.PIPE)]
    stuck = tmp_path / "stuck" / "sidecar"
    stuck.parent.mkdir()
    stuck.write_text(HOLDER.replace("holder000001", "holder000002"))
    others.append(subprocess.Popen([sys.executable, str(stuck), "run", str(workspace.root),
                                    "65534", "mortal"], stdout=subprocess.PIPE))
    try:
        assert all(p.stdout is not None and p.stdout.readline() == b"ready\n" for p in others)
        victim, theirs = others
        result = run_cli("stop", cwd=tmp_path, env=no_manager_env(tmp_path))
        assert f"stopped the daemon serving {workspace.root} (pid {daemon.pid})".encode() \
            in result.stdout, result.stdout + result.stderr
        assert daemon.proc.wait(15) == 0
        assert f"pid {victim.pid}, named by".encode() in result.stderr
        assert f"pid {theirs.pid} still serves {workspace.root} (is another user's)".encode() \
            in result.stderr
        assert result.returncode == 1 and victim.poll() is None and theirs.poll() is None
        assert (config_home / "workspaces.json").exists() and workspace.instances.is_dir()
    finally:
        for process in others:
            process.kill()
            process.communicate()
