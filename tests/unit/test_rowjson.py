"""A session's row as JSON reads back as the same row (what the fleet publishes and the web view
is sent), and a published row that is not one is refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.views import rowjson
from sidecar.views.activity import Activity, State
from sidecar.views.sessions import FollowUp, SessionRow


def _row(**changed: object) -> SessionRow:
    base = dict(
        root=Path("/home/u/app"), host="claude-code", session_id="sess-1", harness_id="h1",
        started_at=1_700_000_000.0, updated_at=1_700_000_100.0, ended_at=1_700_000_200.0,
        reason="prompt_input_exit", activity=Activity(State.ENDED, 1_700_000_200.0, "its own end", ""),
        tokens={"input": 10, "output": 4}, cwd="/home/u/app/src", mid_turn=True,
        follow_ups=(FollowUp("post-task", "queued", 1_700_000_300.0, None),
                    FollowUp("post-task", "error: exit 1", 1_700_000_250.0, "logs/x.log")),
        cost={"usd": 0.42, "source": "table"})
    base.update(changed)
    return SessionRow(**base)  # type: ignore[arg-type]


def test_a_row_reads_back_whole_and_names_its_machine():
    row = _row()
    back = rowjson.from_json(rowjson.to_json(row, None), machine="laptop")
    assert back == SessionRow(**{**row.__dict__, "machine": "laptop"})
    assert back.key == ("laptop", Path("/home/u/app"), "h1")


@pytest.mark.parametrize("broken", [{"state": "exploded"}, {"workspace": 3}, {"harnessSessionId": ""}])
def test_a_published_row_that_is_not_one_is_refused(broken):
    data = {**rowjson.to_json(_row(), None), **broken}
    with pytest.raises(ValueError):
        rowjson.from_json(data, "laptop")


def test_fields_of_the_wrong_type_are_left_out_not_trusted():
    data = {**rowjson.to_json(_row(), None), "tokens": {"input": "many", "output": 4},
            "followUps": [{"hookId": 5}, "x", {"hookId": "ok-hook", "state": "ok", "at": None}],
            "cost": "free", "host": ["x"]}
    back = rowjson.from_json(data, "m")
    assert back.tokens == {"output": 4}
    assert back.follow_ups == (FollowUp("ok-hook", "ok", None, None),)
    assert back.cost is None and back.host == "unknown"
