"""The user service: rendered files, install/uninstall commands, sd_notify, signals.

Those that start real processes; the rest run in process in tests/unit/test_service.py.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from helpers import record_service_tools, run_cli, wait_until
from sidecar.install import service


@pytest.mark.e2e
def test_the_rendered_unit_passes_systemd_analyze_verify(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (tests/install-hosts.sh installs it with apt)")
    unit = tmp_path / "sidecar.service"
    command = service.sidecar_path()
    unit.write_text(service.render_unit(command))
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    result = subprocess.run(["systemd-analyze", "verify", "--user", str(unit)],
                            env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
                            capture_output=True, text=True)
    problems = [line for line in (result.stderr + result.stdout).splitlines()
                if "sidecar.service" in line]
    assert result.returncode == 0 and not problems, result.stderr
    text = unit.read_text()
    assert f"ExecStart={command} run" in text and "@" not in text
    for line in ("Type=notify", "WatchdogSec=", "Restart=on-failure", "NoNewPrivileges=yes"):
        assert line in text


@pytest.fixture
def fake_tools(tmp_path, monkeypatch):
    return record_service_tools(tmp_path, monkeypatch)


def test_systemd_install_and_uninstall_run_the_exact_commands(tmp_path, fake_tools):
    home = tmp_path / "home"
    plan = service.install("linux", home=home)
    unit = home / ".config/systemd/user/sidecar.service"
    assert plan.path == unit and unit.read_text() == service.render_unit(service.sidecar_path())
    user = os.environ.get("USER") or __import__("getpass").getuser()
    assert fake_tools() == [
        "systemctl --user show-environment",  # is a user manager there at all? (yes)
        "systemctl --user daemon-reload",
        "systemctl --user enable --now sidecar.service",
        f"loginctl show-user {user} --property=Linger --value",
    ]
    assert any("loginctl enable-linger" in note for note in plan.notes)

    service.install("linux", home=home)  # again: same file, no restart needed
    assert fake_tools()[4:7] == ["systemctl --user show-environment",
                                 "systemctl --user daemon-reload",
                                 "systemctl --user enable --now sidecar.service"]
    service.uninstall("linux", home=home)
    assert not unit.exists()
    assert fake_tools()[-2:] == ["systemctl --user disable --now sidecar.service",
                                 "systemctl --user daemon-reload"]


def test_systemd_install_without_starting(tmp_path, fake_tools):
    service.install("linux", home=tmp_path, start=False)
    assert fake_tools()[1:3] == ["systemctl --user daemon-reload", "systemctl --user enable sidecar.service"]


def test_launchd_install_and_uninstall_run_the_exact_commands(tmp_path, fake_tools):
    home = tmp_path / "home"
    plan = service.install("darwin", home=home)
    uid = os.getuid()
    target = home / "Library/LaunchAgents" / f"{service.LABEL}.plist"
    assert plan.path == target and target.exists()
    assert (home / "Library/Logs/sidecar").is_dir()
    assert fake_tools() == [f"launchctl bootout gui/{uid}/{service.LABEL}",
                            f"launchctl bootstrap gui/{uid} {target}"]
    service.uninstall("darwin", home=home)
    assert not target.exists()
    assert fake_tools()[-1] == f"launchctl bootout gui/{uid}/{service.LABEL}"


@pytest.mark.slow
def test_sd_notify_ready_watchdog_while_busy_and_stopping(workspace, start_daemon, tmp_path):
    address = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    sock.settimeout(0.2)
    # A large batch waits in the inbox, so the first pings happen while it is being applied.
    for i in range(20_000):
        (workspace.inbox / f"{i:08d}.json").write_bytes(
            b'{"event":"tool-use","session_id":"busy-%d","host":"t","tool_name":"x"}' % (i % 40))
    messages: list[tuple[str, int]] = []  # each message, and the inbox backlog when it came
    daemon = start_daemon(workspace.root, wait_leader=False,
                          env={"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "1000000"})

    def receive_until(predicate, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                message = sock.recv(4096).decode()
                messages.append((message, len(list(workspace.inbox.glob("*.json")))))
            except TimeoutError:
                pass
            if predicate():
                return True
        return False

    def pings():
        return [backlog for message, backlog in messages if "WATCHDOG=1" in message]

    try:
        assert receive_until(lambda: any("READY=1" in m for m, _ in messages), 20)
        assert receive_until(lambda: len(pings()) >= 3, 20)
        daemon.proc.send_signal(signal.SIGTERM)
        assert receive_until(lambda: any("STOPPING=1" in m for m, _ in messages), 20)
        assert daemon.proc.wait(20) == 0
    finally:
        sock.close()
    assert any("STATUS=" in m for m, _ in messages)
    assert any(backlog > 0 for backlog in pings()), "no watchdog ping while the big batch was applied"


@pytest.mark.slow
def test_sighup_reloads_the_registry_and_configuration(workspace, config_home, start_daemon):
    daemon = start_daemon()  # serves the registry, which names the workspace
    wait_until(lambda: list(workspace.instances.glob("*.json")))
    (config_home / "config.toml").write_text("staleAfter = 'soon'\n")  # a bad edit is refused
    daemon.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: "configuration not reloaded" in daemon.output() and "staleAfter" in daemon.output())
    (config_home / "config.toml").write_text("staleAfter = '2h'\n")
    daemon.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: "configuration reloaded" in daemon.output())
    assert daemon.proc.poll() is None


def test_a_failing_service_manager_command_is_a_clear_error(tmp_path, fake_tools):
    failing = tmp_path / "fakebin" / "systemctl"
    failing.write_text('#!/bin/sh\n[ "$2" = show-environment ] && exit 0\n'
                       'echo "Access denied" >&2\nexit 1\n')
    with pytest.raises(service.ServiceError, match="systemctl --user daemon-reload.*Access denied"):
        service.install("linux", home=tmp_path)


@pytest.fixture
def no_user_manager(tmp_path, monkeypatch):
    """A machine like a container's: systemctl exists, but no user manager answers it."""
    bin_dir = tmp_path / "nobus"
    bin_dir.mkdir()
    calls = tmp_path / "nobus.log"
    (bin_dir / "systemctl").write_text(
        f'#!/bin/sh\necho "systemctl $*" >> {calls}\necho "Failed to connect to bus: No medium found" >&2\nexit 1\n')
    (bin_dir / "loginctl").write_text('#!/bin/sh\n[ "$1" = show-user ] && echo no\nexit 0\n')
    for tool in ("systemctl", "loginctl"):
        (bin_dir / tool).chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path / "home"),
           "XDG_CONFIG_HOME": ""}
    return env, lambda: calls.read_text().splitlines() if calls.exists() else []


def test_without_a_user_manager_install_writes_nothing_and_says_what_works(
        tmp_path, config_home, no_user_manager):
    env, calls = no_user_manager
    result = run_cli("service", "install", env=env)
    assert result.returncode == 5
    said = result.stderr.decode()
    assert "no systemd user manager is reachable" in said and "Failed to connect to bus" in said
    assert f"{service.sidecar_path()} run" in said  # the exact command for another supervisor
    # ...and where that run finds the keys its follow-ups need, whoever starts it.
    assert f"put the variables your agents need (ANTHROPIC_API_KEY=...) in " \
           f"{config_home / 'environment'}" in said
    if os.getuid() != 0:
        assert "loginctl enable-linger" in said
    assert not (tmp_path / "home" / ".config").exists()
    assert calls() == ["systemctl --user show-environment"]


def test_without_a_user_manager_uninstall_removes_the_file_and_succeeds(
        tmp_path, config_home, no_user_manager):
    env, _ = no_user_manager
    unit = tmp_path / "home" / ".config" / "systemd" / "user" / "sidecar.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\n")
    status = run_cli("service", "status", env=env)
    assert status.returncode == 3 and b"no systemd user manager is reachable" in status.stdout
    result = run_cli("service", "uninstall", env=env)
    assert result.returncode == 0, result.stderr
    assert not unit.exists()
    assert run_cli("service", "uninstall", env=env).returncode == 0  # nothing there: still fine
