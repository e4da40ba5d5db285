"""`sidecar integrate claude-code --statusline` where sidecar's own folder is read-only: the
command run as an unprivileged user (a root process writes anywhere)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from helpers import SIDECAR, run_cli

MINE = '{\n  "statusLine": {"type": "command", "command": "mine"}\n}\n'


def test_a_read_only_sidecar_folder_stops_the_status_line_before_it_is_written():
    as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] \
        if os.geteuid() == 0 else []
    if as_user and not shutil.which("setpriv"):
        pytest.skip("needs setpriv to act as an unprivileged user")
    top = Path(tempfile.mkdtemp(prefix="sidecar-readonly-"))
    try:
        os.chmod(top, 0o755)
        root, home, config = top / "ws", top / "home", top / "config"
        for folder in (root, home, config):
            folder.mkdir()
        assert run_cli("init", str(root), env={"SIDECAR_CONFIG_HOME": str(top / "admin")}
                       ).returncode == 0
        local = root / ".claude" / "settings.local.json"
        local.parent.mkdir()
        local.write_text(MINE)
        if as_user:
            subprocess.run(["chown", "-R", "65534:65534", str(root), str(home), str(config)],
                           check=True)
        config.chmod(0o500)  # sidecar's own folder, read-only
        done = subprocess.run(
            [*as_user, SIDECAR, "integrate", "claude-code", "--statusline"], cwd=root,
            capture_output=True, timeout=30,
            env={"HOME": str(home), "PATH": f"{Path(SIDECAR).parent}:/usr/bin:/bin",
                 "SIDECAR_CONFIG_HOME": str(config)})
        assert done.returncode != 0 and b"Traceback" not in done.stderr, done.stderr
        assert b"nothing was written" in done.stderr, done.stderr
        assert local.read_text() == MINE
    finally:
        shutil.rmtree(top, ignore_errors=True)
