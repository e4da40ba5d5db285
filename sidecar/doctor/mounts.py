"""Which mount a path lives on, read from /proc/self/mountinfo, and whether its file locks can
be trusted between machines.

The file backend coordinates the instances serving a workspace with flock(2) locks on the
workspace's own files: sound on a local filesystem, where one kernel holds every lock. On a
network or shared filesystem each machine's kernel may hold its own: NFS sends flock as a
byte-range lock to the server, but a mount with `nolock` or `local_lock=` keeps it local, a
client cut off past its lease keeps believing it holds a lock the server gave away, and NFSv3
may never let a crashed client's lock go; SMB, virtio-fs and 9p lock per client unless the
server is set up otherwise; a FUSE filesystem (sshfs, gcsfuse, s3fs, rclone...) locks only
inside the kernel that mounted it. CephFS is left out: its metadata servers hold flock and
fcntl locks for every client, so a lock is one across machines.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")
# The filesystem types whose locks may be held by two machines at once ("fuse.<name>" too).
UNSHARED_LOCKS = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "virtiofs", "9p", "fuse"})
_ESCAPE = re.compile(rb"\\([0-7]{3})")


@dataclass(frozen=True)
class Mount:
    mount_point: str
    fs_type: str
    source: str

    @property
    def locks_unshared(self) -> bool:
        """Whether another machine's kernel may hold this filesystem's locks apart from ours."""
        return self.fs_type in UNSHARED_LOCKS or self.fs_type.startswith("fuse.")


def _unescape(field: bytes) -> str:
    """The kernel writes a space, tab, newline and backslash in a path as \\040, \\011, \\012
    and \\134; the bytes are the filesystem's (decoded as the os module does)."""
    return os.fsdecode(_ESCAPE.sub(lambda m: bytes([int(m.group(1), 8)]), field))


def parse_line(line: bytes) -> Mount | None:
    """One mountinfo line: `id parent major:minor root mount-point options [optional...] -
    type source super-options`; None for a line not of that form."""
    fields = line.split()
    try:
        separator = fields.index(b"-", 6)  # the optional fields end at a lone "-"
        fs_type, source = fields[separator + 1], fields[separator + 2]
    except (ValueError, IndexError):
        return None
    return Mount(_unescape(fields[4]), _unescape(fs_type), _unescape(source))


def mounts(mountinfo: Path = MOUNTINFO) -> list[Mount]:
    """Every mount, in the kernel's order (a later mount over the same point hides an earlier)."""
    found = (parse_line(line) for line in mountinfo.read_bytes().splitlines())
    return [mount for mount in found if mount is not None]


def _contains(mount_point: str, path: str) -> bool:
    return mount_point == "/" or path == mount_point or path.startswith(mount_point + "/")


def mount_of(path: Path, mountinfo: Path = MOUNTINFO) -> Mount | None:
    """The mount `path` lives on: the longest mount point above its real path (the last
    mounted, of two on the same point); None if mountinfo cannot be read or names none."""
    real = os.path.realpath(path)
    try:
        candidates = [(len(m.mount_point), index, m) for index, m in enumerate(mounts(mountinfo))
                      if _contains(m.mount_point, real)]
    except OSError:
        return None
    return max(candidates, key=lambda c: c[:2])[2] if candidates else None
