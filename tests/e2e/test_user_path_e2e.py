"""The README's user section, followed as a new user would: a fresh install in a fresh home,
on a machine without a systemd user manager (as here and in CI), ends with a served,
integrated project whose `doctor` exits 0."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from helpers import REPO, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_the_readme_user_section_ends_with_a_served_integrated_project(tmp_path):
    # "without pipx: python3 -m venv ... && .../bin/pip install /path/to/sidecar"
    tool = tmp_path / "tool"
    subprocess.run([sys.executable, "-m", "venv", str(tool)], check=True)
    install = subprocess.run([str(tool / "bin" / "pip"), "install", "--quiet",
                              "--disable-pip-version-check", str(REPO)],
                             capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stderr[-3000:]
    nobus = tmp_path / "nobus"
    nobus.mkdir()
    (nobus / "systemctl").write_text(
        '#!/bin/sh\necho "Failed to connect to bus: No medium found" >&2\nexit 1\n')
    (nobus / "systemctl").chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    project = home / "code" / "my-project"
    project.mkdir(parents=True)
    env = {"HOME": str(home), "PATH": f"{tool / 'bin'}:{nobus}:/usr/bin:/bin",
           "LANG": os.environ.get("LANG", "C.UTF-8")}

    def sidecar(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["sidecar", *args], cwd=project, env=env, capture_output=True,
                              text=True, timeout=120)

    assert sidecar("init").returncode == 0
    assert sidecar("integrate", "claude-code").returncode == 0
    assert (project / ".claude" / "settings.local.json").exists()
    assert sidecar("integrate", "opencode").returncode == 0  # the packaged plugin is there
    service = sidecar("service", "install")
    assert service.returncode == 5 and "no systemd user manager is reachable" in service.stderr
    command = re.search(r"run `([^`]+ run)` under your own supervisor", service.stderr)
    assert command, service.stderr
    daemon = subprocess.Popen(command.group(1).split(), env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: sidecar("status").returncode == 0, 20)
        doctor = sidecar("doctor")
        assert doctor.returncode == 0, doctor.stdout
        assert "every registered workspace is served" in doctor.stdout
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
