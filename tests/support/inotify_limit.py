"""A real `sidecar run` whose user may hold only so many inotify instances: run in a user
namespace of its own (its root mapped to the test's user), where that limit
(/proc/sys/user/max_inotify_instances) is its own to set, at start and later (`allow`).
The daemon's own folder watch is its first instance: a limit of 1 leaves none for the rest."""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import SIDECAR, DaemonProcess

SET_LIMIT = 'echo "$1" > /proc/sys/user/max_inotify_instances'


@functools.cache
def why_not() -> str | None:
    if shutil.which("unshare") is None or shutil.which("nsenter") is None:
        return "unshare and nsenter (util-linux) are not installed"
    done = subprocess.run(["unshare", "--user", "--map-root-user", "sh", "-c", SET_LIMIT, "-", "1"],
                          capture_output=True)
    return None if done.returncode == 0 else f"no user namespace here: {done.stderr.decode()}"


class LimitedDaemon(DaemonProcess):
    def __init__(self, args: list[str], log: Path, instances: int) -> None:
        self.log_path = log
        self.log = open(log, "ab")
        script = f'{SET_LIMIT} && shift && exec "$@"'
        self.proc = subprocess.Popen(
            ["unshare", "--user", "--map-root-user", "sh", "-c", script, "-", str(instances),
             SIDECAR, "run", *args], stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def allow(self, instances: int) -> None:
        """Raise (or lower) the limit of the running daemon's namespace."""
        subprocess.run(["nsenter", "--user", "--target", str(self.pid), "sh", "-c", SET_LIMIT, "-",
                        str(instances)], check=True)


def start_limited(tmp_path: Path, root: Path, instances: int) -> LimitedDaemon:
    why = why_not()
    if why:
        pytest.skip(why)
    return LimitedDaemon(["--root", str(root)], tmp_path / "limited.log", instances)
