"""The lines `sidecar logs` shows: the daemon's log file and a workspace's follow-up logs.

A `Reader` remembers how far it read each file (by device and inode, so a daemon.log renamed
to daemon.log.1 by rotation is read on where it was left), and each `read()` gives the lines
written since, with their time and source. A daemon record carries its own time; a follow-up
log's lines carry none (the command writes them as it likes), so each is given the time it
was seen: when the log is read back, its last change (mtime); when followed, the moment the
line was read.

The follow-up logs are reached without following a link (safedir: `.context` down, then each
folder and file with O_NOFOLLOW), and only plain regular files are read; a log that a root
daemon wrote for this workspace is read as it is, never changed. What a log says is cleaned
before it is shown: colour codes dropped, a line redrawn with `\\r` shown as its last state,
control characters escaped, so no log can redraw the terminal.
"""

from __future__ import annotations

import os
import re
import stat
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from sidecar import layout, safedir
from sidecar.base.escapes import escaped
from sidecar.base.timeutil import parse_ts
from sidecar.daemon.logfile import rotated
from sidecar.layout import HOOK_NAME, LOG_NAME, Workspace

RECORD = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (\d+) ([A-Z]+) (.*)")
FIRING_LOG = re.compile(r"(\d{8}T\d{6}\.\d{3}Z)-(.+)\.log")  # followups/fire.py log_path
COLOUR = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
READ_AT_MOST = 4 * 1024 * 1024  # of one file in one read: a runaway log cannot fill memory
FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Line:
    ts: float
    source: str  # `daemon`, or a follow-up's hook id and short session id
    text: str
    level: str = ""  # a daemon record's: INFO, WARNING, ERROR...


@dataclass(frozen=True)
class Scope:
    """What to show: one workspace's (None: the daemon's lines only), one hook's, one
    session's (its host session id and harness id)."""

    ws: Workspace | None = None
    hook: str | None = None
    session_ids: tuple[str, ...] = ()


@dataclass
class _File:
    offset: int = 0
    pending: bytes = b""  # a last line still being written
    last_ts: float = 0.0  # the daemon record continuation lines belong to
    last_kept: bool = False
    skip_line: bool = False


@dataclass
class Reader:
    scope: Scope
    files: dict[tuple[int, int], _File] = field(default_factory=dict)
    primed: bool = False  # read once: what is read from now on was written just now

    def read(self, *, following: bool) -> list[Line]:
        """Every line written since the last read, oldest first. A follow-up line is stamped
        with its log's last change on the first read, with the moment it is read after that;
        `following`: a last line without its newline is held back until it is whole (or its
        firing has ended)."""
        lines = [*self._daemon_lines(following)]
        if self.scope.ws is not None:
            lines += self._follow_up_lines(self.scope.ws, following)
        lines.sort(key=lambda line: line.ts)  # stable: each file's own order is kept
        self.primed = True
        return lines

    # -- the daemon's log -------------------------------------------------------------------

    def _daemon_lines(self, following: bool) -> list[Line]:
        lines: list[Line] = []
        for path in rotated(layout.daemon_log()):
            try:
                fd = os.open(path, FILE_FLAGS)
            except OSError:
                continue  # not there (yet), or not readable by this user
            with open(fd, "rb") as f:
                data, state = self._new_bytes(f.fileno(), ended=not following)
            for raw in data.decode("utf-8", "replace").splitlines():
                lines += self._daemon_line(raw, state)
        return lines

    def _daemon_line(self, raw: str, state: _File) -> list[Line]:
        match = RECORD.fullmatch(raw)
        if match is None:  # a traceback's or a long message's next line
            return [Line(state.last_ts, "daemon", _clean(raw))] if state.last_kept else []
        stamp, _pid, level, message = match.groups()
        state.last_ts = parse_ts(stamp) or 0.0
        state.last_kept = self._wanted(message)
        if not state.last_kept:
            return []
        return [Line(state.last_ts, "daemon", self._shorten(_clean(message)), level)]

    def _wanted(self, message: str) -> bool:
        """A record about this workspace (it starts with its path) or about the daemon as a
        whole (no workspace's path first), narrowed to the hook and session asked for."""
        ws = self.scope.ws
        if ws is not None and message.startswith("/") and not message.startswith(f"{ws.root}:"):
            return False  # another workspace's
        if self.scope.session_ids and not any(s in message for s in self.scope.session_ids):
            return False
        hook = self.scope.hook
        return hook is None or re.search(rf"(?<![\w.-]){re.escape(hook)}(?![\w.-])", message) is not None

    def _shorten(self, text: str) -> str:
        ws = self.scope.ws
        if ws is None:
            return text
        root = str(ws.root)
        text = text.removeprefix(f"{root}: ")
        return text.replace(f"{root}/", "")

    # -- follow-up logs ---------------------------------------------------------------------

    def _follow_up_lines(self, ws: Workspace, following: bool) -> list[Line]:
        lines: list[Line] = []
        try:
            top = safedir.open_dir(ws.logs / "hooks")
        except OSError:
            return lines  # no firing yet (or a folder that is a link: never read through)
        try:
            for hook_id in sorted(os.listdir(top)):
                if HOOK_NAME.fullmatch(hook_id) and self.scope.hook in (None, hook_id):
                    lines += self._hook_lines(top, hook_id, following)
        finally:
            os.close(top)
        return lines

    def _hook_lines(self, top: int, hook_id: str, following: bool) -> list[Line]:
        try:
            folder = os.open(hook_id, safedir.DIR_FLAGS, dir_fd=top)
        except OSError:
            return []
        lines: list[Line] = []
        try:
            names = set(os.listdir(folder))
            for name in sorted(names):
                session = _session_of(name)
                if session is None or not self._session_wanted(session):
                    continue
                ended = not following or f"{name}.status" in names
                source = f"{hook_id} {session[:8]}"
                lines += self._firing_lines(folder, name, source, following, ended)
        finally:
            os.close(folder)
        return lines

    def _session_wanted(self, session: str) -> bool:
        return not self.scope.session_ids or any(session == _as_named(s) for s in self.scope.session_ids)

    def _firing_lines(self, folder: int, name: str, source: str, following: bool, ended: bool) -> list[Line]:
        try:
            fd = os.open(name, FILE_FLAGS, dir_fd=folder)
        except OSError:
            return []
        with open(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                return []  # a FIFO, a device, or a hard link to some other file
            data, _ = self._new_bytes(f.fileno(), ended=ended)
        ts = time.time() if self.primed else st.st_mtime
        return [Line(ts, source, self._shorten(_clean(raw)))
                for raw in data.decode("utf-8", "replace").splitlines()]

    # -- reading on ---------------------------------------------------------------------------

    def _new_bytes(self, fd: int, ended: bool) -> tuple[bytes, _File]:
        """What the file holds past where it was last read, whole lines only unless `ended`."""
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        state = self.files.get(key)
        if state is None:  # first seen: of a long file, its last READ_AT_MOST bytes
            state = self.files[key] = _File(offset=max(0, st.st_size - READ_AT_MOST))
            state.skip_line = state.offset > 0
        if st.st_size < state.offset:  # truncated: read it from its start again
            state.offset, state.pending = 0, b""
        data = state.pending + os.pread(fd, READ_AT_MOST, state.offset)
        state.offset += len(data) - len(state.pending)
        if state.skip_line:  # its first line was cut
            data = data.partition(b"\n")[2]
            state.skip_line = False
        whole, newline, rest = data.rpartition(b"\n")
        if ended:
            state.pending = b""
            return data, state
        state.pending = rest
        return whole + newline, state


def _session_of(name: str) -> str | None:
    """The session id a firing's log is named for (as fire.py writes it); None: not a log."""
    if not LOG_NAME.fullmatch(name):
        return None
    match = FIRING_LOG.fullmatch(name)
    return match.group(2) if match else "?"


def _as_named(session_id: str) -> str:
    """A session id as a log's name carries it (followups/fire.py log_path)."""
    return "".join(c if c.isalnum() or c in "._:-" else "_" for c in session_id)[:100]


def _clean(raw: str) -> str:
    parts = [p for p in COLOUR.sub("", raw).split("\r") if p.strip()]
    return escaped(parts[-1].rstrip() if parts else "", keep="\t")  # a tab moves no line


def follow_up_folders(ws: Workspace) -> list[Path]:
    """The folders whose changes bring new follow-up lines: logs/, logs/hooks/, each hook's."""
    hooks = ws.logs / "hooks"
    found = [ws.logs, hooks]
    with suppress(OSError), safedir.opened(hooks) as top:
        found += [hooks / name for name in sorted(os.listdir(top)) if HOOK_NAME.fullmatch(name)]
    return found
