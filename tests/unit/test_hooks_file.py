"""hooks.json: validation, migration, seeding, reload detection and broken hand edits."""

from __future__ import annotations

import os
import threading

import orjson
import pytest

from helpers import read_json
from sidecar import jsonfile
from sidecar.base.outcome import OK
from sidecar.base.timeutil import parse_ts
from sidecar.followups.model import HooksError, QueueEntry, parse, slug
from sidecar.followups.prompts import read as read_prompt
from sidecar.followups.seeds import default_doc
from sidecar.followups.store import HookStore
from sidecar.layout import Workspace

T0 = 1_795_900_000.0


@pytest.fixture
def ws(tmp_path) -> Workspace:
    workspace = Workspace(tmp_path / "ws")
    workspace.ensure_runtime()
    return workspace


def doc_with(**fields):
    doc = default_doc(T0).to_json()
    doc["hooks"]["post-task"].update(fields)
    return orjson.dumps(doc)


@pytest.mark.parametrize("fields,path", [
    ({"event": "whenever"}, "$.hooks.post-task.event"),
    ({"delaySeconds": -1}, "$.hooks.post-task.delaySeconds"),
    ({"delaySeconds": 86401}, "$.hooks.post-task.delaySeconds"),
    ({"delaySeconds": "10"}, "$.hooks.post-task.delaySeconds"),
    ({"delaySeconds": True}, "$.hooks.post-task.delaySeconds"),
    ({"promptFile": "../secrets.md"}, "$.hooks.post-task.promptFile"),
    ({"promptFile": "hooks/../../x.md"}, "$.hooks.post-task.promptFile"),
    ({"promptFile": "hooks/sub/x.md"}, "$.hooks.post-task.promptFile"),
    ({"promptFile": "hooks/x.txt"}, "$.hooks.post-task.promptFile"),
    ({"promptFile": "/etc/passwd.md"}, "$.hooks.post-task.promptFile"),
    ({"action": []}, "$.hooks.post-task.action"),
    ({"action": "rm -rf /"}, "$.hooks.post-task.action"),
    ({"action": ["echo", 3]}, "$.hooks.post-task.action"),
    ({"enabled": "yes"}, "$.hooks.post-task.enabled"),
    ({"maxContextK": -5}, "$.hooks.post-task.maxContextK"),
    ({"id": "other"}, "$.hooks.post-task.id"),
])
def test_bad_values_are_named_by_their_json_path(fields, path):
    with pytest.raises(HooksError, match=path.replace("$", r"\$").replace(".", r"\.")):
        parse(doc_with(**fields))


def test_a_syntax_error_gives_line_and_column():
    with pytest.raises(HooksError, match="line 3, column 5"):
        parse(b'{\n  "hooks": {},\n    oops\n}')


def test_good_values_pass():
    doc = parse(doc_with(delaySeconds=0, action=["notify-send", "done"], promptFile=None))
    assert doc.hooks["post-task"].action == ["notify-send", "done"]


def legacy_doc():
    """hooks.json as written before it had a version."""
    doc = default_doc(T0).to_json()
    del doc["version"]
    return doc


@pytest.mark.parametrize("make, minutes, seconds", [
    (legacy_doc, 2.5, 150),
    (lambda: default_doc(T0).to_json(), 5, 300),  # a hand edit from older docs: the version too
])
def test_delay_minutes_only_is_migrated_to_seconds_not_defaulted(make, minutes, seconds):
    doc = make()
    del doc["hooks"]["post-task"]["delaySeconds"]
    doc["hooks"]["post-task"]["delayMinutes"] = minutes
    hook = parse(orjson.dumps(doc)).hooks["post-task"]
    assert hook.delay_seconds == seconds and "delayMinutes" not in hook.to_json()
    doc["hooks"]["post-task"]["delayMinutes"] = "soon"
    with pytest.raises(HooksError, match=r"\$\.hooks\.post-task\.delayMinutes: must be a number"):
        parse(orjson.dumps(doc))


def test_a_versioned_file_keeps_an_unknown_key_and_a_newer_version_is_refused():
    doc = default_doc(T0).to_json()
    doc["hooks"]["post-task"]["delayMinutes"] = 5  # delaySeconds, given too, wins
    doc["hooks"]["post-task"]["myNote"] = "mine"
    hook = parse(orjson.dumps(doc)).hooks["post-task"]
    assert hook.delay_seconds == 10 and hook.to_json()["myNote"] == "mine"
    doc["version"] = 99
    with pytest.raises(HooksError, match=r"\$\.version: 99 is from a newer sidecar"):
        parse(orjson.dumps(doc))


def test_queue_ids_of_the_wrong_type_are_refused_by_their_path():
    doc = default_doc(T0).to_json()
    doc["pending"] = [{"id": 7, "hookId": "post-task", "host": "h", "sessionId": "s"}]
    with pytest.raises(HooksError, match=r"\$\.pending\[0\]\.id"):
        parse(orjson.dumps(doc))


def test_ids_are_slugs_of_the_name():
    assert slug("Post Task!") == "post-task"
    assert slug("Ünïcode ☃") == "n-code"
    assert slug("!!!") == "hook"


def test_history_is_capped():
    hook = default_doc(T0).hooks["post-task"]
    for i in range(250):
        hook.record_firing(OK, T0 + i, "h", f"s{i}", None)
    assert len(hook.history) == 200 and hook.history[-1].session_id == "s249"


def test_seed_writes_only_what_is_missing(ws):
    store = HookStore(ws, durable=False)
    assert store.seed(T0)
    assert read_json(ws.hooks_file)["hooks"]["post-task"]["enabled"] is True
    prompt = ws.prompts / "post-task.md"
    prompt.write_text("my own prompt")
    store.change(T0, lambda doc: setattr(doc.hooks["post-task"], "delay_seconds", 99))
    assert not store.seed(T0)
    assert prompt.read_text() == "my own prompt"
    assert read_json(ws.hooks_file)["hooks"]["post-task"]["delaySeconds"] == 99


def test_a_migrated_file_is_saved_with_seconds(ws):
    doc = legacy_doc()
    doc["hooks"]["post-task"].pop("delaySeconds")
    doc["hooks"]["post-task"]["delayMinutes"] = 1
    ws.hooks_file.write_bytes(orjson.dumps(doc))
    store = HookStore(ws, durable=False)
    store.change(T0, lambda d: None)
    saved = read_json(ws.hooks_file)
    assert saved["version"] == 1
    assert saved["hooks"]["post-task"]["delaySeconds"] == 60
    assert "delayMinutes" not in saved["hooks"]["post-task"]


def test_an_edit_is_noticed_even_with_the_same_size_and_mtime(ws):
    store = HookStore(ws, durable=False)
    store.seed(T0)
    store.snapshot(T0)
    before = ws.hooks_file.stat()
    data = ws.hooks_file.read_bytes().replace(b'"delaySeconds": 10', b'"delaySeconds": 20')
    replacement = ws.runtime / "edited.json"
    replacement.write_bytes(data)
    os.utime(replacement, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(replacement, ws.hooks_file)  # same size, same mtime, new inode
    assert store.snapshot(T0).hooks["post-task"].delay_seconds == 20


def test_an_unchanged_file_is_read_without_waiting_for_its_lock_and_a_changed_one_under_it(ws):
    """A step reads hooks.json at every batch: while another program holds its lock (a
    `sidecar hooks` edit in progress), an unchanged file is answered from what was read; once
    that program has replaced it, the new file is read only after the lock is let go."""
    reader = HookStore(ws, durable=False)
    reader.seed(T0)
    assert reader.snapshot(T0).hooks["post-task"].delay_seconds == 10
    editor = HookStore(ws, durable=False)
    outcome: list[int] = []
    with editor.locked():
        assert reader.snapshot(T0).hooks["post-task"].delay_seconds == 10  # no wait for the lock
        doc = read_json(ws.hooks_file)
        doc["hooks"]["post-task"]["delaySeconds"] = 20
        jsonfile.write_json_atomic(ws.hooks_file, doc)  # replaced, the lock still held
        waiting = threading.Thread(target=lambda: outcome.append(
            reader.snapshot(T0).hooks["post-task"].delay_seconds))
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive() and outcome == []  # the changed file waits for the lock
    waiting.join(10)
    assert outcome == [20]


def test_a_broken_hand_edit_is_never_overwritten_and_work_goes_on(ws):
    store = HookStore(ws, durable=False)
    store.seed(T0)
    entry = {"id": "post-task:h:s0", "hookId": "post-task", "host": "h", "sessionId": "s0",
             "enqueuedAt": "2026-11-28T00:00:00.000Z", "dueAt": None, "retries": 0}
    store.change(T0, lambda d: d.pending.append(QueueEntry.from_json(entry, "test")))
    broken = b'{"hooks": {"post-task": {"id": "post-task", "name": "x", "delaySeconds": 10}},\n "pending": [}'
    ws.hooks_file.write_bytes(broken)

    view = store.snapshot(T0 + 10)
    assert "line 2, column 14" in view.error
    assert [e.id for e in view.pending] == ["post-task:h:s0"]  # the last good queue is kept

    late = {**entry, "id": "post-task:h:s1", "sessionId": "s1", "enqueuedAt": "2026-11-29T09:00:00.000Z"}
    assert parse_ts(late["enqueuedAt"]) > T0 + 10
    store.change(T0 + 20, lambda d: d.pending.append(QueueEntry.from_json(late, "test")))
    assert ws.hooks_file.read_bytes() == broken

    # A restart while it is broken still finds the queue, and what happened since the break.
    store = HookStore(ws, durable=False)
    assert [e.id for e in store.snapshot(T0 + 30).pending] == ["post-task:h:s0", "post-task:h:s1"]

    fixed = default_doc(T0).to_json()
    fixed["hooks"]["post-task"]["delaySeconds"] = 30
    ws.hooks_file.write_bytes(orjson.dumps(fixed))
    view = store.snapshot(T0 + 40)
    assert view.error is None and view.hooks["post-task"].delay_seconds == 30
    assert [e.id for e in view.pending] == ["post-task:h:s1"]  # queued while broken: merged back
    assert [e["id"] for e in read_json(ws.hooks_file)["pending"]] == ["post-task:h:s1"]


def test_entries_of_a_hook_deleted_by_hand_are_dropped(ws):
    store = HookStore(ws, durable=False)
    store.seed(T0)
    store.change(T0, lambda d: d.pending.append(
        QueueEntry.from_json({"hookId": "post-task", "host": "h", "sessionId": "s"}, "test")))
    doc = read_json(ws.hooks_file)
    doc["hooks"] = {}
    ws.hooks_file.write_bytes(orjson.dumps(doc))
    assert store.snapshot(T0).pending == []
    assert read_json(ws.hooks_file)["pending"] == []


def test_an_unreadable_due_at_counts_as_due():
    def due(**fields):
        return QueueEntry.from_json({"hookId": "p", "host": "h", "sessionId": "s", **fields}, "t").due

    assert due(dueAt="whenever") == float("-inf")
    assert due() == float("-inf")
    assert due(dueAt={"nested": 1}) == float("-inf")
    assert due(dueAt="2026-11-29T00:00:00Z") > 0


def test_prompt_frontmatter_is_stripped(ws):
    (ws.prompts).mkdir(exist_ok=True)
    (ws.prompts / "p.md").write_text("---\ntitle: x\n---\nDo the thing.\n")
    assert read_prompt(ws, "hooks/p.md") == "Do the thing."
    (ws.prompts / "q.md").write_text("No frontmatter here.\n--- not one\n")
    assert read_prompt(ws, "hooks/q.md") == "No frontmatter here.\n--- not one"


def test_a_good_hooks_file_is_taken_up_even_where_its_last_good_copy_cannot_be_written(ws):
    # A full disk (here: a folder where the copy goes) stops the copy, never the daemon's step:
    # hooks.json is the record, and the copy is only older until the next write.
    store = HookStore(ws, durable=False)
    store.seed(1.0)
    assert store.snapshot(2.0).hooks["post-task"].enabled
    doc = read_json(ws.hooks_file)
    doc["hooks"]["post-task"]["enabled"] = False  # someone else's good version
    store.last_good_file.unlink(missing_ok=True)
    store.last_good_file.mkdir()
    jsonfile.write_bytes_atomic(ws.hooks_file, orjson.dumps(doc), durable=False)
    assert not store.snapshot(3.0).hooks["post-task"].enabled
