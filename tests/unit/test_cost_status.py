"""What a session cost in `sidecar status --session` (its cost, source, models, tokens with the
cache's, its last turns' own cost from its trace) and what a workspace spent in `sidecar status`
(today's from usage.json's `days`, and its total), as text and as --json. The files carry the
shapes the daemon writes (docs/cost.md)."""

from __future__ import annotations

import time

import orjson

from helpers import invoke
from sidecar.base import exitcodes
from sidecar.base.ids import harness_id
from support.stores import ingest

NOW = time.time()
SONNET = "claude-sonnet-4-5"


def today() -> str:
    """The local day, as the daemon keys a cost's `days`."""
    return time.strftime("%Y-%m-%d", time.localtime())


def with_costs(ws, session: str) -> None:
    """The record's cost object and the trace's turn ends with their own, as a turn end
    leaves them."""
    folder = ws.session_dir(harness_id("claude-code", session))
    record = orjson.loads((folder / "session.json").read_bytes())
    record["metadata"]["sidecar"]["tokens"] = {"input": 2400, "output": 610, "cacheRead": 81_000,
                                               "cacheWrite": 1_500}
    record["metadata"]["sidecar"]["cost"] = {
        "usd": 0.4213, "source": "table", "models": [SONNET], "unpriced": [],
        "days": {today(): 0.4213}}
    (folder / "session.json").write_bytes(orjson.dumps(record))
    lines = [orjson.loads(line) for line in (folder / "trace.jsonl").read_bytes().splitlines()]
    ends = [line for line in lines if line["event"] == "turn.end"]
    assert len(ends) == 2
    for line, usd, grew in zip(ends, (0.3, 0.1213), (1200, 1200), strict=True):
        line["data"]["tokens"] = {"input": grew, "output": 305, "cacheRead": 40_500, "cacheWrite": 750}
        line["data"]["cost"] = {"usd": usd, "source": "table", "model": SONNET}
    (folder / "trace.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))


def test_status_session_says_the_cost_its_source_model_and_each_turns_own(workspace):
    ingest(workspace, "s-1", "session-start", "turn-start", "turn-end", "turn-start", "turn-end",
           at=NOW - 120)
    with_costs(workspace, "s-1")
    result = invoke("status", "--session", "s-1", "--root", str(workspace.root))
    assert result.returncode == exitcodes.OK, result.stderr
    text = result.stdout.decode()
    assert "tokens     input 2,400, output 610, cache read 81,000, cache write 1,500" in text
    assert f"cost       $0.42 (priced by the genai-prices table; {SONNET})" in text
    turns = [line for line in text.splitlines() if line.startswith("  turn ")]
    assert len(turns) == 2
    assert f" $0.30 ({SONNET})  in " in turns[0]  # (its time says the day too after midnight)
    assert turns[1].endswith("$0.12 (claude-sonnet-4-5)  in 1,200 · out 305 · cache read 40,500 "
                             "· write 750")
    report = orjson.loads(invoke("status", "--session", "s-1", "--json", "--root",
                                 str(workspace.root)).stdout)
    assert report["cost"]["usd"] == 0.4213 and report["cost"]["source"] == "table"
    assert [t["cost"]["usd"] for t in report["turns"]] == [0.3, 0.1213]
    assert report["turns"][0]["tokens"]["cacheRead"] == 40_500


def test_status_session_says_why_a_cost_is_unknown(workspace):
    ingest(workspace, "s-2", "session-start", "turn-start", "turn-end", at=NOW - 60)
    folder = workspace.session_dir(harness_id("claude-code", "s-2"))
    record = orjson.loads((folder / "session.json").read_bytes())
    record["metadata"]["sidecar"]["cost"] = {"usd": None, "source": "unknown", "models": ["local-llm"],
                                             "unpriced": ["local-llm"], "days": {},
                                             "why": "no price for model local-llm"}
    (folder / "session.json").write_bytes(orjson.dumps(record))
    text = invoke("status", "--session", "s-2", "--root", str(workspace.root)).stdout.decode()
    assert "cost       unknown: no price for model local-llm (local-llm)" in text


def test_status_says_what_the_workspace_spent_today_and_in_all(workspace):
    (workspace.runtime / "usage.json").write_bytes(orjson.dumps({
        "input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "sessions": 3, "usd": 12.5,
        "days": {"2020-01-01": {"usd": 10.0, "sessions": 2},
                 today(): {"usd": 2.5, "sessions": 1}}}))
    text = invoke("status", "--root", str(workspace.root)).stdout.decode()
    assert "cost       $2.50 today (1 session), $12.50 in all" in text
    report = orjson.loads(invoke("status", "--json", "--root", str(workspace.root)).stdout)
    [ws] = report["workspaces"]
    assert ws["cost"] == {"usd": 12.5, "today": {"usd": 2.5, "sessions": 1}}
