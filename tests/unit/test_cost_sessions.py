"""What sessions cost, where a user reads it in `sidecar sessions`: the COST column, `--json`'s
cost object, and `--since`'s spend per workspace and across them, a session of unknown cost
counted as unpriced, never as $0. The records carry the cost object the daemon writes
(docs/cost.md); they are written as the daemon leaves them, through the session store."""

from __future__ import annotations

import datetime
import time

import orjson
import pytest
from typer.testing import CliRunner

from helpers import invoke
from sidecar.base import exitcodes
from sidecar.base.ids import harness_id
from sidecar.cli.main import app
from sidecar.layout import Workspace
from support.stores import ingest

NOW = time.time()


@pytest.fixture(autouse=True)
def _now():
    global NOW
    NOW = time.time()


def day(back: int = 0) -> str:
    return (datetime.date.fromtimestamp(NOW) - datetime.timedelta(days=back)).isoformat()


def priced(ws: Workspace, session: str, cost: dict | None, host: str = "claude-code") -> None:
    """The session's record given a cost object, as the daemon records it at a turn's end."""
    path = ws.session_dir(harness_id(host, session)) / "session.json"
    record = orjson.loads(path.read_bytes())
    record["metadata"]["sidecar"]["tokens"] = {"input": 1200, "output": 300, "cacheRead": 50_000,
                                               "cacheWrite": 900}
    if cost is not None:
        record["metadata"]["sidecar"]["cost"] = cost
    path.write_bytes(orjson.dumps(record))


def table(*args: str) -> tuple[list[str], list[str]]:
    """The table's lines (header first) and the foot's, split at the blank line."""
    result = invoke("sessions", *args)
    assert result.returncode == exitcodes.OK, result.stderr
    text = result.stdout.decode()
    rows, _, foot = text.partition("\n\n")
    return rows.splitlines(), foot.splitlines()


@pytest.fixture
def costs(workspace, tmp_path):
    """`ws`: a session priced by the host ($0.42 today), one priced by the table ($1.25: $1
    yesterday, $0.25 today), one whose model has no price; `api`: one at $3.10 today and one
    never priced."""
    api_root = tmp_path / "api"
    api_root.mkdir()
    assert CliRunner().invoke(app, ["init", str(api_root)]).exit_code == 0
    api = Workspace(api_root)
    for ws, session, at in ((workspace, "host-priced", 300), (workspace, "table-priced", 200),
                            (workspace, "no-price", 100), (api, "api-priced", 60),
                            (api, "never", 30)):
        ingest(ws, session, "session-start", "turn-start", "turn-end", at=NOW - at)
    priced(workspace, "host-priced", {"usd": 0.42, "source": "host", "models": ["gpt-5"],
                                      "unpriced": [], "days": {day(): 0.42}})
    priced(workspace, "table-priced", {"usd": 1.25, "source": "table",
                                       "models": ["claude-sonnet-4-5"], "unpriced": [],
                                       "days": {day(1): 1.0, day(): 0.25}})
    priced(workspace, "no-price", {"usd": None, "source": "unknown", "models": ["my-local-model"],
                                   "unpriced": ["my-local-model"], "days": {},
                                   "why": "no price for model my-local-model"})
    priced(api, "api-priced", {"usd": 3.1, "source": "table", "models": ["claude-opus-4-1"],
                               "unpriced": [], "days": {day(): 3.1}})
    priced(api, "never", None)
    return workspace, api


def cost_cells(lines: list[str]) -> dict[str, str]:
    """Each row's COST cell, by the start of its session id."""
    header = lines[0]
    start = header.index("COST")
    end = header.index("FOLLOW-UP") if "FOLLOW-UP" in header else None
    at = header.index("SESSION")
    return {line[at:].split()[0]: line[start:end].strip() for line in lines[1:]}


def test_the_cost_column_shows_each_sessions_cost_and_says_where_it_is_unknown(costs):
    lines, foot = table()
    assert "COST" in lines[0].split() and not foot  # no --since: no spend at the foot
    assert cost_cells(lines) == {"host-pri": "$0.42", "table-pr": "$1.25", "no-price": "?",
                                 "api-pric": "$3.10", "never": "—"}


def test_json_carries_each_sessions_cost_object(costs):
    doc = orjson.loads(invoke("sessions", "--json").stdout)
    by_id = {s["sessionId"]: s["cost"] for s in doc["sessions"]}
    assert by_id["table-priced"]["source"] == "table" and by_id["table-priced"]["usd"] == 1.25
    assert by_id["no-price"]["why"] == "no price for model my-local-model"
    assert by_id["never"] is None and doc["spend"] is None


def test_since_1d_sums_todays_spend_per_workspace_and_counts_unknown_costs_as_unpriced(costs):
    ws, api = costs
    _, foot = table("--since", "1d")
    # Today: $0.42 + $0.25 in ws (yesterday's $1 is not today's), $3.10 in api; the session
    # whose model has no price and the one never priced are counted apart, never as $0.
    assert foot == [f"spent {day()} (today)",
                    "  ws     $0.67 + 1 unpriced",
                    "  api    $3.10 + 1 unpriced",
                    "  total  $3.77 + 2 unpriced"]
    doc = orjson.loads(invoke("sessions", "--since", "1d", "--json").stdout)
    assert doc["spend"]["days"] == [day()]
    assert (doc["spend"]["usd"], doc["spend"]["unpriced"]) == (3.77, 2)
    assert [(w["workspace"], w["usd"], w["unpriced"]) for w in doc["spend"]["workspaces"]] == [
        (str(ws.root), 0.67, 1), (str(api.root), 3.1, 1)]


def test_since_2d_counts_yesterday_too_and_an_empty_stretch_is_zero(costs, tmp_path):
    _, foot = table("--since", "2d")
    assert foot[0] == f"spent {day(1)} to {day()}"
    assert foot[-1] == "  total  $4.77 + 2 unpriced"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert CliRunner().invoke(app, ["init", str(empty)]).exit_code == 0
    _, foot = table("--since", "1d", "--root", str(empty))
    assert foot == [f"spent {day()} (today)", "  total  $0.00"]


def test_a_session_priced_in_part_shows_it_and_is_counted_as_unpriced(workspace):
    ingest(workspace, "mixed", "session-start", "turn-start", "turn-end", at=NOW - 60)
    priced(workspace, "mixed", {"usd": 0.004, "source": "table", "models": ["gpt-5", "local"],
                                "unpriced": ["local"], "days": {day(): 0.004}})
    lines, foot = table("--since", "30m")
    assert cost_cells(lines) == {"mixed": "<$0.01+?"}
    assert foot[-1] == "  total  <$0.01 + 1 unpriced"
