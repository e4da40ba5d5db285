"""base/hooksjson.py's cheap proof of validity never says more than the model: whatever
`plain_doc` accepts, followups/model.py reads, and reads as its raw form says."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sidecar.base import hooksjson
from sidecar.followups import model
from sidecar.followups.notify.targets import ONLY_NOTIFY, event_misfit

values = st.none() | st.booleans() | st.integers(-2, 90000) | st.text(max_size=4) \
    | st.sampled_from(["resume", "session-end", "turn-failed", "follow-up-failed", "hooks/a.md",
                       "hooks/../a.md", "post-task"]) \
    | st.lists(st.sampled_from(["", "make", "exit"]), max_size=2)
hook = st.dictionaries(st.sampled_from(["name", "event", "action", "delaySeconds",
                                        "delayMinutes", "promptFile", "enabled", "skipCron",
                                        "maxContextK", "reasons", "history"]), values, max_size=6)
entry = st.dictionaries(st.sampled_from(["hookId", "host", "sessionId", "id", "claimedBy",
                                         "run", "retries"]), values, max_size=6)


@settings(max_examples=400, deadline=None)
@example({"post-task": {"name": "0", "event": []}}, [], 1)  # an event no set can hold
@given(st.dictionaries(st.sampled_from(["post-task", "x", "A B"]), hook, max_size=2),
       st.lists(entry, max_size=2), st.sampled_from([0, 1, 2, "1"]))
def test_what_it_calls_plainly_valid_the_model_reads(hooks, pending, version):
    doc = {"version": version, "hooks": {k: {**h, "id": k} for k, h in hooks.items()},
           "pending": pending}
    plain = hooksjson.plain_doc(doc)
    if plain is not None:
        read = model.HooksDoc.from_json(doc)
        for key, raw in plain[0].items():
            assert read.hooks[key].delay_seconds == raw.get("delaySeconds", model.DEFAULT_DELAY)
            assert read.hooks[key].event.value == raw.get("event", "session-end")


def test_its_events_are_the_models_for_a_hook_that_is_no_notify_hook():
    for event in hooksjson.PLAIN_EVENTS:
        assert event in model.HOOK_EVENTS and event_misfit(event, notify=False) is None
    assert set(model.HOOK_EVENTS) - hooksjson.PLAIN_EVENTS <= set(ONLY_NOTIFY)
