"""The host processes of one workspace's live sessions: which sessions each one holds, and
which of them are gone.

Ingestion tells it each change (`note`): a session's host process is watched from its first
event that names it, and forgotten at the session's end. The process watch (watch.py) calls
`exited` from its own thread; the workspace's step asks `ended` which sessions lost their host,
and reports them ended through the inbox.

An exit is reported only `grace` seconds after it was seen: a host's hooks may outlive it
(Claude Code 2.1.332 exits without waiting for its SessionEnd hook), and the host's own end,
still on its way, says better why the session ended than its exit does.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable

from sidecar.procwatch import Proc
from sidecar.sessions.model import Key
from sidecar.vocabulary import EventKind, SessionChange


class HostWatch:
    """Host process -> the sessions it holds, for one workspace."""

    def __init__(self, watch: Callable[[Proc], None] = lambda proc: None,
                 space: str | None = None, unknown_is_ours: bool = True, grace: float = 0.0) -> None:
        self.watch = watch  # asks the process watch to call `exited` once `proc` is gone
        self.space = space  # where this process's pids mean something (proc.process_space)
        # A host whose event named no space (a plugin's own writer) is taken to run here,
        # unless another machine may be where it runs.
        self.unknown_is_ours = unknown_is_ours
        self.hosts: dict[Proc, set[Key]] = {}
        self.gone: queue.SimpleQueue[tuple[Proc, float]] = queue.SimpleQueue()
        self.grace = grace  # seconds between an exit and its report
        self.waiting: list[tuple[float, Proc]] = []  # (monotonic time due, process) to report

    def follow(self, proc: Proc, key: Key) -> None:
        """Watch the host process `proc` for the session `key` (which it now holds)."""
        if key in self.hosts.get(proc, ()):
            return  # watched already: the common case, every event of a live session
        for other, keys in self.hosts.items():
            if other != proc:
                keys.discard(key)  # the session moved to another process (a resume)
        if proc not in self.hosts:
            self.watch(proc)  # its exit comes once, whichever sessions it holds by then
        self.hosts.setdefault(proc, set()).add(key)

    def watched(self) -> set[Key]:
        return {key for keys in self.hosts.values() for key in keys}

    def only(self, here: dict[Key, Proc]) -> None:
        """Watch exactly these sessions' hosts (a stand-by's view of its own machine)."""
        for key in self.watched() - here.keys():
            self.forget(key)
        for key, proc in here.items():
            self.follow(proc, key)

    def forget(self, key: Key) -> None:
        """The session ended: its host's exit says nothing of it any more."""
        for keys in self.hosts.values():
            keys.discard(key)

    def note(self, changes: list[SessionChange]) -> None:
        """Follow what a batch of session changes says of host processes."""
        for change in changes:
            key = (change.host, change.session_id)
            if change.kind == EventKind.SESSION_END:
                self.forget(key)
            elif change.host_pid is not None and self.watchable(change.host_space):
                self.follow(Proc(change.host_pid, change.host_start), key)

    def watchable(self, space: str | None) -> bool:
        """Whether a host's pid from `space` names a process this one can watch: one of
        another machine, or of another PID namespace, is never looked up here."""
        return self.unknown_is_ours if space is None else space == self.space

    def exited(self, proc: Proc) -> None:
        """The process watch's word that `proc` is gone (from any thread)."""
        self.gone.put((proc, time.monotonic()))

    def _take_exits(self) -> None:
        while not self.gone.empty():
            proc, at = self.gone.get()
            self.waiting.append((at + self.grace, proc))

    def due_in(self) -> float | None:
        """Seconds until the next exit is to be reported (None: none waits)."""
        self._take_exits()
        return max(0.0, min(due for due, _ in self.waiting) - time.monotonic()) if self.waiting else None

    def ended(self) -> list[tuple[Proc, list[Key]]]:
        """Each watched host that exited, its grace over, since the last look, with the
        sessions it held (sorted); it is forgotten."""
        self._take_exits()
        now = time.monotonic()
        found = [(proc, sorted(self.hosts.pop(proc, set()))) for due, proc in self.waiting if due <= now]
        self.waiting = [(due, proc) for due, proc in self.waiting if due > now]
        return found
