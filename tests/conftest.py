"""Shared test set-up: every test gets its own workspace and user config, never $HOME.

The folder a test lives in is its kind, and its marker: `tests/unit` starts no process,
`tests/daemon` starts real sidecar processes (`daemon`), `tests/e2e` drives real agent hosts
(`e2e`). `pytest -m "not e2e and not slow and not daemon"` is the fast inner loop.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from helpers import TESTS, DaemonProcess, is_serving, wait_until

MARKED_FOLDERS = ("daemon", "e2e")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        folder = Path(item.path).relative_to(TESTS).parts[0]
        if folder in MARKED_FOLDERS:
            item.add_marker(folder)


@pytest.fixture(autouse=True)
def _own_config_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the real user's sidecar folders (trust, the run key, the
    daemon's log...)."""
    monkeypatch.setenv("SIDECAR_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # the daemon's log file


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "config"
    home.mkdir()
    monkeypatch.setenv("SIDECAR_CONFIG_HOME", str(home))
    monkeypatch.delenv("SIDECAR_HOOK_ID", raising=False)
    # Short timers so daemon tests finish quickly; the defaults are tested separately.
    (home / "config.toml").write_text(
        "reconcileInterval = 0.5\nheartbeatInterval = 0.5\nsweepInterval = 1\n"
    )
    return home


@pytest.fixture
def workspace(tmp_path: Path, config_home: Path):
    """A workspace made by `sidecar init`, run in process (typer's CliRunner)."""
    from typer.testing import CliRunner

    from sidecar.cli.main import app
    from sidecar.layout import Workspace

    root = tmp_path / "ws"
    root.mkdir()
    result = CliRunner().invoke(app, ["init", str(root)])
    assert result.exit_code == 0, result.output
    return Workspace(root)


@pytest.fixture
def start_daemon(tmp_path: Path, config_home: Path) -> Iterator[Callable[..., DaemonProcess]]:
    started: list[DaemonProcess] = []

    def start(*roots: Path, extra: list[str] | None = None, wait_leader: bool = True,
              env: dict[str, str] | None = None) -> DaemonProcess:
        args = [a for root in roots for a in ("--root", str(root))] + (extra or [])
        daemon = DaemonProcess(args, tmp_path / f"daemon-{len(started)}.log", env)
        started.append(daemon)
        if wait_leader and roots:
            from sidecar.layout import Workspace

            ws = Workspace(Path(roots[0]))
            wait_until(lambda: is_serving(ws, daemon), 15)
        return daemon

    try:
        yield start
    finally:
        for daemon in started:
            daemon.stop()


@pytest.fixture
def private_mounts() -> list[str]:
    """The command prefix that runs a shell in a mount namespace of its own: what it mounts
    is seen by it and its children alone, and gone when they end."""
    if os.geteuid() != 0:
        pytest.skip("mounting needs root (CAP_SYS_ADMIN); these tests run as root in CI")
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    return ["unshare", "--mount", "--propagation", "private"]


# Fixtures of the support modules, for every test: a real redis-server of a test's own,
# "machines" (PID namespaces; with a network and a HOME of their own) to run sidecars on, a
# seeded workspace in process (`ws`), a loopback receiver of notices (`receiver`), a loopback
# OTLP collector (`otlp`) and a real Arize Phoenix to export OpenTelemetry spans to (`phoenix`).
pytest_plugins = ["support.redis_server", "support.machines", "support.netmachines", "support.stores",
                  "support.receiver", "support.otlp", "support.phoenix"]
