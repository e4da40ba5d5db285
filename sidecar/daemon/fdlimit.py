"""The open-file limit: raised at start, and how many workspaces fit within it."""

from __future__ import annotations

import resource
from contextlib import suppress

FDS_PER_WORKSPACE = 2  # its leader lock and its instance's life lock, held while served
FDS_SPARE = 64  # kept free for the work itself: state files, logs, pipes, actions starting


def raise_fd_limit() -> int:
    """Raise the soft limit on open files to the hard one (systemd's soft default is 1,024,
    which two locks per workspace exhaust at about 500 workspaces); returns the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        with suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
    return soft


def workspaces_within(fd_limit: int) -> int:
    return max(0, (fd_limit - FDS_SPARE) // FDS_PER_WORKSPACE)


def files_needed(workspaces: int) -> int:
    return workspaces * FDS_PER_WORKSPACE + FDS_SPARE
