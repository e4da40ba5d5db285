"""doctor's shared-filesystem note on real mounts, each in a private mount namespace (root
only): a tmpfs mounted below a workspace's folder is found as its mount, and a workspace on a
real FUSE filesystem (bindfs) gets the note from `sidecar doctor`, where its flock locks are
indeed not the same locks as the backing files' (two sidecars both lead)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import SIDECAR, read_json, wait_until

# Mount SRC on MNT with bindfs in this mount namespace, run the command, then unmount.
ON_FUSE = """src=$1 mnt=$2; shift 2
bindfs -f "$src" "$mnt" & fuse=$!
i=0; until mountpoint -q "$mnt"; do i=$((i+1)); [ $i -gt 500 ] && exit 97; sleep 0.02; done
"$@"; status=$?
umount "$mnt"; wait $fuse
exit $status
"""


@pytest.fixture
def bindfs(private_mounts) -> list[str]:
    if shutil.which("bindfs") is None or not Path("/dev/fuse").exists():
        pytest.skip("bindfs (a FUSE filesystem; tests/install-hosts.sh installs it) or "
                    "/dev/fuse is missing")
    return private_mounts


def test_a_tmpfs_mounted_below_a_folder_is_the_mount_found(private_mounts, tmp_path):
    where = tmp_path.resolve() / "my mount"  # the kernel writes the space as \\040
    (where / "ws").mkdir(parents=True)
    lookup = ("import sys; from pathlib import Path; from sidecar.doctor import mounts\n"
              "for p in sys.argv[1:]:\n"
              "    m = mounts.mount_of(Path(p)); print(m.fs_type, m.mount_point, sep='|')\n")
    found = subprocess.run(
        [*private_mounts, "sh", "-c", 'mount -t tmpfs sidecar-test "$1" && shift && exec "$@"',
         "sh", str(where), sys.executable, "-c", lookup, str(where / "ws"), str(tmp_path)],
        capture_output=True, text=True, timeout=60)
    assert found.returncode == 0, found.stderr
    inside, outside = found.stdout.splitlines()
    assert inside == f"tmpfs|{where}"
    assert not outside.endswith(f"|{where}") and not outside.startswith("tmpfs|")


def doctor_on_fuse(bindfs, workspace, mnt: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [*bindfs, "sh", "-c", ON_FUSE, "sh", str(workspace.root), str(mnt),
         "sh", "-c", 'cd "$1" && exec "$2" doctor', "sh", str(mnt), SIDECAR],
        capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})
    assert done.returncode in (0, 1), done.stderr  # 1: other findings of a test machine
    return done.stdout


def test_doctor_notes_a_file_backend_workspace_on_fuse(bindfs, workspace, tmp_path, monkeypatch):
    monkeypatch.delenv("SIDECAR_COORDINATION_URL", raising=False)
    mnt = tmp_path.resolve() / "mnt"
    mnt.mkdir()
    said = doctor_on_fuse(bindfs, workspace, mnt)
    assert (f"note    workspace {mnt} is on fuse (mounted at {mnt}): file locks there may be "
            "held by two machines at once") in said, said
    assert '[coordination] url = "redis://host:6379/0" in' in said
    here = subprocess.run([SIDECAR, "doctor"], cwd=workspace.root, capture_output=True, text=True)
    assert "file locks there may be held" not in here.stdout  # its local path: no note
    coordinated = doctor_on_fuse(bindfs, workspace, mnt,
                                 {"SIDECAR_COORDINATION_URL": "redis://127.0.0.1:6379/0"})
    assert "file locks there may be held" not in coordinated, coordinated


def leaders(ws_root: Path) -> int:
    count = 0
    for path in (ws_root / ".context" / "runtime" / "instances").glob("*.json"):
        try:
            count += read_json(path).get("role") == "leader"
        except (OSError, ValueError):  # removed (a dead instance's, cleaned) or being replaced
            continue
    return count


def test_through_fuse_the_leader_lock_is_not_the_backing_files_lock(bindfs, workspace, tmp_path,
                                                                     config_home, start_daemon):
    mnt = tmp_path.resolve() / "mnt"
    mnt.mkdir()
    log = open(tmp_path / "fuse-daemon.log", "wb")
    on_fuse = subprocess.Popen(
        [*bindfs, "sh", "-c", ON_FUSE, "sh", str(workspace.root), str(mnt),
         SIDECAR, "run", "--root", str(mnt)],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_until(lambda: leaders(workspace.root) == 1, 30)
        direct = start_daemon(workspace.root, wait_leader=False)  # the same files, by their own path
        # as two machines on one network volume could: both hold "the" leader lock, both lead.
        # Each says so in its log. (Their instance files cannot show both at once for long:
        # each takes the other's life lock, which it cannot see, for a dead instance's and
        # removes its file, which the other writes again at its next heartbeat.)
        wait_until(lambda: "leading (instance" in direct.output(), 30)
        time.sleep(1)  # some heartbeats of both
        fused = (tmp_path / "fuse-daemon.log").read_text()
        for said in (direct.output(), fused):
            assert said.count("leading (instance") == 1, said
            assert "stands by" not in said and "no longer leading" not in said, said
    finally:
        os.killpg(on_fuse.pid, signal.SIGTERM)
        try:
            on_fuse.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(on_fuse.pid, signal.SIGKILL)
            on_fuse.wait()
        log.close()
