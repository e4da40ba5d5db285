"""The last meaningful line of a firing's log: what a failed follow-up last said.

A host that fails usually says why on its last line (`Not logged in · Please run /login`),
so `status` and `doctor` show that line beside the outcome. Only the log's tail is read (a
few KB, however long the log), the log and its folders are opened without following a link
(safedir), a file that is not a plain regular file is not read, and control characters are
escaped, so what the log says can never redraw the terminal that shows it.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from sidecar import safedir
from sidecar.base.escapes import escaped
from sidecar.layout import Workspace

TAIL_BYTES = 4096
MAX_SHOWN = 200
COLOUR = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")  # terminal colour and cursor codes
HEADER = re.compile(r"\$ \[.*\]|\(cwd .*\)( as .*)?")  # the lines sidecar writes first


def last_line(ws: Workspace, hook_id: str, log: str | None) -> str | None:
    """The last line of the firing's log that says something; None if there is none, or the
    log cannot be read safely."""
    found = tail(ws, hook_id, log)
    return None if found is None else meaningful(*found)


def last_lines(ws: Workspace, hook_id: str, log: str | None, count: int) -> list[str]:
    """The log's last `count` lines that say something (as a terminal shows them), oldest
    first; none if the log cannot be read safely."""
    found = tail(ws, hook_id, log)
    if found is None:
        return []
    data, whole = found
    lines = data.split(b"\n")
    shown: list[str] = []
    for line in reversed(lines if whole else lines[1:]):
        text = meaningful(line, whole=True)
        if text is not None:
            shown.append(text)
            if len(shown) == count:
                break
    return shown[::-1]


def tail(ws: Workspace, hook_id: str, log: str | None) -> tuple[bytes, bool] | None:
    """The log's last TAIL_BYTES, and whether they start at its first byte; None if it
    cannot be read safely."""
    path = ws.firing_log(hook_id, log or "")
    return None if path is None else read_tail(path, TAIL_BYTES)


def read_tail(path: Path, size: int) -> tuple[bytes, bool] | None:
    """The file's last `size` bytes, and whether they start at its first byte; None if it
    cannot be read safely: a link on the way or at the end, a FIFO, a device, or a hard link
    (which may be any other file of its owner's, on the same filesystem)."""
    try:
        with safedir.opened(path.parent) as folder:
            fd = os.open(path.name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                    return None
                start = max(0, st.st_size - size)
                data = os.pread(fd, size, start)
            finally:
                os.close(fd)
    except OSError:
        return None
    return data, start == 0


def meaningful(data: bytes, whole: bool) -> str | None:
    """The last line of `data` with text in it (not one of sidecar's own first lines), as a
    terminal may show it; `whole` says `data` starts at the log's first byte (otherwise its
    first line may be cut, and is left out)."""
    lines = data.decode("utf-8", "replace").split("\n")
    for line in reversed(lines if whole else lines[1:]):
        # What a terminal would show of a line redrawn with `\r`: its last non-blank part.
        parts = [p.strip() for p in COLOUR.sub("", line).split("\r") if p.strip()]
        if parts and not HEADER.fullmatch(parts[-1]):
            return _shown(parts[-1])
    return None


def _shown(text: str) -> str:
    shown = escaped(text)
    return shown if len(shown) <= MAX_SHOWN else shown[:MAX_SHOWN - 1] + "…"
