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
