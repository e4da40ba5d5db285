"""A root daemon started with a user's environment (`sudo -E`) keeps its log out of their home.

The daemon is real (`sidecar run` as root) with HOME at a folder an unprivileged user (uid
65534) owns. Root's own home, where its log belongs, is overlaid for the daemon alone
(a mount namespace: `unshare -m`, an overlay whose writes land in this test's folder), so the
machine's real root home is never written.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import SIDECAR, DaemonProcess, is_serving, wait_until

NOBODY = 65534
ROOT_HOME = Path(pwd.getpwuid(0).pw_dir)
OVERLAY = ('mount -t overlay overlay -o "lowerdir=$1,upperdir=$2,workdir=$3" "$1" '
           '&& shift 3 && exec "$@"')

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="needs Linux, root and unshare: a root daemon, root's home overlaid for it alone")


def overlaid(folder: Path, *argv: str, upper: Path | None = None) -> list[str]:
    """`argv` run with root's home overlaid: what it writes there lands in `upper` (by default
    `folder`/upper)."""
    upper = upper or folder / "upper"
    for made in (upper, folder / "work"):
        made.mkdir(parents=True, exist_ok=True)
    return ["unshare", "-m", "sh", "-c", OVERLAY, "sh", str(ROOT_HOME), str(upper),
            str(folder / "work"), *argv]


class OverlaidDaemon(DaemonProcess):
    def __init__(self, command: list[str], log: Path, env: dict[str, str]) -> None:
        self.log_path = log
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env)


@pytest.mark.parametrize("state", ["home", "xdg"])
def test_a_root_daemon_with_a_users_home_logs_in_roots_own(workspace, tmp_path, state):
    probe = subprocess.run(overlaid(tmp_path / "probe", "true"), capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot overlay root's home here: {probe.stderr.decode().strip()}")
    home = tmp_path / "home"
    (home / ".local" / "state").mkdir(parents=True)
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(home)], check=True)
    before = sorted(home.rglob("*"))
    env = {**os.environ, "HOME": str(home)}
    env.pop("XDG_STATE_HOME")
    if state == "xdg":
        env["XDG_STATE_HOME"] = str(home / ".local" / "state")
    daemon = OverlaidDaemon(overlaid(tmp_path, SIDECAR, "run", "--root", str(workspace.root)),
                            tmp_path / "daemon.out", env)
    try:
        wait_until(lambda: is_serving(workspace, daemon), 20)
        log = tmp_path / "upper" / ".local" / "state" / "sidecar" / "daemon.log"
        wait_until(lambda: log.is_file() or list(home.rglob("daemon.log")), 10)
    finally:
        daemon.stop()
    assert sorted(home.rglob("*")) == before  # nothing made in the user's home
    assert "serving" in log.read_text() and log.stat().st_uid == 0
    assert "cannot write the log file" not in daemon.log_path.read_text()
    # `sidecar logs`, run the same way, reads the log where that daemon wrote it.
    shown = subprocess.run(overlaid(tmp_path / "again", SIDECAR, "logs", "--root", str(workspace.root),
                                    upper=tmp_path / "upper"), capture_output=True, env=env)
    assert shown.returncode == 0 and b"serving" in shown.stdout, shown.stderr
