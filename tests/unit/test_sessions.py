"""The session store: lifecycle, idempotence, sweep and retention, in dotcontext's schema."""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

import orjson
import pytest
from freezegun import freeze_time

from helpers import FIXTURES, read_json
from sidecar import jsonfile
from sidecar.base.ids import harness_id
from sidecar.base.timeutil import iso, now
from sidecar.coordination.base import LeaseLost
from sidecar.inbox.events import parse
from sidecar.layout import Workspace
from sidecar.sessions.batch import open_batch
from sidecar.sessions.store import SessionStore

T0 = 1_795_900_000.0
_names = itertools.count()


def ev(name: str, session: str = "s1", ts: float = T0, host: str = "claude-code", **extra):
    payload = {"hook_event_name": name, "session_id": session, "host": host, "ts": ts, **extra}
    return parse(orjson.dumps(payload), f"{next(_names):020d}.json", ts)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "ws")
    workspace.ensure_runtime()
    return workspace


@pytest.fixture
def store(ws: Workspace) -> SessionStore:
    return SessionStore(ws, durable=False)


def apply(store: SessionStore, events, replay=False, before_commit=None):
    """One batch, as ingestion runs it (no follow-up hooks here)."""
    with open_batch(store, replay) as batch:
        changes = batch.plan(list(events))
        if before_commit is not None:
            before_commit(changes)
        return batch.commit({}, T0)


def record(ws: Workspace, host="claude-code", session="s1"):
    return read_json(ws.session_dir(harness_id(host, session)) / "session.json")


def trace(ws: Workspace, host="claude-code", session="s1"):
    path = ws.session_dir(harness_id(host, session)) / "trace.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def bindings(ws: Workspace):
    return read_json(ws.bindings_file)["bindings"] if ws.bindings_file.exists() else {}


def test_a_whole_session(ws, store):
    result = apply(store, [
        ev("SessionStart", ts=T0, source="startup", cwd="/w", transcript_path="/t.jsonl"),
        ev("PostToolUse", ts=T0 + 1, tool_name="Bash", tool_input={"command": "secret"}),
        ev("Stop", ts=T0 + 2),
    ])
    assert len(result.applied) == 3 and not result.retry
    rec = record(ws)
    assert rec["status"] == "active" and rec["updatedAt"] == iso(T0 + 2)
    assert rec["metadata"]["host"] == "claude-code" and rec["metadata"]["hostSessionId"] == "s1"
    assert bindings(ws)["claude-code"]["s1"]["harnessSessionId"] == rec["id"]
    lines = trace(ws)
    assert [line["event"] for line in lines] == ["session.created", "session.start", "tool.use", "turn.end"]
    assert lines[2]["message"] == "Bash"
    assert b"secret" not in (ws.session_dir(rec["id"]) / "trace.jsonl").read_bytes()

    apply(store, [ev("SessionEnd", ts=T0 + 3, reason="logout")])
    rec = record(ws)
    assert rec["status"] == "completed" and rec["completedAt"] == iso(T0 + 3)
    last = trace(ws)[-1]
    assert last["event"] == "session.completed" and last["data"]["reason"] == "logout"
    assert bindings(ws) == {}


@pytest.mark.parametrize("events", [
    # events apply in the order they happened, not the order they arrived: the start is picked
    # up in the same batch, listed later
    [ev("SessionEnd", ts=T0 + 5), ev("SessionStart", ts=T0)],
    [ev("SessionEnd")],  # an end for an unknown session
], ids=["in-the-order-they-happened", "unknown-session"])
def test_an_end_leaves_the_session_completed_and_unbound(ws, store, events):
    apply(store, events)
    assert record(ws)["status"] == "completed"
    assert bindings(ws) == {}


def test_a_replayed_batch_changes_nothing(ws, store):
    batch = [ev("SessionStart", ts=T0), ev("Stop", ts=T0 + 1)]
    apply(store, batch)
    before = record(ws)
    apply(store, batch)  # the same files again, as after a crash before their removal
    assert record(ws) == before


def test_duplicate_stops_are_harmless(ws, store):
    apply(store, [ev("SessionStart")] + [ev("Stop", ts=T0 + 1) for _ in range(5)])
    apply(store, [ev("SessionEnd", ts=T0 + 2), ev("SessionEnd", ts=T0 + 2)])
    rec = record(ws)
    assert rec["status"] == "completed" and rec["completedAt"] == iso(T0 + 2)
    assert [line["event"] for line in trace(ws)].count("session.completed") == 1


def test_a_late_start_is_normal(ws, store):
    apply(store, [ev("PostToolUse", tool_name="Read")])
    assert record(ws)["status"] == "active"
    assert "s1" in bindings(ws)["claude-code"]


def test_a_resumed_conversation_reopens_the_same_harness_session(ws, store):
    apply(store, [ev("SessionStart", ts=T0), ev("SessionEnd", ts=T0 + 1)])
    first_id = record(ws)["id"]
    apply(store, [ev("SessionStart", ts=T0 + 10, source="resume")])
    rec = record(ws)
    assert rec["id"] == first_id and rec["status"] == "active" and "completedAt" not in rec
    assert bindings(ws)["claude-code"]["s1"]["harnessSessionId"] == first_id
    assert "session.reopened" in [line["event"] for line in trace(ws)]


def test_an_event_older_than_the_completion_is_traced_only(ws, store):
    apply(store, [ev("SessionStart", ts=T0), ev("SessionEnd", ts=T0 + 10)])
    apply(store, [ev("SessionStart", ts=T0 + 5), ev("Stop", ts=T0 + 6)])
    rec = record(ws)
    assert rec["status"] == "completed" and rec["completedAt"] == iso(T0 + 10)
    assert bindings(ws) == {}
    assert trace(ws)[-1]["message"] == "older than the session's completion"


def test_sessions_are_kept_apart_by_host(ws, store):
    apply(store, [ev("SessionStart", host="codex"), ev("SessionStart", host="claude-code")])
    assert set(bindings(ws)) == {"codex", "claude-code"}
    assert harness_id("codex", "s1") != harness_id("claude-code", "s1")


def test_a_session_dotcontext_left_active_is_completed_by_our_session_end(ws, store):
    source = FIXTURES / "dotcontext-1.1.1/runtime"  # its bindings and session records
    shutil.copytree(source / "hooks", ws.bindings_file.parent, dirs_exist_ok=True)
    shutil.copytree(source / "sessions", ws.sessions, dirs_exist_ok=True)
    dotcontext_id = "b14f2c53-5d3c-4c5e-99ad-7e360b7f7cc7"
    apply(store, [ev("SessionEnd", session="s1", ts=1795937200.0, reason="exit")])
    rec = read_json(ws.session_dir(dotcontext_id) / "session.json")
    assert rec["status"] == "completed"
    assert rec["traceCount"] == 3 and rec["checkpoints"] == [] and rec["name"] == "hook:claude-code:s1"
    lines = (ws.session_dir(dotcontext_id) / "trace.jsonl").read_bytes().splitlines()
    assert len(lines) == 3 and orjson.loads(lines[-1])["event"] == "session.completed"
    assert bindings(ws) == {}
    assert not ws.session_dir(harness_id("claude-code", "s1")).exists()


def test_a_binding_added_by_another_writer_meanwhile_is_kept(ws, store):
    def dotcontext_writes(effects):
        doc = read_json(ws.bindings_file) if ws.bindings_file.exists() else {"bindings": {}}
        doc["bindings"].setdefault("claude-code", {})["theirs"] = {
            "harnessSessionId": "x", "hostSessionId": "theirs", "updatedAt": iso(T0)}
        ws.bindings_file.write_bytes(orjson.dumps(doc))

    apply(store, [ev("SessionStart", session="ours")], before_commit=dotcontext_writes)
    assert set(bindings(ws)["claude-code"]) == {"ours", "theirs"}


def test_a_passing_failure_keeps_the_binding_and_the_event_for_a_retry(ws, store):
    apply(store, [ev("SessionStart", ts=T0)])
    folder = ws.session_dir(harness_id("claude-code", "s1"))
    shutil.move(folder, folder.with_name("aside"))
    folder.write_text("not a folder")  # reading and writing the record now fail
    end = ev("SessionEnd", ts=T0 + 1)
    result = apply(store, [end])
    assert result.retry == [end.file] and result.errors
    assert "s1" in bindings(ws)["claude-code"]

    folder.unlink()
    shutil.move(folder.with_name("aside"), folder)
    result = apply(store, [end])
    assert result.applied == [end.file]
    assert record(ws)["status"] == "completed" and bindings(ws) == {}


def test_sweep_completes_stale_sessions_and_spares_recent_ones(ws, store):
    day = 86400
    with freeze_time(iso(T0)):
        apply(store, [ev("SessionStart", session="old", ts=T0 - 2 * day),
                           ev("SessionStart", session="new", ts=now() - 60)])
        result = store.sweep(now(), day)
    assert [c.session_id for c in result.changes] == ["old"]
    old = record(ws, session="old")
    assert old["status"] == "completed" and old["completedAt"] == iso(T0)
    assert trace(ws, session="old")[-1]["data"]["reason"] == "stale"
    assert set(bindings(ws)["claude-code"]) == {"new"}


def test_sweep_spares_a_session_whose_transcript_is_still_written(ws, store, tmp_path):
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("{}\n")
    stamp = transcript.stat().st_mtime
    apply(store, [ev("SessionStart", ts=stamp - 3 * 86400, transcript_path=str(transcript))])
    assert store.sweep(stamp + 10, 86400).changes == []
    assert record(ws)["status"] == "active"
    assert len(store.sweep(stamp + 2 * 86400, 86400).changes) == 1


def test_sweep_drops_a_binding_whose_session_is_confirmed_missing(ws, store):
    apply(store, [ev("SessionStart", ts=T0)])
    shutil.rmtree(ws.session_dir(harness_id("claude-code", "s1")))
    store.sweep(T0 + 2 * 86400, 86400)
    assert bindings(ws) == {}


def test_sweep_keeps_the_binding_when_the_session_cannot_be_read(ws, store):
    apply(store, [ev("SessionStart", ts=T0)])
    (ws.session_dir(harness_id("claude-code", "s1")) / "session.json").write_text("{torn")
    result = store.sweep(T0 + 2 * 86400, 86400)
    assert result.errors and "s1" in bindings(ws)["claude-code"]


def test_activity_after_a_stale_sweep_reopens_the_session(ws, store):
    apply(store, [ev("Stop", ts=T0)])
    store.sweep(T0 + 2 * 86400, 86400)
    apply(store, [ev("Stop", ts=T0 + 2 * 86400 + 5)])
    assert record(ws)["status"] == "active" and "s1" in bindings(ws)["claude-code"]


def test_retention_prunes_only_old_completed_sessions(ws, store):
    day = 86400
    apply(store, [ev("SessionStart", session="done", ts=T0), ev("SessionEnd", session="done", ts=T0 + 1),
                       ev("SessionStart", session="live", ts=T0),
                       ev("SessionStart", session="recent", ts=T0 + 40 * day),
                       ev("SessionEnd", session="recent", ts=T0 + 40 * day)])
    old = T0 - day
    for s in ("done", "live", "recent"):
        os.utime(ws.session_dir(harness_id("claude-code", s)), (old, old))
    with freeze_time(iso(T0 + 45 * day)):
        assert store.prune(now(), 30 * day) == 1
    assert not ws.session_dir(harness_id("claude-code", "done")).exists()
    assert record(ws, session="live")["status"] == "active"
    assert record(ws, session="recent")["status"] == "completed"


def test_a_replayed_batch_after_a_crash_between_trace_and_record_repeats_no_trace_line(ws, store):
    batch = [ev("SessionStart", ts=T0), ev("Stop", ts=T0 + 1)]
    original = SessionStore.save_session

    def crash_after_trace(self, record, trace, dedupe=False):
        jsonfile.append_lines(self.ws.session_dir(record.id) / "trace.jsonl",
                              [line.to_json() for line in trace])
        raise OSError("killed between the trace append and the record save")

    ws.session_dir(harness_id("claude-code", "s1")).mkdir(parents=True)
    SessionStore.save_session = crash_after_trace
    try:
        result = apply(store, batch)
    finally:
        SessionStore.save_session = original
    assert result.retry
    apply(store, batch, replay=True)
    ids = [line["id"] for line in trace(ws)]
    assert len(ids) == len(set(ids)) == 3
    assert record(ws)["traceCount"] == 3


@pytest.mark.parametrize("durable", [True, False])
def test_a_leader_deposed_within_its_batch_appends_and_puts_in_place_nothing_after(ws, store,
                                                                                 durable):
    """Each session's trace append is checked against the lead (it lands at once); a record
    and the bindings are put in place only after a check: durable ones after the batch's
    last (they are renamed at its end), the others each after its own."""
    apply(store, [ev("SessionStart", session="a", ts=T0), ev("SessionStart", session="b", ts=T0)])
    before = {name: (trace(ws, session=name), record(ws, session=name)) for name in ("a", "b")}
    bindings_before = bindings(ws)
    checks = []

    def lead_lost_at_second_check() -> None:
        checks.append(True)
        if len(checks) >= 2:
            raise LeaseLost("another instance leads the workspace now")

    store.durable = durable
    store.fence = lead_lost_at_second_check
    with pytest.raises(LeaseLost):
        apply(store, [ev("Stop", session="a", ts=T0 + 1), ev("Stop", session="b", ts=T0 + 1)])
    first, second = sorted(("a", "b"), key=lambda name: len(trace(ws, session=name)),
                           reverse=True)
    assert len(trace(ws, session=first)) == len(before[first][0]) + 1  # checked, then appended
    assert trace(ws, session=second) == before[second][0]  # refused at its check
    for name in ("a", "b"):
        assert record(ws, session=name) == before[name][1]  # no record put in place
    assert bindings(ws) == bindings_before
    assert not [p for p in ws.runtime.rglob("*") if p.name.endswith(".tmp")]


def test_a_transcript_whose_reading_fails_still_lets_the_session_complete(ws, store, monkeypatch,
                                                                          caplog):
    # Running out of memory cannot be caused here without harming the machine: the reader
    # is made to fail as it would, and the end must be applied all the same.
    from sidecar.hosts import transcripts

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(transcripts, "entries", exhausted)
    apply(store, [ev("SessionStart"), ev("SessionEnd", ts=T0 + 1, transcript_path="/t.jsonl")])
    assert record(ws)["status"] == "completed"
    assert "tokens" not in record(ws)["metadata"]["sidecar"]
    assert "transcript /t.jsonl not read" in caplog.text
