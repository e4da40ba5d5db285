"""A full disk under a live daemon (a small tmpfs holding the workspace, filled by a filler
file; root only): the follow-ups that come due meanwhile are not claimed, and none is lost;
`status` says the disk is full and exits non-zero; once space is freed, each one runs once."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from helpers import emit, read_json, run_cli, wait_until
from sidecar.base.exitcodes import NO_ROOM
from sidecar.layout import Workspace

SESSIONS = 5
DELAY = 3  # seconds from a session's end to its follow-up's due time
# The stub resume: each run leaves one file named for its session, outside the full disk.
RECORD = "import sys, uuid; open(f'{sys.argv[1]}/{sys.argv[2]}.{uuid.uuid4().hex}', 'w').close()"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CAP_SYS_ADMIN); these tests run as root in CI")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "sidecar-full", str(disk)],
                   check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> Path:
    """Write a filler file until the disk refuses more (ENOSPC)."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as out:
        for size in (64 * 1024, 512):  # then the last few bytes too, a block at a time
            try:
                while True:
                    out.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    return filler


def pending(ws: Workspace) -> list[dict]:
    return read_json(ws.hooks_file).get("pending", [])


def runs(ran: Path) -> list[str]:
    return sorted(name.split(".")[0] for name in os.listdir(ran))


def test_follow_ups_wait_for_space_and_then_each_runs_once(small_disk, tmp_path, config_home,
                                                           start_daemon):
    ws = Workspace(small_disk / "ws")
    ws.root.mkdir()
    assert run_cli("init", str(ws.root)).returncode == 0
    ran = tmp_path / "ran"
    ran.mkdir()
    command = [sys.executable, "-c", RECORD, str(ran), "{session_id}"]
    with (config_home / "config.toml").open("a") as config:
        config.write(f'[resume]\n"claude-code" = {orjson.dumps(command).decode()}\n')
    updated = run_cli("hooks", "update", "post-task", "--delay", str(DELAY), "--root", str(ws.root))
    assert updated.returncode == 0, updated.stderr
    daemon = start_daemon(ws.root)

    sessions = sorted(str(uuid.uuid4()) for _ in range(SESSIONS))
    for session in sessions:
        for event in ({"hook_event_name": "SessionStart"},
                      {"hook_event_name": "SessionEnd", "reason": "exit"}):
            emit(ws.root, orjson.dumps({**event, "session_id": session}), "--source",
                 "claude-code")
    wait_until(lambda: len(pending(ws)) == SESSIONS, 15)
    filler = fill(small_disk)
    full_since = len(daemon.output())

    time.sleep(DELAY + 4)  # every one is due, and has been for a few steps
    assert runs(ran) == []
    assert [e.get("claimedBy") for e in pending(ws)] == [None] * SESSIONS, pending(ws)
    for args in (("status", "--root", str(ws.root)), ("status", "--root", str(ws.root), "--json")):
        status = run_cli(*args)
        assert status.returncode == NO_ROOM, status.stdout
        assert f"{ws.runtime} is on a full disk" in status.stdout.decode()
    said = daemon.output()[full_since:]
    assert "Traceback" not in said and said.count("follow-ups wait") == 1, said

    filler.unlink()
    wait_until(lambda: len(runs(ran)) == SESSIONS and not pending(ws), 30)
    time.sleep(2)  # nothing runs twice
    assert runs(ran) == sessions
    history = read_json(ws.hooks_file)["hooks"]["post-task"]["history"]
    assert sorted(f["status"] for f in history) == ["ok"] * SESSIONS
    assert run_cli("status", "--root", str(ws.root)).returncode == 0
    assert "Traceback" not in daemon.output()
