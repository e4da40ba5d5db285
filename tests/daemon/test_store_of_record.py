"""In Redis mode Redis is the store of record: a deposed leader's change is refused by Redis
itself, a lease counts from when its renewal was sent, an event is applied once by its id,
and the files are a copy of what Redis holds, written again when a late rename set them back
(one real redis-server; several machines are test_redis_record.py's)."""

from __future__ import annotations

import shutil
import time

import orjson
import pytest

from helpers import emit, read_json, wait_until
from sidecar.base.ids import harness_id
from sidecar.coordination import current
from sidecar.coordination.base import Conflict, LeaseLost, workspace_key
from sidecar.coordination.redis.backend import RedisCoordination
from sidecar.coordination.redis.client import INSTANCE_TTL
from sidecar.followups.store import HookStore
from sidecar.layout import Workspace
from support.cluster import coordinate_through
from support.record import refusals
from support.redis_server import RedisServer

pytestmark = pytest.mark.slow


@pytest.fixture
def coords(redis_server: RedisServer):
    made: list[RedisCoordination] = []

    def make() -> RedisCoordination:
        coord = RedisCoordination(redis_server.url)
        made.append(coord)
        return coord

    yield make
    for coord in made:
        coord.close()


def doc_key(ws: Workspace, name: str) -> str:
    return f"sidecar:{workspace_key(ws)}:doc:{name}"


def test_a_deposed_leaders_change_is_refused_by_redis_whenever_it_arrives(
        tmp_path, coords, redis_server):
    ws = Workspace(tmp_path)
    a, b = coords(), coords()
    a.join(ws, "aaaa")
    b.join(ws, "bbbb")
    lead_a = a.leadership(ws, "aaaa", lambda: None)
    assert wait_until(lead_a.try_acquire, 3)
    records_a = a.records(ws)
    records_a.put("hooks/host-sessions.json", b'{"a": 1}\n')
    lead_a.check()  # sent, and taken
    assert redis_server.client().get(doc_key(ws, "hooks/host-sessions.json")) == '{"a": 1}\n'
    # a is cut off; b takes the lead and writes. a's own record still names a's term, as in
    # a leader stopped between its check and its write.
    assert redis_server.kill_clients(match=lambda client: "leader-lock" in client.get("name", ""))
    lead_b = b.leadership(ws, "bbbb", lambda: None)
    assert wait_until(lead_b.try_acquire, 5)
    b.records(ws).put("hooks/host-sessions.json", b'{"b": 1}\n')
    lead_b.check()
    records_a.put("hooks/host-sessions.json", b'{"a": 2}\n')
    with pytest.raises(LeaseLost, match="Redis refused"):
        records_a.flush()  # straight to Redis: no check of a's own on the way
    assert redis_server.client().get(doc_key(ws, "hooks/host-sessions.json")) == '{"b": 1}\n'
    assert refusals(redis_server, ws) == 1


def test_a_lease_counts_from_when_its_renewal_was_sent_not_when_the_answer_came(
        tmp_path, coords, redis_server):
    ws = Workspace(tmp_path)
    a = coords()
    a.join(ws, "aaaa")
    lead = a.leadership(ws, "aaaa", lambda: None)
    assert wait_until(lead.try_acquire, 3)
    lead.check()
    a.stopping.set()  # no renewal goes out any more: what a link that answers late amounts to
    time.sleep(INSTANCE_TTL)
    assert redis_server.client().get(f"sidecar:{workspace_key(ws)}:leader-holder")  # Redis: yes
    with pytest.raises(LeaseLost, match="lease ran out"):
        lead.check()
    assert refusals(redis_server, ws) == 0  # refused here: nothing was sent


@pytest.fixture
def record_store(workspace, config_home, redis_server, start_daemon):
    """A daemon serves the workspace in Redis mode: the Redis that is its store of record (a
    client of it, in bytes)."""
    coordinate_through(config_home, redis_server)
    current.reset()  # this process's commands read the new configuration
    start_daemon(workspace.root)
    return redis_server.client(decode_responses=False)


def session(ws, sid: str, *events: str) -> None:
    for event in events:
        payload = orjson.dumps({"event": event, "session_id": sid, "host": "chaos"})
        assert emit(ws.root, payload).returncode == 0


def trace_events(ws, sid: str) -> list[str]:
    path = ws.session_dir(harness_id("chaos", sid)) / "trace.jsonl"
    return [orjson.loads(line)["event"] for line in path.read_bytes().splitlines()] \
        if path.exists() else []


def completed(ws, sid: str) -> bool:
    events = trace_events(ws, sid)
    return bool(events) and events[-1] == "session.completed"


def test_records_live_in_redis_and_the_files_are_their_copy(workspace, record_store):
    session(workspace, "s1", "session-start", "Stop", "session-end")
    assert wait_until(lambda: completed(workspace, "s1"), 10)
    hid = harness_id("chaos", "s1")
    folder = workspace.session_dir(hid)
    assert wait_until(lambda: record_store.get(doc_key(workspace, f"sessions/{hid}/session.json"))
                      == (folder / "session.json").read_bytes(), 5)
    assert record_store.get(doc_key(workspace, f"sessions/{hid}/trace.jsonl")) \
        == (folder / "trace.jsonl").read_bytes()
    assert record_store.get(doc_key(workspace, "hooks.json")) == workspace.hooks_file.read_bytes()
    applied = record_store.keys(f"sidecar:{workspace_key(workspace)}:applied:*")
    assert len(applied) == 3  # one per inbox file


def test_an_applied_event_dropped_again_is_removed_not_applied_twice(workspace, record_store, tmp_path):
    keep = tmp_path / "kept"
    keep.mkdir()
    payload = orjson.dumps({"event": "session-start", "session_id": "s2", "host": "chaos"})
    assert emit(workspace.root, payload).returncode == 0
    name = next(workspace.inbox.glob("*.json")).name
    shutil.copy(workspace.inbox / name, keep / name)  # as a leader that stopped before removing
    assert wait_until(lambda: "session.start" in trace_events(workspace, "s2"), 10)
    assert wait_until(lambda: not (workspace.inbox / name).exists(), 5)
    before = trace_events(workspace, "s2")
    shutil.copy(keep / name, workspace.inbox / ("." + name))
    (workspace.inbox / ("." + name)).rename(workspace.inbox / name)
    assert wait_until(lambda: not (workspace.inbox / name).exists(), 10)
    session(workspace, "s2", "session-end")  # the next event is applied, once
    assert wait_until(lambda: completed(workspace, "s2"), 10)
    after = trace_events(workspace, "s2")
    assert after[:len(before)] == before and after.count("session.start") == 1


def test_a_copy_set_back_by_a_late_rename_is_written_again(workspace, record_store):
    session(workspace, "s3", "session-start")
    assert wait_until(lambda: "session.start" in trace_events(workspace, "s3"), 10)
    stale = workspace.bindings_file.read_bytes()  # s3 bound: what a deposed leader holds
    session(workspace, "s3", "session-end")
    assert wait_until(lambda: completed(workspace, "s3"), 10)
    assert wait_until(lambda: "s3" not in workspace.bindings_file.read_text(), 5)
    workspace.bindings_file.write_bytes(stale)  # its late rename
    assert wait_until(lambda: "s3" not in workspace.bindings_file.read_text(), 15)


def test_hooks_json_a_late_copy_is_undone_and_a_persons_edit_is_taken_up(workspace, record_store):
    assert wait_until(lambda: record_store.get(doc_key(workspace, "hooks.json"))
                      == workspace.hooks_file.read_bytes(), 10)
    first = workspace.hooks_file.read_bytes()
    doc = read_json(workspace.hooks_file)
    doc["hooks"]["post-task"]["delaySeconds"] = 77  # a person's edit
    workspace.hooks_file.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))

    def taken_up() -> bool:
        record = record_store.get(doc_key(workspace, "hooks.json"))
        return record is not None and orjson.loads(record)["hooks"]["post-task"]["delaySeconds"] == 77
    assert wait_until(taken_up, 10)
    workspace.hooks_file.write_bytes(first)  # a copy some leader wrote before: set back
    session(workspace, "s4", "session-start")  # (any change wakes the leader's read)
    assert wait_until(lambda: read_json(workspace.hooks_file)["hooks"]["post-task"]["delaySeconds"]
                      == 77, 10)


def test_a_redis_that_lost_its_data_takes_the_files_up_and_shortens_nothing(workspace, record_store):
    session(workspace, "s5", "session-start", "Stop")
    assert wait_until(lambda: "turn.completed" in trace_events(workspace, "s5")
                      or len(trace_events(workspace, "s5")) >= 3, 10)
    before = trace_events(workspace, "s5")
    record_store.execute_command("FLUSHALL")  # a restart without persistence, as far as data goes
    session(workspace, "s5", "session-end")
    assert wait_until(lambda: completed(workspace, "s5"), 15)
    after = trace_events(workspace, "s5")
    assert after[:len(before)] == before  # the file's lines were kept, not written over
    hid = harness_id("chaos", "s5")
    trace = (workspace.session_dir(hid) / "trace.jsonl").read_bytes()
    assert wait_until(lambda: record_store.get(doc_key(workspace, f"sessions/{hid}/trace.jsonl"))
                      == trace, 5)
    assert "s5" not in workspace.bindings_file.read_text()


def test_a_change_made_on_a_record_that_moved_on_is_refused_by_redis(tmp_path, coords):
    """A command whose store lock ran out while it stalled (its lock is not renewed) must not
    write back what it read before another wrote: Redis compares the revisions itself."""
    ws = Workspace(tmp_path)
    command, other = coords().records(ws), coords().records(ws)
    read_at = command.revision("hooks.json")
    other.expect("hooks.json", read_at)
    other.put("hooks.json", b'{"theirs": 1}\n')
    other.flush()
    command.expect("hooks.json", read_at)
    command.put("hooks.json", b'{"stale": 1}\n')
    with pytest.raises(Conflict):
        command.flush()
    assert command.read("hooks.json") == b'{"theirs": 1}\n'


def test_a_person_who_puts_an_earlier_content_back_is_heard(workspace, record_store):
    def enabled_in_redis() -> bool | None:
        record = record_store.get(doc_key(workspace, "hooks.json"))
        return None if record is None else orjson.loads(record)["hooks"]["post-task"]["enabled"]

    assert wait_until(lambda: enabled_in_redis() is True, 10)
    for wanted in (False, True):  # off, then on again: the bytes of an earlier copy's hooks
        doc = read_json(workspace.hooks_file)
        doc["hooks"]["post-task"]["enabled"] = wanted
        workspace.hooks_file.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        assert wait_until(lambda w=wanted: enabled_in_redis() is w, 10)
    assert read_json(workspace.hooks_file)["hooks"]["post-task"]["enabled"] is True


def test_a_run_taken_up_from_the_files_needs_this_users_signature(workspace, in_redis_mode):
    """Where Redis has no hooks record yet, the file's is taken up: a run record in it that
    this user's sidecar did not sign names a process no leader started, and is dropped."""
    doc = read_json(workspace.hooks_file)
    doc["pending"] = [{"id": "planted", "hookId": "post-task", "host": "chaos",
                       "sessionId": "s9", "claimedBy": "gone.1.abc",
                       "claimedAt": "2026-12-01T00:00:00.000Z", "log": "x.log",
                       "run": {"pid": 1, "start": 1, "log": "x.log",
                               "startedAt": "2026-12-01T00:00:00.000Z", "mac": "00" * 32}}]
    workspace.hooks_file.write_bytes(orjson.dumps(doc))
    entry = HookStore(workspace).snapshot(time.time()).pending[0]
    assert entry.id == "planted" and entry.run is None
    assert entry.claimed_by == "gone.1.abc"  # settled by its start token and lease, not a pid


@pytest.fixture
def in_redis_mode(redis_server):
    """This process's commands coordinate through the test's Redis."""
    current.use(RedisCoordination(redis_server.url))
    yield
    current.reset()


def test_a_broken_hooks_json_locks_no_change_out(workspace, redis_server, in_redis_mode):
    HookStore(workspace).snapshot(time.time())  # taken up into Redis
    broken = b'{"hooks": {'
    workspace.hooks_file.write_bytes(broken)  # a person's save that does not parse
    for delay in (30, 40):  # each a store of its own, as each command and each new lead is
        store = HookStore(workspace)

        def set_delay(doc, seconds=delay):
            doc.hooks["post-task"].delay_seconds = seconds
        store.change(time.time(), set_delay)
        record = redis_server.client(decode_responses=False).get(doc_key(workspace, "hooks.json"))
        assert orjson.loads(record)["hooks"]["post-task"]["delaySeconds"] == delay
    assert workspace.hooks_file.read_bytes() == broken  # left as the person left it


def test_an_edit_saved_from_an_older_copy_is_taken_up_not_thrown_away(
        workspace, redis_server, in_redis_mode):
    store = HookStore(workspace)
    store.snapshot(time.time())
    opened = read_json(workspace.hooks_file)  # a person opens the copy
    store.change(time.time(), lambda doc: setattr(doc.hooks["post-task"], "delay_seconds", 12))
    opened["hooks"]["post-task"]["enabled"] = False  # and saves their edit of the older copy
    workspace.hooks_file.write_bytes(orjson.dumps(opened, option=orjson.OPT_INDENT_2))
    view = HookStore(workspace).snapshot(time.time())
    assert view.hooks["post-task"].enabled is False
    record = redis_server.client(decode_responses=False).get(doc_key(workspace, "hooks.json"))
    assert orjson.loads(record)["hooks"]["post-task"]["enabled"] is False
