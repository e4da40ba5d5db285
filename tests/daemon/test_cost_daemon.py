"""A real daemon reads a session's cost at each turn end: the record's cost so far, each
turn's own share on its trace line, and the workspace's ledger by day, counted once even
when a batch is replayed after a kill."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

import orjson
import pytest

from helpers import read_json, session_record, wait_until
from sidecar.base.ids import harness_id
from sidecar.hosts.base import local_day
from sidecar.layout import Workspace
from support.transcripts import claude_turn

pytestmark = pytest.mark.daemon

SONNET_1 = {"input": 1000, "output": 2000, "cacheRead": 100_000, "cacheWrite": 10_000}
SONNET_2 = {"input": 500, "output": 1000, "cacheRead": 200_000}
# claude-sonnet-4-5: $3 input, $15 output, $0.30 cache read, $3.75 cache write per million
TURN_1 = 0.001 * 3 + 0.002 * 15 + 0.1 * 0.3 + 0.01 * 3.75  # 0.1005
TURN_2 = 0.0005 * 3 + 0.001 * 15 + 0.2 * 0.3  # 0.0765


def drop(ws: Workspace, event: dict, name: str) -> None:
    """One Claude Code hook's event in the inbox, as `sidecar emit` writes it (a fixed name,
    so that the very file can be found again, as after a crash)."""
    temp = ws.inbox / f".{name}.tmp"
    temp.write_bytes(orjson.dumps({"host": "claude-code", "session_id": "c1", **event}))
    temp.rename(ws.inbox / f"{name}.json")


def trace(ws: Workspace) -> list[dict]:
    path = ws.session_dir(harness_id("claude-code", "c1")) / "trace.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def cost(ws: Workspace) -> dict | None:
    return ((session_record(ws, "c1") or {}).get("metadata", {}).get("sidecar", {})).get("cost")


def test_a_session_s_cost_is_read_at_each_turn_end_and_counted_once(workspace, tmp_path, start_daemon):
    ws = workspace
    at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    day = local_day(time.time())
    transcript = tmp_path / "c1.jsonl"
    transcript.write_bytes(claude_turn("msg_1", "claude-sonnet-4-5", at, SONNET_1, "c1"))
    seen = {"transcript_path": str(transcript), "cwd": str(ws.root)}
    daemon = start_daemon(ws.root)
    stamp = f"{time.time_ns():020d}-{os.getpid()}"
    drop(ws, {"event": "session-start", **seen}, f"{stamp}-a")
    drop(ws, {"event": "turn-start", **seen}, f"{stamp}-b")
    drop(ws, {"event": "turn-end", **seen}, f"{stamp}-c")

    first = wait_until(lambda: cost(ws), 15)  # read at the turn's end: the session goes on
    assert session_record(ws, "c1")["status"] == "active"
    assert first == {"usd": pytest.approx(TURN_1), "source": "table", "models": ["claude-sonnet-4-5"],
                     "unpriced": [], "days": {day: pytest.approx(TURN_1)}}

    with open(transcript, "ab") as out:  # the second turn
        out.write(claude_turn("msg_2", "claude-sonnet-4-5", at, SONNET_2, "c1"))
    drop(ws, {"event": "turn-start", **seen}, f"{stamp}-d")
    drop(ws, {"event": "turn-end", **seen}, f"{stamp}-e")
    second = wait_until(lambda: (c := cost(ws)) and c["usd"] > first["usd"] and c, 15)
    assert second["usd"] == pytest.approx(TURN_1 + TURN_2)

    ends = [line["data"] for line in trace(ws) if line["event"] == "turn.end"]
    assert [d["cost"] for d in ends] == [
        {"usd": pytest.approx(TURN_1), "source": "table", "model": "claude-sonnet-4-5"},
        {"usd": pytest.approx(TURN_2), "source": "table", "model": "claude-sonnet-4-5"}]
    assert [d["tokens"] for d in ends] == [SONNET_1, {**SONNET_2, "cacheWrite": 0}]

    # Killed, and the second turn's end found again, as a replay after a crash: the session
    # then ends, with nothing new in its transcript.
    daemon.kill()
    drop(ws, {"event": "turn-end", **seen}, f"{stamp}-e")
    start_daemon(ws.root)
    drop(ws, {"event": "session-end", "reason": "exit", **seen}, f"{stamp}-f")
    wait_until(lambda: session_record(ws, "c1")["status"] == "completed", 15)
    wait_until(lambda: not any(ws.inbox.glob("*.json")), 15)

    usage = read_json(ws.runtime / "usage.json")
    assert usage["usd"] == pytest.approx(TURN_1 + TURN_2)
    assert usage["days"] == {day: {"usd": pytest.approx(TURN_1 + TURN_2), "sessions": 1}}
    assert usage["cacheRead"] == 300_000 and usage["sessions"] == 1
    assert len([line for line in trace(ws) if line["event"] == "turn.end"]) == 2
