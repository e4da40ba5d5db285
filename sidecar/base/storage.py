"""Whether sidecar can write where a workspace keeps its runtime.

A read-only file system or a full disk stops every write (no event is recorded, no follow-up
can be claimed or recorded) while the daemon lives on, holding its locks: `status` and
`doctor` say which, since a daemon that cannot write would otherwise pass for a healthy one,
or for a dead one. The follow-ups claim nothing meanwhile: a claim whose action cannot be
started, and whose release cannot be written either, would be lost (`fire.py`).
"""

from __future__ import annotations

import errno
import os

FULL_BELOW = 1 << 20  # bytes free under which a disk counts as full: a firing's log needs room
NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)
READ_ONLY = "is on a read-only file system"
STOPS = "sidecar's writes there may fail, so follow-ups wait"  # what `status` and `doctor` add


def trouble(path: str | os.PathLike[str]) -> str | None:
    """Why nothing can be written below `path` now, in words that follow its name ("is on a
    full disk (12 KiB free)"); None where it can be, or where that cannot be told."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    if st.f_flag & os.ST_RDONLY:
        return READ_ONLY
    free = st.f_bavail * st.f_frsize
    if free < FULL_BELOW or (st.f_files > 0 and st.f_favail == 0):
        return f"is on a full disk ({free // 1024} KiB free)"
    return None


def said(path: str | os.PathLike[str]) -> str | None:
    """`trouble` as `status` says it: the path, and what it stops."""
    why = trouble(path)
    return None if why is None else f"{path} {why}: {STOPS}"


def no_room(exc: BaseException | None) -> bool:
    """Whether `exc`, or an error it came of, is a full disk, a quota or a read-only mount."""
    while exc is not None:
        if isinstance(exc, OSError) and exc.errno in NO_ROOM:
            return True
        exc = exc.__cause__ or exc.__context__
    return False
