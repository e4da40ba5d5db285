"""Gemini CLI: what its transcript says a session spent, by model and local day.

`gemini-cli-0.61.0.jsonl` is a session of two turns the real Gemini CLI 0.61.0 wrote offline
against the loopback stub: each model message names its `model` and `timestamp`, and a resume
rewrites the message list in a `$set` line, the first answer in it again.
"""

from __future__ import annotations

import json

from helpers import TRANSCRIPTS
from sidecar.hosts import registry
from sidecar.hosts.base import Spend, Tokens
from support.zones import local_zone

HOST = registry.get("gemini")
RECORDED = TRANSCRIPTS / "gemini-cli-0.61.0.jsonl"
FIRST, SECOND = "4107e6bd-efbd-4017-ab9d-b2509175a1ad", "7a848680-d62d-437e-938e-e399a4b05f5c"


def test_spend_is_the_recorded_answers_by_the_model_they_name_and_their_day():
    with local_zone("UTC"):
        facts = HOST.end_facts(str(RECORDED), "")
    # 1000 + 2000 prompt tokens, 400 + 800 of them cached, 30 + 60 output and 5 + 10 thinking;
    # Gemini CLI writes no price of its own: the table prices it.
    assert facts.spend == (Spend("gemini-2.5-flash", "2026-12-01", Tokens(1800, 105, 1200), None),)


def test_spend_is_summed_by_model_and_local_day_each_message_once(tmp_path):
    """The first answer by another model; the second past midnight on the user's calendar.
    Each message counts once, as last written (the `$set` rewrite holds the first again)."""
    changes = {FIRST: {"model": "gemini-2.5-pro", "timestamp": "2026-12-01T22:30:00.000Z"},
               SECOND: {"timestamp": "2026-12-01T23:30:00.000Z"}}
    lines = [json.loads(line) for line in RECORDED.read_text().splitlines()]
    for line in lines:
        rewritten = line.get("$set", {}).get("messages") if isinstance(line.get("$set"), dict) else None
        for message in rewritten or [line]:
            message.update(changes.get(message.get("id"), {}))
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with local_zone("CET-1"):
        facts = HOST.end_facts(str(path), "")
    assert facts.spend == (Spend("gemini-2.5-pro", "2026-12-01", Tokens(600, 35, 400), None),
                           Spend("gemini-2.5-flash", "2026-12-02", Tokens(1200, 70, 800), None))
    assert facts.tokens == Tokens(1800, 105, 1200)  # the totals, as before
