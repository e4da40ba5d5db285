"""What the commands tell a user about running daemons: a second `sidecar run` says it stands
by and for whom, `sidecar reload` reaches the live daemons (and only them), and `init` and
`integrate` name the next step."""

from __future__ import annotations

import os
import socket
import subprocess
import time

import orjson

from helpers import run_cli, wait_until
from sidecar import locks
from sidecar.coordination.instances import life_lock


def test_a_second_run_says_which_instance_leads_and_that_it_stands_by(workspace, start_daemon):
    first = start_daemon(workspace.root)
    second = start_daemon(workspace.root, wait_leader=False)
    wait_until(lambda: "this one stands by" in second.output(), 15)
    line = next(x for x in second.output().splitlines() if "this one stands by" in x)
    assert f"{workspace.root}: another instance (pid {first.pid}, started 20" in line
    assert line.count("leads; this one stands by") == 1
    assert "stands by" not in first.output()


def test_reload_sends_sighup_to_the_live_daemons(workspace, start_daemon, config_home):
    daemon = start_daemon(workspace.root)
    result = run_cli("reload")
    assert result.returncode == 0, result.stderr
    assert f"sent SIGHUP to the daemon with pid {daemon.pid}" in result.stdout.decode()
    wait_until(lambda: "configuration reloaded" in daemon.output(), 15)
    assert daemon.proc.poll() is None


def test_reload_with_no_live_daemon_says_so(workspace):
    result = run_cli("reload")
    assert result.returncode == 3
    assert "no running daemon of yours serves the registered workspaces" in result.stderr.decode()


def test_reload_signals_no_process_that_is_not_a_sidecar_run(workspace):
    # A workspace's instance file names the pid of some other live process, and its life
    # lock is held: SIGHUP would end that process, so it must not be sent.
    other = subprocess.Popen(["sleep", "60"])
    held = None
    try:
        workspace.instances.mkdir(parents=True, exist_ok=True)
        (workspace.instances / "forged.json").write_bytes(orjson.dumps(
            {"pid": other.pid, "hostname": socket.gethostname(), "role": "leader"}))
        held = locks.try_lock(life_lock(workspace, "forged"))
        result = run_cli("reload")
        assert result.returncode == 3
        assert f"pid {other.pid}" in result.stderr.decode() and "not signalled" in result.stderr.decode()
        time.sleep(0.2)
        assert other.poll() is None
    finally:
        locks.release(held)
        other.kill()
        other.wait()


def test_init_names_the_next_step(tmp_path, config_home):
    root = tmp_path / "w"
    root.mkdir()
    out = run_cli("init", str(root)).stdout.decode().splitlines()
    assert out[-1].startswith("next: sidecar integrate <host> (claude-code, codex, gemini, opencode, pi, copilot, cline, qwen, droid or kilo)")


def test_integrate_names_doctor(workspace, tmp_path):
    env = {"HOME": str(tmp_path / "home"), "PATH": os.environ["PATH"]}
    result = run_cli("integrate", "claude-code", "--root", str(workspace.root), env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().splitlines()[-1].startswith("next: sidecar doctor")
    undo = run_cli("integrate", "claude-code", "--uninstall", "--root", str(workspace.root), env=env)
    assert "sidecar doctor" not in undo.stdout.decode()
