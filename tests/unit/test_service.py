"""The user service: rendered files, install/uninstall commands, sd_notify, signals.

In process; those that start real processes are in tests/daemon/test_service_daemon.py.
"""

from __future__ import annotations

import plistlib
from pathlib import Path

from helpers import invoke, record_service_tools
from sidecar.daemon.sdnotify import Notifier
from sidecar.install import service


def test_the_plist_round_trips_with_absolute_paths_and_a_matching_label(tmp_path):
    home = tmp_path / "home"
    command = service.sidecar_path()
    data = plistlib.loads(service.render_plist(command, home).encode())
    assert data["Label"] == service.LABEL == service.plist_path(home).stem
    assert data["ProgramArguments"] == [str(command), "run"]
    assert data["RunAtLoad"] is True and data["KeepAlive"] == {"SuccessfulExit": False}
    assert data["ThrottleInterval"] > 0
    for key in ("StandardOutPath", "StandardErrorPath"):
        assert Path(data[key]).is_absolute()
        assert data[key].startswith(str(home / "Library" / "Logs"))
    assert Path(data["ProgramArguments"][0]).is_absolute()


def test_print_changes_nothing(tmp_path, config_home):
    result = invoke("service", "install", "--print", env={"HOME": str(tmp_path), "XDG_CONFIG_HOME": ""})
    assert result.returncode == 0
    assert b"Type=notify" in result.stdout and b"systemctl --user enable --now" in result.stdout
    assert not (tmp_path / ".config").exists()


def test_notifier_is_silent_outside_systemd():
    assert not Notifier({}).enabled and not Notifier({}).ready("x")
    assert Notifier({"NOTIFY_SOCKET": "@abstract"}).address == "\0abstract"
    assert Notifier({"WATCHDOG_USEC": "4000000"}).watchdog_interval == 4.0
    assert Notifier({"WATCHDOG_USEC": "4000000", "WATCHDOG_PID": "1"}).watchdog_interval is None


def test_uninstall_when_not_installed_says_so_and_runs_nothing(tmp_path, monkeypatch):
    fake_tools = record_service_tools(tmp_path, monkeypatch)
    plan = service.uninstall("linux", home=tmp_path)
    assert plan.notes and "not installed" in plan.notes[0]
    assert fake_tools() == []


def test_an_unreachable_notify_socket_is_not_fatal(tmp_path):
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "absent.sock")})
    assert notifier.enabled and notifier.ready("x") is False
