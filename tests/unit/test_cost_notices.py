"""A finished turn's or session's notice says what the session cost so far ("claude-code
finished its turn · $0.42"), from the change's `spent` (the record's cost object as the daemon
read it at that end); where the cost is unknown it names no amount, never $0. The notice is
queued by the real notices module and put in words by the real sender."""

from __future__ import annotations

from sidecar.followups.model import Hook, HooksDoc
from sidecar.followups.notify import notices, send
from sidecar.followups.notify.targets import Notify
from sidecar.vocabulary import EventKind, SessionChange

T0 = 1_795_900_000.0
PRICED = {"usd": 0.4213, "source": "table", "models": ["claude-sonnet-4-5"], "unpriced": [],
          "days": {"2026-12-03": 0.4213}}


def notice_for(kind: EventKind, spent: dict | None, **more: object) -> dict:
    """The job the sender is given for the notice a notify hook of `kind` queued."""
    hook = Hook(id="n", name="n", event=kind, delay_seconds=0, prompt_file=None,
                action=Notify("desktop"))
    doc = HooksDoc(hooks={"n": hook})
    change = SessionChange(kind=kind, host="claude-code", session_id="0123456789abcdef",
                           harness_session_id="h", ts=T0, reason=str(more.pop("reason", "")),
                           event_file="f.json", spent=spent, **more)  # type: ignore[arg-type]
    notices.add_for_change(doc, hook, change, T0, set())
    [entry] = doc.pending
    return {"host": "claude-code", "sessionId": "0123456789abcdef", "workspace": "/w/proj",
            "notice": notices.notice_of(entry)}


def test_a_finished_turn_says_what_the_session_cost_so_far():
    spent = {"tokens": {"input": 10}, "cost": {"usd": 0.12, "source": "table",
                                                "model": "claude-sonnet-4-5"}, "total": PRICED}
    job = notice_for(EventKind.TURN_END, spent)
    text = send.words(job, T0)
    assert text.title == "claude-code finished its turn · $0.42"
    body = send.webhook_body(job, text)
    assert body["cost"] == {"usd": 0.4213, "source": "table", "unpriced": False}


def test_a_finished_session_says_its_cost_and_a_part_without_a_price_is_marked():
    partly = {**PRICED, "unpriced": ["my-local-model"]}
    text = send.words(notice_for(EventKind.SESSION_END, {"total": partly}, reason="prompt_input_exit"),
                      T0)
    assert text.title.startswith("claude-code finished: ") and text.title.endswith(" · $0.42+?")


def test_an_unknown_cost_names_no_amount():
    unknown = {"usd": None, "source": "unknown", "models": ["x"], "unpriced": ["x"], "days": {},
               "why": "no price for model x"}
    for spent in (None, {"total": unknown}, {"tokens": {}}):
        text = send.words(notice_for(EventKind.TURN_END, spent), T0)
        assert text.title == "claude-code finished its turn"
        assert "$" not in text.body


def test_a_usage_limit_notice_names_no_cost():
    text = send.words(notice_for(EventKind.TURN_FAILED, {"total": PRICED}, reason="rate_limit"), T0)
    assert text.title == "claude-code hit a usage limit"
