"""Follow-up actions that may run on another machine, told apart by their runner's lease.

Where several machines serve a workspace (a distributed coordination backend), a leader
cannot watch a runner another machine started: its pid means nothing here. The runner holds a
lease in the coordination service while it runs, taken before it creates its start token
(followups/runner.py, runlease.py), and writes its status before the lease ends. So a leader
reads, in this order: the lease (it runs), the status (it ended, how), the start token (none:
it never started, and now never will; one with no lease and no status: its machine died).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from sidecar import jsonfile, safedir
from sidecar.coordination.base import Coordination, Unreachable
from sidecar.errors import SidecarError
from sidecar.followups import actions
from sidecar.layout import Workspace
from sidecar.procwatch import Proc

INTERRUPTED = "error: interrupted"  # what `actions.outcome` says of a runner that never said


def settle(coord: Coordination, ws: Workspace, log_path: Path, entry_id: str) -> Proc | None:
    """`actions.settle_start` for a runner that may be another machine's: the process its
    start token names while its lease lives (it runs on: adopt it), else None, and then
    `actions.outcome` tells how it ended (`error: interrupted` if it never said)."""
    from sidecar.followups.runner import claim_start

    token = log_path.name + ".started"
    try:
        with safedir.opened(log_path.parent, create=True) as folder:
            if claim_start(folder, token, '{"givenUp": true}'):
                return None  # it never will start
        started = orjson.loads(jsonfile.read_bytes(log_path.with_name(token)))
        alive = coord.run_alive(ws, entry_id)
    except (OSError, ValueError, SidecarError):
        return None
    pid, begun = started.get("pid"), started.get("start")
    if not alive or type(pid) is not int or type(begun) is not int:
        return None
    return Proc(pid, begun)


def outcome(coord: Coordination, ws: Workspace, log_path: Path, entry_id: str) -> str | None:
    """The outcome of an adopted action that may run on another machine; None while its
    lease says it runs, or while the coordination service cannot say."""
    try:
        if coord.run_alive(ws, entry_id):
            return None
    except Unreachable:
        return None
    ended = actions.outcome(log_path)  # its status is written before its lease ends
    if ended != INTERRUPTED:
        return ended
    if settle(coord, ws, log_path, entry_id) is not None:
        return None  # it started just now (its lease came first)
    return actions.outcome(log_path)  # `error: interrupted`: its machine died with it
