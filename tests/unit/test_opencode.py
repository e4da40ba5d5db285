"""opencode: what its database says a session spent, by model and day, at its own price.

`opencode-1.18.33.priced.db` holds the `session` and `message` tables the real opencode 1.18.33
wrote for a session of two turns, offline against the loopback chat stub (10 input and 3
output tokens a turn), with two models of the stub provider priced in opencode.json: the
first turn by `stub-model` ($3 / $15 a million tokens), the resumed one by `stub-large`
($15 / $75), so opencode priced them $0.000075 and $0.000375.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import datetime

import pytest

from helpers import TRANSCRIPTS
from sidecar.hosts import registry
from sidecar.hosts.base import Spend, Tokens
from support.zones import local_zone

SESSION = "ses_dc2ae5ab4ffet3DeO6LXg1eySb"
HOST = registry.get("opencode")


@pytest.fixture
def database(monkeypatch, tmp_path):
    """The recorded database, where opencode keeps it for this user."""
    data = tmp_path / "share"
    (data / "opencode").mkdir(parents=True)
    path = data / "opencode" / "opencode.db"
    path.write_bytes((TRANSCRIPTS / "opencode-1.18.33.priced.db").read_bytes())
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    return path


def test_spend_is_each_models_messages_at_opencodes_own_price(database):
    with local_zone("UTC"):
        facts = HOST.end_facts(None, SESSION)
    assert facts.spend == (Spend("stub-model", "2026-12-03", Tokens(10, 3), 0.000075),
                           Spend("stub-large", "2026-12-03", Tokens(10, 3), 0.000375))
    assert facts.tokens == Tokens(20, 6)  # the session's own totals, as before


def test_messages_of_one_model_and_local_day_are_summed(database):
    """The same model on the same day of the user's calendar is one figure: its tokens and
    opencode's prices summed; the evening before midnight, local time, is another day."""
    answers = ("msg_23d51a992001UbRQR9mNTr3uOV", "msg_23d51b5d6001CesSJRzXA7aL99")
    with closing(sqlite3.connect(database)) as con, con:
        answered(con, answers[0], "2026-12-02T22:30:00Z")  # 23:30 in CET
        answered(con, answers[1], "2026-12-02T23:30:00Z")  # 00:30 on the 3rd in CET
        con.execute("INSERT INTO message SELECT 'msg_third', session_id, time_created + 3600000, "
                    "time_updated, json_set(data, '$.cost', 0.0001) FROM message WHERE id = ?",
                    (answers[1],))
    with local_zone("CET-1"):
        facts = HOST.end_facts(None, SESSION)
    assert facts.spend == (Spend("stub-model", "2026-12-02", Tokens(10, 3), 0.000075),
                           Spend("stub-model", "2026-12-03", Tokens(20, 6), 0.000375 + 0.0001))
    assert facts.tokens == Tokens(20, 6)  # still the session row's totals


def answered(con: sqlite3.Connection, message: str, at: str) -> None:
    """The assistant message answered by `stub-model` at `at`."""
    ms = int(datetime.fromisoformat(at).timestamp() * 1000)
    con.execute("UPDATE message SET time_created = ?, data = json_set(data, '$.modelID', "
                "'stub-model', '$.time.created', ?) WHERE id = ?", (ms, ms, message))


def test_a_database_without_messages_gives_the_totals_alone(database):
    with closing(sqlite3.connect(database)) as con, con:
        con.execute("DROP TABLE message")
    facts = HOST.end_facts(None, SESSION)
    assert facts.tokens == Tokens(20, 6) and facts.spend == ()
