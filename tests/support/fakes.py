"""Stand-ins for programs on PATH; shared by tests/unit/test_agentenv.py and
tests/daemon/test_agentenv_daemon.py."""

from __future__ import annotations

import stat
from pathlib import Path


def fake_host(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path
