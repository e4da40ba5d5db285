"""The status line's cheap copies (sidecar/quickread.py) hold to their originals: a record's
id, a record's state, JSON, a span of time in words; and its reads follow no symlink."""

from __future__ import annotations

import json
import os

import pytest

from sidecar import quickread
from sidecar.base import words
from sidecar.base.ids import harness_id
from sidecar.sessions import activity
from sidecar.sessions.model import SessionRecord

T0 = 1_796_115_000.0


@pytest.mark.parametrize(("host", "session"), [
    ("claude-code", "31968bc9-5f28-4c28-ad6e-44fc394c0956"), ("opencode", "ses_dd4eb75bdffe"),
    ("cline", "conv_1:2"), ("x", ""), ("ünïcode", "é-1")])
def test_the_record_id_is_rules_harness_id(host, session):
    assert quickread.harness_id(host, session) == harness_id(host, session)


@pytest.mark.parametrize("text", [
    '{"a": [1, 2.5, -3e2, true, false, null, "é\\u00e9\\n"]}', " [ ] ", '"x"', "0",
    '{"nested": {"deep": [{"k": "v"}]}}'])
def test_json_reads_as_the_json_module_reads_it(text):
    assert quickread.loads(text) == json.loads(text)


@pytest.mark.parametrize("text", ["", "[1, 2", '{"a": }', '{"a": 1} x', "NaN", "[Infinity]", "{'a': 1}"])
def test_what_is_not_json_is_refused(text):
    with pytest.raises(ValueError):
        quickread.loads(text)


@pytest.mark.parametrize("seconds", [0, 0.4, 59.9, 60, 125, 3599, 3600, 3660, 36000 + 600,
                                     86399, 86400, 3 * 86400, -42])
def test_a_span_reads_as_present_says_it(seconds):
    assert quickread.span(seconds) == words.span(seconds)


def iso(ts: float) -> str:
    from sidecar.base.timeutil import iso as full

    return full(ts)


RECORDS = {
    "ended": {"status": "completed", "completedAt": iso(T0),
              "metadata": {"sidecar": {"completionReason": "exit"}}},
    "limited": {"status": "active", "metadata": {"sidecar": {
        "limit": {"since": iso(T0), "failures": 1, "error": "rate_limit", "message": "m"},
        "needsInput": {"since": iso(T0 + 1), "kind": "idle_prompt", "message": ""}}}},
    "waiting": {"status": "active", "metadata": {"sidecar": {
        "turnOpen": True, "needsInput": {"since": iso(T0), "kind": "permission_prompt",
                                         "message": "Claude needs your permission"}}}},
    "working": {"status": "active", "updatedAt": iso(T0 + 5), "metadata": {"sidecar": {
        "turnOpen": True, "turnStartedAt": iso(T0), "lastTool": "Bash"}}},
    "idle": {"status": "active", "updatedAt": iso(T0 + 5),
             "metadata": {"sidecar": {"userTurnEndedAt": iso(T0)}}},
    "new": {"status": "active", "updatedAt": iso(T0), "metadata": {"sidecar": {}}},
}


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_a_records_state_is_the_one_activity_infers(name):
    raw = {"id": "x", "name": "n", **RECORDS[name]}
    inferred = activity.of(SessionRecord.from_json(raw))
    state, since, _detail = quickread.state(raw)
    assert (state, since) == (inferred.state.value, inferred.since)


def test_the_line_says_each_state_in_words():
    now = T0 + 125
    said = {name: quickread.describe({"id": "x", **RECORDS[name]}, now) for name in RECORDS}
    assert said == {"ended": "ended 2 min ago", "limited": "usage limit 2 min",
                    "waiting": "waiting for you 2 min", "working": "working 2 min (Bash)",
                    "idle": "idle 2 min", "new": "idle 2 min"}


def test_the_next_follow_up_is_the_sessions_soonest():
    hooks = {"pending": [
        {"hookId": "later", "host": "h", "sessionId": "s", "dueAt": iso(T0 + 60)},
        {"hookId": "post-task", "host": "h", "sessionId": "s", "dueAt": iso(T0 + 8)},
        {"hookId": "other", "host": "h", "sessionId": "t", "dueAt": iso(T0)},
        {"hookId": "same-id-other-host", "host": "g", "sessionId": "s", "dueAt": iso(T0)},
        "not an entry"]}
    assert quickread.next_follow_up(hooks, "h", "s", T0) == "post-task in 8 s"
    assert quickread.next_follow_up(hooks, "h", "s", T0 + 9) == "post-task due now"
    hooks["pending"].append({"hookId": "busy", "host": "h", "sessionId": "s", "claimedBy": "i"})
    assert quickread.next_follow_up(hooks, "h", "s", T0) == "busy running"
    assert quickread.next_follow_up({"pending": "?"}, "h", "s", T0) == ""


def test_no_symlink_is_followed_from_the_context_folder_down(tmp_path):
    root = tmp_path / "ws"
    real = tmp_path / "elsewhere"
    (real / "s1").mkdir(parents=True)
    (real / "s1" / "session.json").write_text('{"status": "active"}')
    (root / ".context" / "runtime").mkdir(parents=True)
    os.symlink(real, root / ".context" / "runtime" / "sessions")
    with pytest.raises(quickread.Unreadable):
        quickread.read_json(str(root), "runtime", "sessions", "s1", "session.json")
    (root / ".context" / "runtime" / "hooks.json").symlink_to(real / "s1" / "session.json")
    with pytest.raises(quickread.Unreadable):
        quickread.read_json(str(root), "runtime", "hooks.json")
    assert quickread.read_json(str(root), "runtime", "nothing.json") is None
    (root / ".context" / "runtime" / "big.json").write_bytes(b" " * (quickread.MAX_FILE + 1))
    with pytest.raises(quickread.Unreadable):
        quickread.read_json(str(root), "runtime", "big.json")


@pytest.mark.parametrize("text", [
    "2026-11-29T07:25:57.336Z", "2026-02-28T23:59:59Z", "2024-02-29T12:00:00.5Z",
    "1970-01-01T00:00:00.000Z", "2000-03-01T00:00:00.000Z", "2026-12-01T20:00:00+02:00",
    "2026-12-01T20:00:00", " 2026-12-01T20:00:00.123456Z ", 1796115000, 1796115000.5])
def test_a_time_reads_as_timeutil_reads_it(text):
    from sidecar.base.timeutil import parse_ts

    assert quickread.parse_ts(text) == pytest.approx(parse_ts(text), abs=1e-6)


@pytest.mark.parametrize("text", ["2026-13-01T00:00:00.000Z", "yesterday", "", None, True, []])
def test_what_is_no_time_is_none(text):
    assert quickread.parse_ts(text) is None


def test_only_a_regular_file_of_one_link_is_read(tmp_path):
    runtime = tmp_path / ".context" / "runtime"
    runtime.mkdir(parents=True)
    (runtime / "one.json").write_text('{"a": 1}')
    assert quickread.read_json(str(tmp_path), "runtime", "one.json") == {"a": 1}
    os.link(runtime / "one.json", runtime / "two.json")  # now a file of two names
    for name in ("one.json", "two.json"):
        with pytest.raises(quickread.Unreadable, match=name):
            quickread.read_json(str(tmp_path), "runtime", name)
    (runtime / "folder.json").mkdir()
    with pytest.raises(quickread.Unreadable, match="folder.json"):
        quickread.read_json(str(tmp_path), "runtime", "folder.json")
