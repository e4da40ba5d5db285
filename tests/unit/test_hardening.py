"""What an adversarial run broke: each case reproduced, and what sidecar does now.

In process; those that start real processes are in tests/daemon/test_hardening_daemon.py.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import sys

import orjson
import pytest

from helpers import invoke, read_json, session_record, trust_hooks
from sidecar import emit as emit_mod
from sidecar import jsonfile, locks
from sidecar.base.ids import harness_id
from sidecar.config import Config, register
from sidecar.followups.fire import FollowUps
from sidecar.followups.model import HooksError, new_hook
from sidecar.followups.queue import FollowUpQueue
from sidecar.followups.store import HookStore
from sidecar.inbox import events
from sidecar.inbox import folder as inbox
from sidecar.layout import Workspace
from sidecar.sessions import rules
from sidecar.sessions.batch import open_batch
from sidecar.sessions.model import Binding, Bindings
from sidecar.sessions.store import SessionStore
from support import stores
from support.stores import ingestor

T0 = 1_795_900_000.0


def drop(ws: Workspace, name: str, data: bytes, mtime: float = T0 - 60) -> None:
    stores.drop(ws, name, data, mtime)


def event(kind: str, ts: object, session: str = "s") -> bytes:
    """An event of host "t", as its file holds it."""
    return orjson.dumps({"event": kind, "session_id": session, "host": "t", "ts": ts})


# -- prompt files ------------------------------------------------------------------------------

def fire_post_task(ws: Workspace, tmp_path) -> str:
    """Queue and fire the post-task hook (a command that prints its prompt); its status."""
    hooks = HookStore(ws, durable=False)
    hook = new_hook("post-task", "post-task", T0, action=[sys.executable, "-c", "pass", "{prompt}"])
    hooks.change(T0, lambda d: d.hooks.update({"post-task": hook}))
    trust_hooks(ws)
    queue = FollowUpQueue(hooks, "me")
    store = SessionStore(ws, durable=False)
    with open_batch(store) as batch:
        changes = batch.plan([events.parse(event("session-end", T0), "e.json", T0)])
        batch.commit(queue.add(changes, T0), T0)
    followups = FollowUps(ws, queue, store, lambda: Config(), lambda other: False)
    claimed = queue.claim(hooks.snapshot(T0).pending[0].id, T0 + 20)
    assert claimed is not None
    followups.fire_now(claimed, T0 + 20)
    return str(hooks.snapshot(T0).hooks["post-task"].last_status)


@pytest.mark.parametrize("make,why", [
    (lambda p, tmp: p.symlink_to(tmp / "credentials"), "is a symlink, not a regular file"),
    (lambda p, tmp: p.symlink_to("/dev/zero"), "is a symlink, not a regular file"),
    (lambda p, tmp: p.write_bytes(b"x" * (64 * 1024 + 1)), "is larger than 64 KiB"),
])
def test_a_prompt_file_is_a_small_regular_file_or_the_firing_fails_clearly(ws, tmp_path, make, why):
    (tmp_path / "credentials").write_text("SECRET=hunter2\n")
    prompt = ws.prompts / "post-task.md"
    prompt.unlink()
    make(prompt, tmp_path)
    status = fire_post_task(ws, tmp_path)
    assert status == f"error: prompt file hooks/post-task.md: {why}"
    logs = list((ws.logs / "hooks").rglob("*.log")) if (ws.logs / "hooks").exists() else []
    assert not any(b"hunter2" in p.read_bytes() for p in logs)


# -- ids and times -------------------------------------------------------------------------------


@pytest.mark.parametrize("ts", ["9999-12-31T23:59:59-14:00", -62135596801, 1e300])
def test_a_time_that_cannot_be_used_falls_back_to_the_files_mtime(ws, ts):
    parsed = events.parse(orjson.dumps({"event": "x", "session_id": "s", "ts": ts}), "f", 42.0)
    assert parsed.ts == 42.0
    drop(ws, "a.json", event("session-start", ts))
    ing = ingestor(ws)
    ing.start(T0)
    assert session_record(ws, "s", "t")["status"] == "active" and ing.health.errors == 0


def test_an_event_that_cannot_be_applied_is_rejected_alone(ws, monkeypatch):
    real = rules.apply

    def brittle(rec, event, out, end=None):
        if event.session_id == "cursed":
            raise RuntimeError("a bug met an odd event")
        real(rec, event, out, end)

    monkeypatch.setattr(rules, "apply", brittle)
    for i, sid in enumerate(["ok-1", "cursed", "ok-2"]):
        drop(ws, f"{i}.json", event("session-start", T0 + i, sid))
    ing = ingestor(ws)
    ing.start(T0)
    assert session_record(ws, "ok-1", "t") and session_record(ws, "ok-2", "t")
    note = read_json(ws.rejected / "1.json.error.json")
    assert "a bug met an odd event" in note["reason"]
    assert list(ws.inbox.glob("*.json")) == []


@pytest.mark.parametrize("raw,check", [
    (b'{"event": "x", "session_id": "s", "tool_name": "cut \\ud83d"}',
     lambda e: e.payload["tool_name"] == "cut \ufffd"),
    (b'{"event": "x", "session_id": "s", "size": 1e400}',
     lambda e: e.payload["size"] == "1e400"),
])
def test_valid_json_that_orjson_refuses_is_accepted(raw, check):
    assert check(events.parse(raw, "f", 0.0))


# -- files that are not what they should be -------------------------------------------------------


def test_a_bad_file_with_a_very_long_name_is_set_aside(ws, caplog):
    name = "x" * 225 + "\nWARNING forged.json"  # 245 bytes: its note would need 256
    drop(ws, name, b"not json", mtime=T0 - 60)
    ing = ingestor(ws)
    with caplog.at_level(logging.WARNING, logger="sidecar"):
        ing.start(T0)
    assert not (ws.inbox / name).exists()
    [note] = list(ws.rejected.glob("*.error.json"))
    assert read_json(note)["file"] == name and len(note.name.encode()) <= 255
    assert "\nWARNING forged" not in caplog.text and "\\nWARNING forged" in caplog.text


# -- clear errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("delay", ["inf", "nan", "-inf"])
def test_a_delay_that_is_not_a_finite_duration_is_refused_clearly(workspace, delay):
    result = invoke("hooks", "add", "x", "--delay", delay, cwd=workspace.root)
    assert result.returncode == 1 and b"not a finite duration" in result.stderr
    assert b"Traceback" not in result.stderr


def test_a_hooks_file_with_queue_ids_of_mixed_types_is_shown_broken_not_fired(workspace):
    doc = read_json(workspace.hooks_file)
    doc["pending"] = [{"id": 7, "hookId": "post-task", "host": "h", "sessionId": "a"},
                      {"id": "post-task:h:b", "hookId": "post-task", "host": "h", "sessionId": "b"}]
    workspace.hooks_file.write_bytes(orjson.dumps(doc))
    report = orjson.loads(invoke("status", "--root", str(workspace.root), "--json").stdout)
    assert "$.pending[0].id: must be a non-empty string, not 7" in report["workspaces"][0]["error"]


# -- a full disk ----------------------------------------------------------------------------------

def test_emit_on_a_full_disk_leaves_no_temporary_file(ws, monkeypatch):
    real_write = os.write

    def full(fd, data):
        if len(data) > 10:
            real_write(fd, bytes(data[:10]))  # a short write, then the disk is full
            return 10
        raise OSError(errno.ENOSPC, "No space left on device")

    register(ws.root)
    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError, match="No space left"):
        emit_mod.drop(str(ws.root), b'{"event": "x", "session_id": "s"}')
    monkeypatch.undo()
    assert os.listdir(ws.inbox) == ["rejected"]  # no event, and no temporary file


def test_a_trace_append_that_fails_part_way_is_cut_back_and_a_retry_doubles_nothing(ws, monkeypatch):
    drop(ws, "a.json", event("session-start", T0 - 10))
    ing = ingestor(ws)
    ing.start(T0)  # the session exists; its trace has two lines
    trace = ws.session_dir(harness_id("t", "s")) / "trace.jsonl"
    before = trace.read_bytes()
    real_write, real_save = os.write, jsonfile.write_json_atomic
    calls = {"n": 0}

    def half(fd, data):
        if fd != -1 and len(data) > 40 and b'"turn.end"' in bytes(data):
            real_write(fd, bytes(data[:40]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", half)
    drop(ws, "b.json", event("Stop", T0 - 5))
    ing.step(T0 + 1, woken=True)
    assert trace.read_bytes() == before  # no torn line
    monkeypatch.setattr(os, "write", real_write)

    def save_fails_once(path, data, durable=True):  # the trace lands, the record does not
        if path.name == "session.json" and not calls["n"]:
            calls["n"] += 1
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(path, data, durable=durable)

    monkeypatch.setattr(jsonfile, "write_json_atomic", save_fails_once)
    ing.step(T0 + 3, woken=True)  # the retry: the trace appended, the record save failed
    ing.step(T0 + 5, woken=True)  # and again: the lines already there are not appended twice
    ids = [orjson.loads(line)["id"] for line in trace.read_bytes().splitlines()]
    assert len(ids) == len(set(ids)) == 3 and list(ws.inbox.glob("*.json")) == []


def test_abandoned_producer_temporaries_are_removed_after_an_hour(ws):
    old, fresh = ws.inbox / ".old.tmp", ws.inbox / "fresh.json.tmp"
    for path, age in ((old, 7200), (fresh, 60)):
        path.write_bytes(b"{")
        os.utime(path, (T0 - age, T0 - age))
    ingestor(ws).start(T0)
    assert not old.exists() and fresh.exists()


# -- never through a symlink ----------------------------------------------------------------------


def test_derived_paths_stay_inside_their_folders(ws):
    with pytest.raises(HooksError, match=r"hook /tmp/evil\.id: must be a plain name"):
        new_hook("/tmp/evil", "x", T0).to_json()
    doc = read_json(ws.hooks_file)
    doc["hooks"]["post-task"]["id"] = "../../logs-elsewhere"
    doc["hooks"]["../../logs-elsewhere"] = doc["hooks"].pop("post-task")
    ws.hooks_file.write_bytes(orjson.dumps(doc))
    status = orjson.loads(invoke("status", "--root", str(ws.root), "--json").stdout)
    assert "must be a plain name" in status["workspaces"][0]["error"]
    # A binding naming a path (a hand edit) is not followed out of sessions/.
    store = SessionStore(ws, durable=False)
    bindings = store.load_bindings()
    bindings.put(("t", "s"), Binding("../../../escape", "s", "t"))
    store.save_bindings(bindings)
    drop(ws, "a.json", event("Stop", T0))
    ingestor(ws).start(T0)
    assert session_record(ws, "s", "t") is not None and not (ws.root.parent / "escape").exists()


@pytest.mark.parametrize("part", ["locks/bindings.lock", "trace.jsonl", "session.json"])
def test_a_symlinked_runtime_file_is_never_written_through(ws, tmp_path, part):
    """A file inside the runtime replaced by a symlink (a lock, a session's trace or record):
    the write is refused where it stands and the link's target is left as it was."""
    ingest = ingestor(ws)
    drop(ws, "a.json", event("session-start", T0))
    ingest.start(T0)
    folder = ws.session_dir(harness_id("t", "s"))
    target = tmp_path / "theirs"
    target.write_bytes(b"their own text\n")
    linked = ws.runtime / part if part.startswith("locks/") else folder / part
    linked.unlink()
    linked.symlink_to(target)
    drop(ws, "b.json", event("turn-end", T0 + 1))
    ingest.step(T0 + 2, woken=True)
    assert target.read_bytes() == b"their own text\n"
    assert "symbolic links" in ingest.health.last_error  # ELOOP, said as the error it is
    assert (ws.inbox / "b.json").exists()  # the event waits for the repair, not lost
    linked.unlink()  # repaired (the record is rewritten from what sidecar holds)
    if part == "session.json":
        return
    ingest.step(T0 + 5, woken=True)
    assert not (ws.inbox / "b.json").exists()
    trace = (folder / "trace.jsonl").read_text()
    assert trace.count('"inboxFile":"b.json"') == 1  # applied once the link is gone, once


@pytest.mark.parametrize("part", ["sessions", "locks", "hooks", "inbox/rejected"])
def test_every_write_checks_its_folders_not_only_each_step(ws, tmp_path, part):
    """A folder swapped for a symlink after a step's check: the write itself refuses it."""
    target = tmp_path / "elsewhere"
    target.mkdir()
    linked = ws.runtime / part
    shutil.rmtree(linked)
    linked.symlink_to(target)
    store = SessionStore(ws, durable=False)
    record = rules.new_record(("t", "s"), harness_id("t", "s"), str(ws.root),
                                  events.parse(b'{"event":"x","session_id":"s","host":"t"}',
                                               "a.json", T0), rules.Applied())
    writes = {
        "sessions": lambda: store.save_session(record, []),
        "locks": lambda: locks.try_lock(ws.lock("leader")),
        "hooks": lambda: store.save_bindings(Bindings()),
        "inbox/rejected": lambda: inbox.reject(ws, inbox.Rejected("bad.json", "bad"), T0),
    }
    (ws.inbox / "bad.json").write_bytes(b"x") if part != "inbox/rejected" else None
    with pytest.raises(OSError, match="is a symlink; sidecar never writes through one"):
        writes[part]()
    assert list(target.iterdir()) == []
