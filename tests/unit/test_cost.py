"""What a session cost, from recorded transcripts of Claude Code and Codex: each model's
tokens priced by the genai-prices table as it stood on the local day of the turn, the host's
own figure where it gives one, and what cannot be priced named with why."""

from __future__ import annotations

import sys
import time

import pytest

from sidecar.cost.session import cost_of
from sidecar.hosts import registry
from sidecar.hosts.base import EndFacts, Spend, Tokens
from support.transcripts import claude_turn, codex_turn, write_claude, write_codex


@pytest.fixture(autouse=True)
def new_york(monkeypatch):
    """Local time five hours behind UTC (no summer time): a turn's day is the local one."""
    monkeypatch.setenv("TZ", "NYC5")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def priced(host: str, path: str) -> dict:
    facts = registry.get(host).end_facts(path, "")
    return cost_of(facts.spend, "2026-01-01")


USAGE = {"input": 1000, "output": 2000, "cacheRead": 100_000, "cacheWrite": 10_000}


def test_a_claude_code_session_is_priced_by_model_and_local_day(tmp_path):
    path = write_claude(
        tmp_path / "c.jsonl",
        claude_turn("msg_1", "claude-sonnet-4-5", "2026-11-30T23:00:00.000Z", USAGE),
        # 22:00 local: the same day as the first, whatever its UTC date says
        claude_turn("msg_2", "claude-sonnet-4-5", "2026-12-01T03:00:00.000Z", USAGE),
        claude_turn("msg_3", "claude-haiku-4-5", "2026-12-01T15:00:00.000Z", USAGE))
    # sonnet 4.5: $3 input, $15 output, $0.30 cache read, $3.75 cache write per million;
    # haiku 4.5: $1, $5, $0.10, $1.25. Each message counted once (it is written per block).
    sonnet = 0.001 * 3 + 0.002 * 15 + 0.1 * 0.3 + 0.01 * 3.75  # 0.1005 a turn
    haiku = 0.001 * 1 + 0.002 * 5 + 0.1 * 0.1 + 0.01 * 1.25  # 0.0335
    assert priced("claude-code", path) == {
        "usd": pytest.approx(2 * sonnet + haiku), "source": "table",
        "models": ["claude-sonnet-4-5", "claude-haiku-4-5"], "unpriced": [],
        "days": {"2026-11-30": pytest.approx(2 * sonnet), "2026-12-01": pytest.approx(haiku)}}


def test_a_day_of_many_requests_is_priced_at_each_request_s_rate(tmp_path):
    """3M cache reads in a day of 100K requests: none is a long-context request (over 200K
    input tokens, billed at twice the rate), so the day is not either."""
    turns = [claude_turn(f"msg_{i}", "claude-sonnet-4-5", "2026-12-01T15:00:00.000Z",
                         {"input": 100, "output": 100, "cacheRead": 100_000}) for i in range(30)]
    cost = priced("claude-code", write_claude(tmp_path / "c.jsonl", *turns))
    assert cost["usd"] == pytest.approx(30 * (0.0001 * 3 + 0.0001 * 15 + 0.1 * 0.3))  # 0.954


def test_a_codex_session_is_priced_at_the_price_of_each_turn_s_day(tmp_path):
    """gpt-5.6-sol's price fell on 2026-08-21 ($5 → $4 input, $0.50 → $0.40 cached, $30 →
    $20 output per million): the same tokens cost less on the day after."""
    path = write_codex(
        tmp_path / "rollout.jsonl",
        codex_turn("gpt-5.6-sol", "2026-08-20T17:00:00.000Z",
                   {"input": 1_000_000, "cached": 200_000, "output": 100_000}, repeat=True),
        # 01:00 UTC on the 22nd is still the 21st in New York: the new price already
        codex_turn("gpt-5.6-sol", "2026-08-22T01:00:00.000Z",
                   {"input": 2_000_000, "cached": 400_000, "output": 200_000}))
    before = 0.8 * 5 + 0.2 * 0.5 + 0.1 * 30  # 7.1
    after = 0.8 * 4 + 0.2 * 0.4 + 0.1 * 20  # 5.28
    cost = priced("codex", path)
    assert cost["days"] == {"2026-08-20": pytest.approx(before), "2026-08-21": pytest.approx(after)}
    assert cost["usd"] == pytest.approx(before + after)  # the repeated count is not charged twice
    assert cost["source"] == "table" and cost["models"] == ["gpt-5.6-sol"]


def test_a_model_the_table_does_not_know_is_named_and_left_out(tmp_path):
    path = write_claude(
        tmp_path / "c.jsonl",
        claude_turn("msg_1", "my-local-model", "2026-12-01T15:00:00.000Z", USAGE),
        claude_turn("msg_2", "claude-haiku-4-5", "2026-12-01T16:00:00.000Z", USAGE))
    cost = priced("claude-code", path)
    assert cost["usd"] == pytest.approx(0.0335) and cost["source"] == "table"
    assert cost["unpriced"] == ["my-local-model"]
    assert cost["why"] == "no price for model my-local-model"
    alone = priced("claude-code", write_claude(
        tmp_path / "d.jsonl", claude_turn("msg_1", "my-local-model", "2026-12-01T15:00:00.000Z", USAGE)))
    assert alone == {"usd": None, "source": "unknown", "models": ["my-local-model"],
                     "unpriced": ["my-local-model"], "days": {},
                     "why": "no price for model my-local-model"}


def test_without_genai_prices_nothing_is_priced_by_table_and_it_says_why(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # `import genai_prices` fails
    path = write_claude(tmp_path / "c.jsonl",
                        claude_turn("msg_1", "claude-haiku-4-5", "2026-12-01T15:00:00.000Z", USAGE))
    assert priced("claude-code", path) == {
        "usd": None, "source": "unknown", "models": ["claude-haiku-4-5"],
        "unpriced": ["claude-haiku-4-5"], "days": {}, "why": "agent-sidecar[cost] is not installed"}
    # A host's own figure needs no table.
    own = cost_of([Spend("qwen3-coder", "2026-12-01", Tokens(input=10), cost=0.25)], None)
    assert own["usd"] == 0.25 and own["source"] == "host" and "why" not in own


def test_the_host_s_own_figure_wins_and_an_undated_one_counts_on_the_session_s_first_day():
    spend = [Spend("claude-haiku-4-5", None, Tokens(input=1_000_000), cost=0.5),
             Spend("claude-haiku-4-5", "2026-12-02", Tokens(input=1_000_000))]
    cost = cost_of(spend, "2026-12-01")
    assert cost["days"] == {"2026-12-01": 0.5, "2026-12-02": 1.0}
    assert cost["usd"] == 1.5 and cost["source"] == "table"
    assert cost_of([Spend(None, "2026-12-01", Tokens(input=5))], None)["why"] == "the host names no model"


def test_the_facts_a_recorded_end_carries_keep_the_spend(tmp_path):
    path = write_claude(tmp_path / "c.jsonl",
                        claude_turn("msg_1", "claude-haiku-4-5", "2026-12-01T15:00:00.000Z", USAGE))
    facts = registry.get("claude-code").end_facts(path, "")
    assert facts.spend == (Spend("claude-haiku-4-5", "2026-12-01",
                                 Tokens(1000, 2000, 100_000, 10_000)),)
    assert EndFacts.from_json(facts.to_json()) == facts
