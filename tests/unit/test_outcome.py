"""Outcomes: the text hooks.json, notices and plugins keep is the text they always kept, and
reading it back tells its kind as the readers always did (by the word it starts with)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sidecar.base import outcome
from sidecar.base.outcome import CANCELLED, INTERRUPTED, OK, Kind, Outcome
from sidecar.followups import trust
from sidecar.followups.queue import FOREIGN_RUN, TURN_INTERRUPTED


def test_the_stored_texts_are_unchanged():
    assert str(OK) == "ok"
    assert str(CANCELLED) == "cancelled by the user"
    assert str(INTERRUPTED) == "error: interrupted"
    assert str(trust.NOT_TRUSTED) == "skipped: not trusted on this machine"
    assert str(TURN_INTERRUPTED) == "skipped: the last turn was interrupted"
    assert str(FOREIGN_RUN) == ("error: its run record was not written by this user's sidecar; "
                                "nothing was adopted or signalled")
    assert str(outcome.error("exit status 1")) == "error: exit status 1"
    assert str(outcome.error("")) == "error: "  # an exception that says nothing, as before
    assert str(outcome.skipped(ValueError("a: b"))) == "skipped: a: b"
    assert str(outcome.postponed("session active (1/10)")) == "postponed: session active (1/10)"


@pytest.mark.parametrize(("text", "kind"), [
    ("ok", Kind.OK), ("error: exit status 2", Kind.ERROR), ("error", Kind.ERROR),
    ("skipped: not trusted on this machine", Kind.SKIPPED), ("postponed: x (2/10)", Kind.POSTPONED),
    ("cancelled by the user", Kind.CANCELLED), ("okay", Kind.OTHER), ("", Kind.OTHER),
    (None, Kind.OTHER), ("started", Kind.OTHER),
])
def test_parse_tells_the_kind(text, kind):
    assert Outcome.parse(text).kind is kind


@given(st.one_of(st.none(), st.text(), st.sampled_from(["ok", "error", "skipped", "postponed"])
                 .flatmap(lambda word: st.text().map(lambda rest: word + rest))))
def test_parse_classifies_as_the_prefix_readers_did(text):
    said = text or ""
    ended = Outcome.parse(text)
    assert ended.failed == said.startswith("error")
    assert ended.skipped == said.startswith("skipped")
    assert ended.ok == (said == "ok")


@given(st.sampled_from([outcome.error, outcome.skipped, outcome.postponed]), st.text())
def test_every_written_outcome_reads_back_the_same(make, detail):
    written = make(detail)
    assert Outcome.parse(str(written)) == written
    assert str(Outcome.parse(str(written))) == str(written)


def test_other_text_is_kept_as_it_is():
    assert str(Outcome.parse("a hand edit")) == "a hand edit"
