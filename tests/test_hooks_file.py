"""hooks.json: validation, migration, seeding, reload detection and broken hand edits."""

from __future__ import annotations

import os

import orjson
import pytest

from conftest import read_json
from sidecar import hooks
from sidecar.hooks import HooksError, HookStore, default_doc, parse, read_prompt, unique_id
from sidecar.layout import Workspace

T0 = 1_795_900_000.0


@pytest.fixture
def ws(tmp_path) -> Workspace:
    workspace = Workspace(tmp_path / "ws")
    workspace.ensure_runtime()
    return workspace


def doc_with(**fields):
    doc = default_doc(T0)
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
    assert doc["hooks"]["post-task"]["action"] == ["notify-send", "done"]


def test_delay_minutes_is_migrated_to_seconds():
    doc = default_doc(T0)
    del doc["hooks"]["post-task"]["delaySeconds"]
    doc["hooks"]["post-task"]["delayMinutes"] = 2.5
    hook = parse(orjson.dumps(doc))["hooks"]["post-task"]
    assert hook["delaySeconds"] == 150 and "delayMinutes" not in hook


def test_ids_are_slugged_with_numeric_suffixes():
    taken = {"post-task"}
    assert unique_id("Post Task!", taken) == "post-task-2"
    taken.add("post-task-2")
    assert unique_id("post task", taken) == "post-task-3"
    assert unique_id("Ünïcode ☃", set()) == "n-code"
    assert unique_id("!!!", set()) == "hook"


def test_history_is_capped():
    doc = default_doc(T0)
    hook = doc["hooks"]["post-task"]
    for i in range(250):
        hooks.record_firing(hook, "ok", T0 + i, {"host": "h", "sessionId": f"s{i}"}, None)
    assert len(hook["history"]) == 200 and hook["history"][-1]["sessionId"] == "s249"


def test_seed_writes_only_what_is_missing(ws):
    store = HookStore(ws, durable=False)
    assert store.seed(T0)
    assert read_json(ws.hooks_file)["hooks"]["post-task"]["enabled"] is True
    prompt = ws.prompts / "post-task.md"
    prompt.write_text("my own prompt")
    store.change(T0, lambda doc: doc["hooks"]["post-task"].update(delaySeconds=99))
    assert not store.seed(T0)
    assert prompt.read_text() == "my own prompt"
    assert read_json(ws.hooks_file)["hooks"]["post-task"]["delaySeconds"] == 99


def test_a_migrated_file_is_saved_with_seconds(ws):
    doc = default_doc(T0)
    doc["hooks"]["post-task"].pop("delaySeconds")
    doc["hooks"]["post-task"]["delayMinutes"] = 1
    ws.hooks_file.write_bytes(orjson.dumps(doc))
    store = HookStore(ws, durable=False)
    store.change(T0, lambda d: None)
    saved = read_json(ws.hooks_file)["hooks"]["post-task"]
    assert saved["delaySeconds"] == 60 and "delayMinutes" not in saved


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
    hooks_now, _, _ = store.snapshot(T0)
    assert hooks_now["post-task"]["delaySeconds"] == 20


def test_a_broken_hand_edit_is_never_overwritten_and_work_goes_on(ws):
    store = HookStore(ws, durable=False)
    store.seed(T0)
    entry = {"id": "post-task:h:s0", "hookId": "post-task", "host": "h", "sessionId": "s0",
             "enqueuedAt": "2026-11-28T00:00:00.000Z", "dueAt": None, "retries": 0}
    store.change(T0, lambda d: d["pending"].append(dict(entry)))
    broken = b'{"hooks": {"post-task": {"id": "post-task", "name": "x", "delaySeconds": 10}},\n "pending": [}'
    ws.hooks_file.write_bytes(broken)

    hooks_now, pending, error = store.snapshot(T0 + 10)
    assert "line 2, column 14" in error
    assert [e["id"] for e in pending] == ["post-task:h:s0"]  # the last good queue is kept

    late = {**entry, "id": "post-task:h:s1", "sessionId": "s1", "enqueuedAt": "2026-11-29T09:00:00.000Z"}
    assert hooks.parse_ts(late["enqueuedAt"]) > T0 + 10
    store.change(T0 + 20, lambda d: d["pending"].append(late))
    assert ws.hooks_file.read_bytes() == broken

    # A restart while it is broken still finds the queue, and what happened since the break.
    store = HookStore(ws, durable=False)
    assert [e["id"] for e in store.snapshot(T0 + 30)[1]] == ["post-task:h:s0", "post-task:h:s1"]

    fixed = default_doc(T0)
    fixed["hooks"]["post-task"]["delaySeconds"] = 30
    ws.hooks_file.write_bytes(orjson.dumps(fixed))
    hooks_now, pending, error = store.snapshot(T0 + 40)
    assert error is None and hooks_now["post-task"]["delaySeconds"] == 30
    assert [e["id"] for e in pending] == ["post-task:h:s1"]  # queued while broken: merged back
    assert [e["id"] for e in read_json(ws.hooks_file)["pending"]] == ["post-task:h:s1"]


def test_entries_of_a_hook_deleted_by_hand_are_dropped(ws):
    store = HookStore(ws, durable=False)
    store.seed(T0)
    store.change(T0, lambda d: d["pending"].append(
        {"hookId": "post-task", "host": "h", "sessionId": "s"}))
    doc = read_json(ws.hooks_file)
    doc["hooks"] = {}
    ws.hooks_file.write_bytes(orjson.dumps(doc))
    assert store.snapshot(T0)[1] == []
    assert read_json(ws.hooks_file)["pending"] == []


def test_an_unreadable_due_at_counts_as_due():
    assert hooks.due_at({"dueAt": "whenever"}) == float("-inf")
    assert hooks.due_at({}) == float("-inf")
    assert hooks.due_at({"dueAt": "2026-11-29T00:00:00Z"}) > 0


def test_prompt_frontmatter_is_stripped(ws):
    (ws.prompts).mkdir(exist_ok=True)
    (ws.prompts / "p.md").write_text("---\ntitle: x\n---\nDo the thing.\n")
    assert read_prompt(ws, "hooks/p.md") == "Do the thing."
    (ws.prompts / "q.md").write_text("No frontmatter here.\n--- not one\n")
    assert read_prompt(ws, "hooks/q.md") == "No frontmatter here.\n--- not one"
