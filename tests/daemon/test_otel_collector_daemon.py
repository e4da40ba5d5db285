"""A collector that hangs, then dies, while a daemon exports to it (a real Arize Phoenix on
loopback): no event is lost (every session's record complete), the daemon's memory stays within
its bound however much is sent meanwhile, `status` counts the spans dropped, and once the
collector is back the spans arrive again, with what it stored before still there."""

from __future__ import annotations

import itertools
import os
import signal
import time
from pathlib import Path

import orjson
import pytest

from helpers import read_json, run_cli, wait_until
from sidecar.base.ids import harness_id
from sidecar.layout import Workspace
from sidecar.telemetry.ids import trace_id
from support.phoenix import PhoenixServer

pytestmark = pytest.mark.slow

HOST = "claude-code"
TOOLS = 20  # tool uses per session's one turn: events on its span
FLOOD = 1500  # sessions per flood: their spans outnumber the exporter's queue (2048)
# What a second flood as large as the first may add to the daemon's resident memory: spans
# held for a collector that does not answer would add tens of MB (a turn of 20 events each).
MAX_GROWTH = 12 * 1024 * 1024
_names = itertools.count()


def drop_session(ws: Workspace, session: str) -> None:
    """One session's events as the hooks write them (named in arrival order, renamed into the
    inbox whole): a start, a turn of TOOLS tool uses, its end, the session's end."""
    kinds = ["session-start", "turn-start", *["tool-use"] * TOOLS, "turn-end", "session-end"]
    for kind in kinds:
        doc = {"event": kind, "session_id": session, "host": HOST, "ts": time.time(),
               "tool_name": "Bash"}
        name = f"{next(_names):020d}-0-otel.json"
        temp = ws.inbox / f".{name}.tmp"
        temp.write_bytes(orjson.dumps(doc))
        os.rename(temp, ws.inbox / name)


def flood(ws: Workspace, daemon, prefix: str, count: int) -> list[str]:
    """`count` sessions' events, all in the inbox at once: written while the daemon is stopped
    (SIGSTOP), as a burst it finds on waking (a listing taken while thousands of files are
    being added could miss some of them, which is not what is tested here)."""
    sessions = [f"{prefix}-{i}" for i in range(count)]
    os.kill(daemon.pid, signal.SIGSTOP)
    try:
        for session in sessions:
            drop_session(ws, session)
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
    return sessions


def complete(ws: Workspace, session: str) -> bool:
    """The session's record says completed, and its trace holds every event it was sent."""
    path = ws.session_dir(harness_id(HOST, session)) / "session.json"
    if not path.exists() or read_json(path)["status"] != "completed":
        return False
    events = [orjson.loads(line)["event"] for line in path.with_name("trace.jsonl").read_bytes().splitlines()]
    return events.count("tool.use") == TOOLS and events[-1] == "session.completed"


def all_complete(ws: Workspace, sessions: list[str]) -> bool:
    return not [n for n in os.listdir(ws.inbox) if n.endswith(".json")] \
        and all(complete(ws, s) for s in sessions)


def resident(pid: int) -> int:
    """The daemon's resident memory now (VmRSS), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/PID/status")


def export_report(ws: Workspace) -> dict:
    report = orjson.loads(run_cli("status", "--root", str(ws.root), "--json").stdout)
    [exporting] = [i["telemetry"] for i in report["workspaces"][0]["instances"] if "telemetry" in i]
    return exporting


def roots(phoenix: PhoenixServer) -> dict[str, dict]:
    """The root spans Phoenix holds, by trace id."""
    return {s["trace_id"]: s for s in phoenix.spans(parent_id="null")}


def trace_hex(session: str) -> str:
    return format(trace_id(harness_id(HOST, session)), "032x")


def test_a_collector_that_hangs_then_dies_loses_no_event_and_holds_no_memory(
        workspace, start_daemon, config_home, phoenix):
    with open(config_home / "config.toml", "a") as config:
        config.write(f'[otel]\nendpoint = "{phoenix.url}"\n')
    daemon = start_daemon(workspace.root)
    before = flood(workspace, daemon, "before", 1)
    wait_until(lambda: trace_hex(before[0]) in roots(phoenix), 30, 0.2)

    phoenix.freeze()  # it takes connections, and answers none
    first = flood(workspace, daemon, "hung", FLOOD)
    wait_until(lambda: all_complete(workspace, first), 180, 0.5)
    after_first = resident(daemon.pid)
    second = flood(workspace, daemon, "still-hung", FLOOD)
    wait_until(lambda: all_complete(workspace, second), 180, 0.5)
    after_second = resident(daemon.pid)
    assert after_second - after_first < MAX_GROWTH, (after_first, after_second)

    phoenix.kill()  # and now it is gone: connections refused
    gone = flood(workspace, daemon, "gone", 50)
    wait_until(lambda: all_complete(workspace, gone), 60, 0.2)
    report = export_report(workspace)
    assert report["dropped"] > 0 and report["error"]
    assert "dropped" in run_cli("status", "--root", str(workspace.root)).stdout.decode()

    phoenix.start()
    back = flood(workspace, daemon, "back", 3)
    wait_until(lambda: {trace_hex(s) for s in back} <= set(roots(phoenix)), 60, 0.5)
    stored = roots(phoenix)
    assert trace_hex(before[0]) in stored  # what it had before the outage is still there
    assert stored[trace_hex(back[0])]["attributes"]["gen_ai.conversation.id"] == back[0]
    # Each session's turn and root: status counts them taken once the instance file says so.
    wait_until(lambda: export_report(workspace)["exported"] >= 2 * (len(back) + 1), 10, 0.2)
    assert daemon.proc.poll() is None
