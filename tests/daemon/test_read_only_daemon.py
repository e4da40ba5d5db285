"""A workspace on a file system remounted read-only under a live daemon, in a private mount
namespace (root only): `doctor` says the mount is read-only, and does not mistake the live
daemon, which can write nothing there, for a dead one; once the daemon is gone it says both."""

from __future__ import annotations

import subprocess

from helpers import SIDECAR

SCRIPT = """set -e
mnt=$1 sidecar=$2
mount -t tmpfs -o size=16m sidecar-test "$mnt"
mkdir "$mnt/ws"
"$sidecar" init "$mnt/ws" >/dev/null
"$sidecar" run --root "$mnt/ws" >"$mnt/../daemon.log" 2>&1 & daemon=$!
i=0; until "$sidecar" status --root "$mnt/ws" >/dev/null; do
  i=$((i+1)); [ $i -gt 300 ] && exit 97; sleep 0.1; done
# A read-only bind mount over it: what the daemon holds open stays as it was (a remount of the
# tmpfs itself is refused while files are open for writing), every new open or write is refused.
mount --bind "$mnt" "$mnt"
mount -o remount,bind,ro "$mnt"
cd "$mnt/ws"
echo "== live"; "$sidecar" doctor || true
echo "== status"; "$sidecar" status && echo "exit 0" || echo "exit $?"
kill -9 $daemon; wait $daemon || true
echo "== dead"; "$sidecar" doctor || true
"""


def test_doctor_tells_a_read_only_mount_from_a_dead_daemon(private_mounts, tmp_path, config_home):
    mnt = tmp_path.resolve() / "mnt"
    mnt.mkdir()
    done = subprocess.run([*private_mounts, "sh", "-c", SCRIPT, "sh", str(mnt), SIDECAR],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    live, dead = done.stdout.split("== live\n")[1].split("== dead\n")
    live, status = live.split("== status\n")
    root = mnt / "ws"
    read_only = f"{root}/.context/runtime is on a read-only file system (mounted at {mnt})"
    assert read_only in live, live
    assert "no live instance serves" not in live, live
    assert f"mount -o remount,rw {mnt}" in live
    # status: served by a live daemon, which can record nothing: not exit 0
    assert "served     yes" in status and "read-only" in status, status
    assert status.rstrip().endswith("exit 6"), status
    assert read_only in dead and f"no live instance serves {root}" in dead, dead
