"""Unit tests start no process: any attempt fails the test, so the fast loop stays in process."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


def _refuse(*args: object, **kwargs: object) -> None:
    raise AssertionError("a unit test started a process: move it to tests/daemon or tests/e2e")


@pytest.fixture(autouse=True)
def _no_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess.Popen, "_execute_child", _refuse)
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _refuse)


@pytest.fixture
def env(tmp_path):
    """The environment of a user of their own (support.user_files.user_env), for the tests of
    the user's files that `sidecar integrate` edits."""
    from support.user_files import user_env

    return user_env(tmp_path)


@pytest.fixture
def local(workspace) -> Path:
    """Claude Code's settings of this machine in the workspace (not written yet)."""
    return workspace.root / ".claude" / "settings.local.json"


@pytest.fixture
def integrate(workspace, env):
    """`sidecar integrate ARGS` as that user, in the workspace (support.user_files.run)."""
    from support.user_files import run

    return lambda *args: run("integrate", *args, cwd=workspace.root, env=env)
