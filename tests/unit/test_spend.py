"""A session's spend as the rules record it at each turn end, turn failure and end: the
change each brings (`SessionChange.spent`) tells the turn's growth once and the session's
total, and a read at a turn end leaves how the turn ended to its events."""

from __future__ import annotations

import pytest

from helpers import TRANSCRIPTS
from sidecar.hosts.base import local_day
from sidecar.layout import Workspace
from sidecar.vocabulary import EventKind
from support.limits import T0, Harness, ev, failed
from support.transcripts import claude_turn

HAIKU = {"input": 1000, "output": 2000, "cacheRead": 100_000, "cacheWrite": 10_000}
TURN = 0.001 * 1 + 0.002 * 5 + 0.1 * 0.1 + 0.01 * 1.25  # claude-haiku-4-5: 0.0335
AT = "2026-11-30T12:00:00.000Z"


@pytest.fixture
def h(tmp_path) -> Harness:
    return Harness(Workspace(tmp_path / "ws"))


def spent(result, kind: EventKind) -> list[dict | None]:
    return [c.spent for c in result.changes if c.kind == kind]


def test_each_turn_end_tells_its_growth_and_the_session_s_total(h, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(claude_turn("msg_1", "claude-haiku-4-5", AT, HAIKU))
    seen = {"transcript_path": str(path)}
    first = h.apply(ev("SessionStart", T0, **seen), ev("UserPromptSubmit", T0 + 1), ev("Stop", T0 + 2, **seen))
    [told] = spent(first, EventKind.TURN_END)
    day = local_day(1796040000.0)  # AT
    total = {"usd": pytest.approx(TURN), "source": "table", "models": ["claude-haiku-4-5"],
             "unpriced": [], "days": {day: pytest.approx(TURN)}}
    assert told == {"tokens": HAIKU, "total": total,
                    "cost": {"usd": pytest.approx(TURN), "source": "table", "model": "claude-haiku-4-5"}}
    assert h.record()["metadata"]["sidecar"]["cost"] == total

    # The second turn is refused on a limit: its change tells what it spent all the same, and
    # the failure is handled as before (one episode, opened by the event).
    with open(path, "ab") as out:
        out.write(claude_turn("msg_2", "claude-haiku-4-5", AT, HAIKU))
    second = h.apply(ev("UserPromptSubmit", T0 + 3), failed(T0 + 4, **seen))
    [told] = spent(second, EventKind.TURN_FAILED)
    assert told["cost"]["usd"] == pytest.approx(TURN) and told["total"]["usd"] == pytest.approx(2 * TURN)
    assert h.record()["metadata"]["sidecar"]["limit"]["failures"] == 1

    # The end finds nothing new: its change tells the total, and no growth.
    third = h.apply(ev("SessionEnd", T0 + 5, **seen))
    [told] = spent(third, EventKind.SESSION_END)
    assert told["cost"]["usd"] == 0 and told["tokens"] == dict.fromkeys(HAIKU, 0)
    assert told["total"]["usd"] == pytest.approx(2 * TURN)


def test_a_turn_end_read_leaves_the_turn_s_failure_to_its_events(h):
    """The transcript's last entry is the API's refusal, but the host said the turn ended
    (its Stop): the figures are read, and no failure is made of it."""
    seen = {"transcript_path": str(TRANSCRIPTS / "claude-code-2.1.328.rate-limit.jsonl")}
    result = h.apply(ev("SessionStart", T0), ev("UserPromptSubmit", T0 + 1), ev("Stop", T0 + 2, **seen))
    assert spent(result, EventKind.TURN_FAILED) == []
    meta = h.record()["metadata"]["sidecar"]
    assert "limit" not in meta and "turnFailed" not in meta
    assert meta["tokens"] == {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    assert "cost" not in meta  # nothing spent: nothing said of a price


def test_a_running_total_that_moves_to_a_later_day_is_counted_once_in_the_days(monkeypatch):
    """Cline dates its one running total by the session's start while it runs and by its end
    after: across midnight (or a resume days later) the ledger's days still sum to the cost."""
    from types import SimpleNamespace

    from sidecar.hosts.cline.host import figures
    from sidecar.sessions import spend
    from sidecar.sessions.model import SidecarMeta
    from support.zones import local_zone

    with local_zone("UTC0"):
        record = SimpleNamespace(sidecar=SidecarMeta.from_json({}), created_at="2026-12-01T23:50:00Z")
        usage = {"inputTokens": 1000, "outputTokens": 100, "totalCost": 1.00}
        run = {"model": "claude-sonnet-4-5", "started_at": "2026-12-01T23:50:00.000Z",
               "metadata": {"usage": usage}}
        ledger: dict[str, float] = {}

        def read(manifest) -> None:
            for day, usd, _ in spend.take(record, figures(manifest)).growth.days:
                ledger[day] = round(ledger.get(day, 0) + usd, 6)

        read(run)
        usage["totalCost"] = 1.50  # after midnight, still running: still its start's day
        read(run)
        usage["totalCost"] = 1.60  # its end, dated 00:20
        read({**run, "ended_at": "2026-12-02T00:20:00.000Z"})
        assert round(sum(ledger.values()), 6) == record.sidecar.cost["usd"] == 1.6
        usage["totalCost"] = 1.70  # resumed a week later
        read({**run, "ended_at": "2026-12-09T10:00:00.000Z"})
    assert ledger == {"2026-12-01": 1.5, "2026-12-02": 0.1, "2026-12-09": 0.1}


def test_a_hand_edited_cost_without_days_never_stops_the_session(h):
    import orjson

    seen = {"transcript_path": str(TRANSCRIPTS / "claude-code-2.1.328.rate-limit.jsonl")}  # no tokens
    h.apply(ev("SessionStart", T0), ev("UserPromptSubmit", T0 + 1))
    path = next(h.ws.sessions.glob("*/session.json"))
    data = orjson.loads(path.read_bytes())
    data["metadata"]["sidecar"]["cost"] = {"usd": 1.0, "source": "host"}
    path.write_bytes(orjson.dumps(data))
    h.apply(ev("Stop", T0 + 2, **seen), ev("SessionEnd", T0 + 3, **seen))
    assert h.record()["status"] == "completed"
