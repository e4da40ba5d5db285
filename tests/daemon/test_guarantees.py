"""The contract's guarantees with real processes: atomic saves, cut-overs, signals, hostile input."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hooks_daemon import command_hook

from helpers import emit, read_json, use_hooks, wait_for_json, wait_until
from sidecar.base.ids import harness_id
from sidecar.inbox import events

HERE = Path(__file__).parent


@pytest.mark.parametrize("crash_after", range(1, 12))
def test_a_crash_at_any_step_of_a_save_leaves_the_old_or_the_new_file(tmp_path, crash_after):
    path = tmp_path / "state.json"
    old = orjson.dumps({"version": "old", "pad": "x" * 5000})
    new = orjson.dumps({"version": "new", "pad": "y" * 9000})
    path.write_bytes(old)
    result = subprocess.run([sys.executable, str(HERE / "crash_writer.py"), str(path),
                             str(crash_after), new.decode()])
    assert result.returncode in (0, 9)
    assert path.read_bytes() in (old, new)
    if result.returncode == 0:
        assert path.read_bytes() == new


@pytest.mark.slow
def test_blue_green_cutover_loses_and_doubles_nothing(workspace, start_daemon, tmp_path):
    use_hooks(workspace, {})
    blue = start_daemon(workspace.root)
    names = tmp_path / "names.txt"
    sessions = [f"bg-{i}" for i in range(40)]
    producer = subprocess.Popen([sys.executable, str(HERE / "chaos_emitter.py"),
                                 str(workspace.root), str(names), "1", *sessions])
    time.sleep(0.5)
    green = start_daemon(workspace.root, wait_leader=False)
    time.sleep(0.3)
    blue.proc.send_signal(signal.SIGTERM)
    assert blue.proc.wait(15) == 0
    assert producer.wait(60) == 0
    wait_until(lambda: not list(workspace.inbox.glob("*.json")), 20)
    dropped = set(names.read_text().split())
    applied = set()
    for s in sessions:
        path = workspace.session_dir(harness_id("chaos", s)) / "trace.jsonl"
        lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
        ids = [line["id"] for line in lines]
        assert len(ids) == len(set(ids)), "an event was applied twice"
        applied |= {line["data"]["inboxFile"] for line in lines}
        record = read_json(path.with_name("session.json"))
        assert record["status"] == "completed"
    assert dropped == applied
    assert green.proc.poll() is None


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL])
def test_a_cutover_with_a_follow_up_in_flight_neither_waits_for_nor_repeats_it(
        workspace, start_daemon, tmp_path, stop):
    runs = tmp_path / "runs"
    script = f"import time; open({str(runs)!r}, 'a').write('start\\n'); time.sleep(8); " \
             f"open({str(runs)!r}, 'a').write('end\\n')"
    use_hooks(workspace, {"long": command_hook("long", [sys.executable, "-c", script], delay=0)})
    old = start_daemon(workspace.root)
    emit(workspace.root, None, "session-end", "--session-id", "s-cut", "--source", "x")
    wait_until(lambda: runs.exists(), 15)
    new = start_daemon(workspace.root, wait_leader=False)
    stopped = time.monotonic()
    old.proc.send_signal(stop)
    old.proc.wait(10)
    took = time.monotonic() - stopped
    if stop == signal.SIGTERM:
        assert old.proc.returncode == 0 and took < 1, f"the old instance took {took:.2f} s"
    wait_until(lambda: read_json(workspace.hooks_file)["hooks"]["long"]["history"], 30, 0.1)
    hook = read_json(workspace.hooks_file)["hooks"]["long"]
    assert [h["status"] for h in hook["history"]] == ["ok"]  # its real outcome, once
    assert runs.read_text().split() == ["start", "end"]  # not killed, not repeated
    assert read_json(workspace.hooks_file)["pending"] == []
    assert new.proc.poll() is None


@pytest.mark.slow
def test_sigterm_in_the_middle_of_a_big_batch_loses_nothing(workspace, start_daemon):
    for i in range(6000):
        (workspace.inbox / f"{i:08d}.json").write_bytes(
            b'{"event":"tool-use","session_id":"big-%d","host":"t","tool_name":"x"}' % (i % 30))
    daemon = start_daemon(workspace.root, wait_leader=False)
    wait_until(lambda: len(list(workspace.inbox.glob("*.json"))) < 6000, 20, 0.005)
    daemon.proc.send_signal(signal.SIGTERM)
    assert daemon.proc.wait(30) == 0
    left = len(list(workspace.inbox.glob("*.json")))
    start_daemon(workspace.root)
    wait_until(lambda: not list(workspace.inbox.glob("*.json")), 30)
    total = sum(read_json(workspace.session_dir(harness_id("t", f"big-{s}")) / "session.json")["traceCount"] - 1
                for s in range(30))
    assert total == 6000
    assert left < 6000  # the first instance really was stopped part-way


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
payloads = st.dictionaries(
    st.sampled_from(["event", "hook_event_name", "type", "session_id", "sessionId", "thread-id",
                     "host", "ts", "cwd", "transcript_path", "source", "cron", "subagent", "x"]),
    json_values | st.sampled_from(["SessionStart", "Stop", "s-1", "claude-code", "../x", ""]),
    max_size=8,
)


@settings(max_examples=400, deadline=None)
@given(payloads)
def test_any_payload_is_an_event_or_a_reasoned_rejection(payload):
    data = json.dumps(payload).encode()  # the standard encoder: it also writes huge integers
    try:
        event = events.parse(data, "f.json", 1.0)
    except events.BadEvent as exc:
        assert str(exc)
        return
    assert events.SESSION_ID.fullmatch(event.session_id)
    assert event.session_id not in (".", "..")
    assert event.ts == event.ts  # never NaN


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_are_an_event_or_a_reasoned_rejection(data):
    try:
        events.parse(data, "f.json", 1.0)
    except events.BadEvent as exc:
        assert str(exc)


def test_a_random_mixed_batch_is_fully_accounted_for(workspace, start_daemon):
    rng = random.Random(11)
    good, bad = [], []
    for i in range(300):
        roll = rng.random()
        if roll < 0.5:
            payload = {"event": rng.choice(["SessionStart", "Stop", "PostToolUse", "Custom"]),
                       "session_id": f"mix-{rng.randrange(20)}", "host": "mix"}
            data = orjson.dumps(payload)
            good.append(f"{i:05d}.json")
        else:
            data = rng.choice([b"", b"{", b"[]", b'{"event":1}', b'{"session_id":"a/b","event":"x"}',
                               bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))])
            bad.append(f"{i:05d}.json")
        path = workspace.inbox / f"{i:05d}.json"
        path.write_bytes(data)
        old = time.time() - 10
        os.utime(path, (old, old))
    daemon = start_daemon(workspace.root)
    wait_until(lambda: not list(workspace.inbox.glob("*.json")), 20)
    rejected = {p.name for p in workspace.rejected.iterdir() if not p.name.endswith(".error.json")}
    assert rejected == set(bad)
    applied = set()
    for path in workspace.sessions.glob("*/trace.jsonl"):
        applied |= {orjson.loads(line)["data"].get("inboxFile") for line in path.read_bytes().splitlines()}
    assert set(good) <= applied
    assert daemon.proc.poll() is None


def test_a_huge_sparse_file_is_rejected_without_being_read(workspace, start_daemon):
    path = workspace.inbox / "sparse.json"
    with open(path, "wb") as handle:
        handle.truncate(50 * 1024 ** 3)  # 50 GiB that cost no disk; reading it would take minutes
    start_daemon(workspace.root)
    wait_until(lambda: (workspace.rejected / "sparse.json.error.json").exists(), 10)
    assert "larger than" in read_json(workspace.rejected / "sparse.json.error.json")["reason"]


def test_no_event_field_chooses_what_runs_or_where_it_writes(workspace, start_daemon, tmp_path):
    out = tmp_path / "argv.json"
    dump = "import json,os,sys; json.dump([os.getcwd()] + sys.argv[1:], open(sys.argv[1],'w'))"
    use_hooks(workspace, {"only": command_hook(
        "only", [sys.executable, "-c", dump, str(out), "{session_id}"], delay=0)})
    start_daemon(workspace.root)
    outside = tmp_path / "outside"
    outside.mkdir()
    hostile = {"event": "session-end", "session_id": "evil", "host": "claude-code",
               "action": ["touch", str(tmp_path / "pwned")], "command": f"touch {tmp_path}/pwned2",
               "promptFile": "../../../etc/passwd", "cwd": str(outside),
               "transcript_path": "/etc/shadow", "hooks": {"x": {"action": ["touch", "pwned3"]}}}
    emit(workspace.root, orjson.dumps(hostile), "--root", str(workspace.root))
    assert wait_for_json(out, 15) == [str(workspace.root), str(out), "evil"]
    assert not list(tmp_path.rglob("pwned*")) and not list(workspace.root.rglob("pwned*"))
    assert list(outside.iterdir()) == []
    assert set(read_json(workspace.hooks_file)["hooks"]) == {"only"}
