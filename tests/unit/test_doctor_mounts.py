"""doctor's shared-filesystem note: the mount a workspace lives on, read from a mountinfo, and
the note that a file-backend workspace on NFS, SMB or FUSE gets (and a Redis one does not)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.doctor import checks, mounts


def mountinfo(tmp_path: Path, base: Path) -> Path:
    """A mountinfo as the kernel writes it: optional fields, escapes, nested and stacked mounts."""
    b = str(base)
    lines = [
        "22 27 0:21 / /proc rw,relatime - proc proc rw",
        "27 1 254:0 / / rw,relatime shared:1 - overlay overlay rw,lowerdir=/l,upperdir=/u",
        f"30 27 0:40 / {b}/srv rw,relatime shared:5 master:2 - nfs4 filer:/export rw,vers=4.2",
        f"31 30 254:1 / {b}/srv/local rw,relatime - ext4 /dev/vdb rw",
        f"32 27 0:41 / {b}/my\\040share rw - cifs //nas/team\\040docs rw",
        f"33 27 0:42 / {b}/remote rw,nosuid,nodev - fuse.sshfs me@host:/work rw,user_id=0",
        f"34 27 0:43 / {b}/data rw - ext4 /dev/vdc rw",
        f"35 27 0:44 / {b}/data rw - 9p data rw,trans=virtio",  # mounted over the ext4
        f"36 27 0:45 / {b}/ceph rw - ceph 10.0.0.1:/ rw,name=admin",
        "not a mountinfo line",
        "37 27 0:46 / /broken rw no-separator-here",
    ]
    path = tmp_path / "mountinfo"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path.resolve() / "m"


def test_the_parser_reads_the_fields_past_the_optional_ones_and_unescapes(tmp_path, base):
    found = mounts.mounts(mountinfo(tmp_path, base))
    assert len(found) == 9  # the two lines not of the form are left out
    assert found[1] == mounts.Mount("/", "overlay", "overlay")
    assert found[2] == mounts.Mount(f"{base}/srv", "nfs4", "filer:/export")
    assert found[4] == mounts.Mount(f"{base}/my share", "cifs", "//nas/team docs")


def test_a_path_lives_on_the_longest_mount_point_above_it(tmp_path, base):
    info = mountinfo(tmp_path, base)
    assert mounts.mount_of(base / "srv" / "ws", info).fs_type == "nfs4"
    assert mounts.mount_of(base / "srv" / "local" / "ws", info).fs_type == "ext4"  # nested
    assert mounts.mount_of(base / "srvx", info).fs_type == "overlay"  # not below /srv
    assert mounts.mount_of(base / "srv", info).mount_point == f"{base}/srv"
    assert mounts.mount_of(base / "my share" / "ws", info).fs_type == "cifs"
    assert mounts.mount_of(base / "data", info).fs_type == "9p"  # the later mount hides the first


def test_a_path_is_looked_up_by_its_real_path(tmp_path, base):
    (base / "srv" / "ws").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(base / "srv" / "ws")
    assert mounts.mount_of(link, mountinfo(tmp_path, base)).fs_type == "nfs4"


def test_which_filesystems_cannot_be_trusted_with_locks_between_machines():
    unshared = [t for t in ("nfs", "nfs4", "cifs", "smb3", "smbfs", "virtiofs", "9p", "fuse",
                            "fuse.sshfs", "fuse.gcsfuse")
                if mounts.Mount("/x", t, "src").locks_unshared]
    assert len(unshared) == 10
    assert not [t for t in ("ext4", "xfs", "btrfs", "overlay", "tmpfs", "zfs", "ceph", "fuseblk")
                if mounts.Mount("/x", t, "src").locks_unshared]


def test_an_unreadable_mountinfo_names_no_mount(tmp_path):
    assert mounts.mount_of(tmp_path, tmp_path / "absent") is None


def test_a_file_backend_workspace_on_a_shared_filesystem_gets_a_note(tmp_path, base, monkeypatch):
    monkeypatch.delenv("SIDECAR_COORDINATION_URL", raising=False)
    info = mountinfo(tmp_path, base)
    on_nfs, on_sshfs = base / "srv" / "ws", base / "remote" / "ws"
    [nfs, sshfs] = checks._shared_filesystems([on_nfs, on_sshfs, on_nfs], info)  # each workspace once
    assert nfs.ok and nfs.note
    assert f"workspace {on_nfs} is on nfs4 (mounted at {base}/srv)" in nfs.what
    assert "may be held by two machines at once" in nfs.what
    assert '[coordination] url = "redis://host:6379/0"' in nfs.fix
    assert str(tmp_path / "config" / "config.toml") in nfs.fix
    assert f"is on fuse.sshfs (mounted at {base}/remote)" in sshfs.what


def test_a_local_workspace_gets_no_note(tmp_path, base, monkeypatch):
    monkeypatch.delenv("SIDECAR_COORDINATION_URL", raising=False)
    info = mountinfo(tmp_path, base)
    local = [base / "srv" / "local" / "ws", base / "elsewhere", base / "ceph" / "ws"]
    assert checks._shared_filesystems(local, info) == []


def test_a_redis_coordinated_workspace_gets_no_note(tmp_path, base, monkeypatch):
    info = mountinfo(tmp_path, base)
    monkeypatch.setenv("SIDECAR_COORDINATION_URL", "redis://127.0.0.1:6379/0")
    assert checks._shared_filesystems([base / "srv" / "ws"], info) == []
    monkeypatch.delenv("SIDECAR_COORDINATION_URL")
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text('[coordination]\nurl = "redis://filer:6379/0"\n')
    assert checks._shared_filesystems([base / "srv" / "ws"], info) == []
    (config / "config.toml").write_text("[coordination]\nurl = 6379\n")  # said elsewhere
    assert checks._shared_filesystems([base / "srv" / "ws"], info) == []
