"""Unit tests start no process: any attempt fails the test, so the fast loop stays in process."""

from __future__ import annotations

import os
import subprocess

import pytest


def _refuse(*args: object, **kwargs: object) -> None:
    raise AssertionError("a unit test started a process: move it to tests/daemon or tests/e2e")


@pytest.fixture(autouse=True)
def _no_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess.Popen, "_execute_child", _refuse)
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _refuse)
