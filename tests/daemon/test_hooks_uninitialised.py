"""`sidecar hooks ...` in a workspace whose runtime was not made here (a clone's `.context/`
carries no `runtime/`, or a runtime without its `locks/`): one line that says what is missing
and to run `sidecar init`, never a traceback."""

from __future__ import annotations

import shutil

import pytest

from helpers import run_cli
from sidecar.base.exitcodes import NOT_WORKSPACE

COMMANDS = [
    ("list",), ("list", "--json"), ("history",), ("enable", "post-task"),
    ("disable", "post-task"), ("remove", "post-task"), ("kill-running",),
    ("add", "mine", "--delay", "0", "--", "true"), ("update", "post-task", "--delay", "5m"),
    ("trust", "post-task", "--yes"), ("edit", "post-task"), ("test", "post-task"),
]
MISSING = {"locks": lambda ws: ws.locks, "runtime": lambda ws: ws.runtime}


@pytest.mark.parametrize("missing", list(MISSING))
@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_a_runtime_not_made_here_is_one_clear_line(workspace, args, missing):
    folder = MISSING[missing](workspace)
    shutil.rmtree(folder)
    result = run_cli("hooks", *args, cwd=workspace.root, env={"EDITOR": "true"})
    error = result.stderr.decode()
    assert result.returncode == NOT_WORKSPACE, error
    assert "Traceback" not in error and error.count("\n") == 1, error
    assert f"{folder} is missing" in error and f"`sidecar init {workspace.root}`" in error
    assert not folder.exists()  # nothing made behind init's back
