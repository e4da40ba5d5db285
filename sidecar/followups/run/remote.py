"""Follow-up actions that may run on another machine, told apart by their runner's lease.

Where several machines serve a workspace (a distributed coordination backend), a leader
cannot watch a runner another machine started: its pid means nothing here. The runner holds a
lease in the coordination service while it runs, taken before it creates its start token
(runner.py, lease.py), and writes its status before the lease ends. So a leader
reads, in this order: the lease (it runs), the status (it ended, how), the start token (none:
it never started, and now never will; one with no lease and no status: its machine died).

A lease is missing for a moment after a Redis restart without persistence too, until its
runner sets it again (within its refresh): so a runner is taken to be dead only once its lease
has been missing for GRACE. A start token that names this machine's own process space is a
runner this instance can watch by its pid, as the file backend does.
"""

from __future__ import annotations

import time
from pathlib import Path

import orjson

from sidecar import jsonfile, safedir
from sidecar.base.errors import SidecarError
from sidecar.base.proc import process_space
from sidecar.coordination.base import Coordination
from sidecar.followups.run import actions
from sidecar.layout import Workspace
from sidecar.procwatch import Proc

INTERRUPTED = "error: interrupted"  # what `actions.outcome` says of a runner that never said
GRACE = 2.5  # seconds a runner's lease may be missing before its machine is taken to be dead


class NotYet(SidecarError):
    """The runner's lease is missing, but not for long enough to tell: looked at again soon."""


class Absences:
    """Since when each runner's lease has been missing, on the monotonic clock."""

    def __init__(self) -> None:
        self.since: dict[str, float] = {}

    def lapsed(self, entry_id: str) -> bool:
        first = self.since.setdefault(entry_id, time.monotonic())
        return time.monotonic() - first >= GRACE

    def seen(self, entry_id: str) -> None:
        self.since.pop(entry_id, None)


def started(log_path: Path) -> dict[str, object] | None:
    """The runner's start token, None if there is none (or it cannot be read)."""
    try:
        token = orjson.loads(jsonfile.read_bytes(log_path.with_name(log_path.name + ".started")))
    except (OSError, ValueError, SidecarError):
        return None
    return token if isinstance(token, dict) else None


def runs_here(log_path: Path) -> bool:
    """Whether the firing's runner started in this process space (its pid means something)."""
    token = started(log_path)
    return token is not None and token.get("space") == process_space()


def settle(coord: Coordination, ws: Workspace, log_path: Path, entry_id: str,
           absences: Absences, runs_as: int) -> Proc | None:
    """`actions.settle_start` for a runner that may be another machine's: the process its
    start token names while its lease lives (it runs on: adopt it), else None, and then
    `actions.outcome` tells how it ended (`error: interrupted` if it never said). NotYet while
    its lease has been missing for less than GRACE; Unreachable while the service cannot say."""
    from sidecar.followups.run.runner import claim_start

    name = log_path.name + ".started"
    try:
        with safedir.opened(log_path.parent, create=True) as folder:
            if claim_start(folder, name, '{"givenUp": true}'):
                return None  # it never will start
    except OSError:
        return None
    token = started(log_path)
    if token is None:
        return None
    if token.get("space") == process_space():
        return actions.settle_start(log_path, runs_as)  # its pid tells, here
    pid, begun = token.get("pid"), token.get("start")
    if type(pid) is not int or type(begun) is not int:
        return None  # given up (or not a runner's): nothing to adopt
    if coord.run_alive(ws, entry_id):
        absences.seen(entry_id)
        return Proc(pid, begun)
    if not absences.lapsed(entry_id):
        raise NotYet(f"the lease of {entry_id}'s runner is missing; looked at again soon")
    return None


def outcome(coord: Coordination, ws: Workspace, log_path: Path, entry_id: str,
            absences: Absences, runs_as: int) -> str | None:
    """The outcome of an adopted action that may run on another machine; None while its
    lease says it runs, or while it cannot be told yet."""
    try:
        if coord.run_alive(ws, entry_id):
            absences.seen(entry_id)
            return None
        ended = actions.outcome(log_path)  # its status is written before its lease ends
        if ended != INTERRUPTED:
            return ended
        if settle(coord, ws, log_path, entry_id, absences, runs_as) is not None:
            return None  # it started just now (its lease came first)
    except SidecarError:  # NotYet, Unreachable: looked at again at the next poll
        return None
    return actions.outcome(log_path)  # `error: interrupted`: its machine died with it
