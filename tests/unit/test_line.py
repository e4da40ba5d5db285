"""The status line's reads (views/line.py): a record's state and its next follow-up in words;
and its reads follow no symlink. (Its JSON is base/files.py's: test_files_json.py.)"""

from __future__ import annotations

import os

import pytest

from sidecar.base.timeutil import iso
from sidecar.views import activity, line

T0 = 1_796_115_000.0


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


def test_the_line_says_each_state_in_words():
    now = T0 + 125
    said = {name: line.describe(activity.of({"id": "x", **RECORDS[name]}), now)
            for name in RECORDS}
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
    assert line.next_follow_up("/nowhere", hooks, "h", "s", T0) == "post-task in 8 s"
    assert line.next_follow_up("/nowhere", hooks, "h", "s", T0 + 9) == "post-task due now"
    assert line.next_follow_up("/nowhere", hooks, "h", "s", T0 + 7.3) == "post-task due now"  # never "in 0 s"
    hooks["pending"].append({"hookId": "busy", "host": "h", "sessionId": "s", "claimedBy": "i"})
    assert line.next_follow_up("/nowhere", hooks, "h", "s", T0) == "busy running"
    assert line.next_follow_up("/nowhere", {"pending": "?"}, "h", "s", T0) == ""


def test_no_symlink_is_followed_from_the_context_folder_down(tmp_path):
    root = tmp_path / "ws"
    real = tmp_path / "elsewhere"
    (real / "s1").mkdir(parents=True)
    (real / "s1" / "session.json").write_text('{"status": "active"}')
    (root / ".context" / "runtime").mkdir(parents=True)
    os.symlink(real, root / ".context" / "runtime" / "sessions")
    with pytest.raises(line.Unreadable):
        line.read_json(str(root), "runtime", "sessions", "s1", "session.json")
    (root / ".context" / "runtime" / "hooks.json").symlink_to(real / "s1" / "session.json")
    with pytest.raises(line.Unreadable):
        line.read_json(str(root), "runtime", "hooks.json")
    assert line.read_json(str(root), "runtime", "nothing.json") is None
    (root / ".context" / "runtime" / "big.json").write_bytes(b" " * (line.MAX_FILE + 1))
    with pytest.raises(line.Unreadable):
        line.read_json(str(root), "runtime", "big.json")


def test_only_a_regular_file_of_one_link_is_read(tmp_path):
    runtime = tmp_path / ".context" / "runtime"
    runtime.mkdir(parents=True)
    (runtime / "one.json").write_text('{"a": 1}')
    assert line.read_json(str(tmp_path), "runtime", "one.json") == {"a": 1}
    os.link(runtime / "one.json", runtime / "two.json")  # now a file of two names
    for name in ("one.json", "two.json"):
        with pytest.raises(line.Unreadable, match=name):
            line.read_json(str(tmp_path), "runtime", name)
    (runtime / "folder.json").mkdir()
    with pytest.raises(line.Unreadable, match="folder.json"):
        line.read_json(str(tmp_path), "runtime", "folder.json")
