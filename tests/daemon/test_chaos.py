"""Several instances, SIGKILL, SIGSTOP and a flooded watcher: nothing lost, nothing doubled."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest
from test_hooks_daemon import command_hook

from helpers import read_json, use_hooks, wait_until
from sidecar.base.ids import harness_id
from support.cluster import inbox_events, trace_of

pytestmark = pytest.mark.slow

EMITTER = str(Path(__file__).with_name("chaos_emitter.py"))


def recording_hook(out: Path, delay: int = 1) -> dict:
    script = f'echo "start $SIDECAR_SESSION_ID" >> {out}; sleep 0.05; echo "end $SIDECAR_SESSION_ID" >> {out}'
    return command_hook("rec", ["sh", "-c", script], delay)


def test_three_instances_under_sigkill_lose_and_double_nothing(workspace, start_daemon, config_home, tmp_path):
    with open(config_home / "config.toml", "a") as config:
        config.write("concurrency = 4\n")
    fired = tmp_path / "fired.txt"
    use_hooks(workspace, {"rec": recording_hook(fired)})
    daemons = [start_daemon(workspace.root, wait_leader=(i == 0)) for i in range(3)]
    sessions = [f"chaos-{i:03d}" for i in range(200)]
    emitters = [subprocess.Popen([sys.executable, EMITTER, str(workspace.root),
                                  str(tmp_path / f"names-{e}.txt"), str(e), *sessions[e::8]])
                for e in range(8)]
    rng = random.Random(7)
    kills = 0
    deadline = time.monotonic() + 240

    def settled() -> bool:
        if any(p.poll() is None for p in emitters) or inbox_events(workspace):
            return False
        doc = read_json(workspace.hooks_file)
        return not doc["pending"] and len(doc["hooks"]["rec"]["history"]) >= len(sessions)

    try:
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(0.2, 0.4))
            if settled():
                break
            if kills < 60:
                i = rng.randrange(len(daemons))
                daemons[i].kill()
                kills += 1
                daemons[i] = start_daemon(workspace.root, wait_leader=False)
        else:
            raise AssertionError("the workspace did not settle")
        # Let everything still running (a surviving leader's last actions) finish.
        wait_until(settled, 60)
    finally:
        for p in emitters:
            p.kill() if p.poll() is None else None

    dropped = {name for e in range(8) for name in (tmp_path / f"names-{e}.txt").read_text().split()}
    assert len(dropped) == 4000

    # Every event leaves trace lines naming its inbox file, with ids derived from it: a lost
    # event has none, an event applied twice repeats an id.
    doubled = 0
    applied = set()
    for session in sessions:
        record = read_json(workspace.session_dir(harness_id("chaos", session)) / "session.json")
        assert record["status"] == "completed", session
        lines = trace_of(workspace, session)
        assert record["traceCount"] == len(lines)
        ids = Counter(line["id"] for line in lines)
        doubled += sum(n - 1 for n in ids.values())
        applied |= {line["data"]["inboxFile"] for line in lines}
        assert [line["event"] for line in lines].count("session.completed") == 1
    lost = sum(1 for name in dropped if name not in applied)
    assert read_json(workspace.bindings_file)["bindings"] == {}

    history = read_json(workspace.hooks_file)["hooks"]["rec"]["history"]
    outcome = {h["sessionId"]: h["status"] for h in history}
    assert sorted(outcome) == sessions  # every session's firing resolved, once
    assert len(history) == len(sessions)
    starts = Counter(line.split()[1] for line in fired.read_text().splitlines() if line.startswith("start"))
    assert all(n <= 1 for n in starts.values()), "a hook fired twice for one session"
    for session, status in outcome.items():
        assert status in ("ok", "error: interrupted"), (session, status)
        if status == "ok":
            assert starts[session] == 1
    interrupted = [s for s, status in outcome.items() if status != "ok"]
    # Only a firing whose instance died between its claim and its recorded start is
    # ambiguous; an action that started has its real outcome, whoever adopted it.
    interrupted_but_ran = sum(1 for s in interrupted if starts[s])
    report = {"events": len(dropped), "kills": kills, "lost": lost, "doubled": doubled,
              "firings_ok": len(outcome) - len(interrupted), "interrupted": len(interrupted),
              "interrupted_but_ran": interrupted_but_ran}
    (tmp_path / "chaos-report.json").write_bytes(orjson.dumps(report))
    print("chaos:", report)
    assert lost == 0 and doubled == 0
    assert interrupted_but_ran == 0  # every action that ran has its real outcome


def test_a_frozen_leader_keeps_its_claims_and_carries_on(workspace, start_daemon, tmp_path):
    fired = tmp_path / "fired.txt"
    use_hooks(workspace, {"rec": recording_hook(fired, delay=2)})
    leader = start_daemon(workspace.root)
    standby = start_daemon(workspace.root, wait_leader=False)
    for i in range(5):
        subprocess.run([sys.executable, EMITTER, str(workspace.root), str(tmp_path / "n.txt"),
                        str(i), f"frozen-{i}"], check=True)
    wait_until(lambda: not inbox_events(workspace))
    os.kill(leader.pid, signal.SIGSTOP)
    try:
        subprocess.run([sys.executable, EMITTER, str(workspace.root), str(tmp_path / "m.txt"),
                        "9", "while-frozen"], check=True)
        time.sleep(1)  # five stand-by retries (in process: test_ingest's stand-by test)
        # Nobody else applies or fires while the leader is frozen: its locks still hold.
        assert len(inbox_events(workspace)) == 20
        assert standby.proc.poll() is None
    finally:
        os.kill(leader.pid, signal.SIGCONT)
    wait_until(lambda: not inbox_events(workspace), 15)
    wait_until(lambda: len(read_json(workspace.hooks_file)["hooks"]["rec"]["history"]) == 6, 30)
    starts = Counter(line.split()[1] for line in fired.read_text().splitlines() if line.startswith("start"))
    assert sorted(starts) == sorted([f"frozen-{i}" for i in range(5)] + ["while-frozen"])
    assert set(starts.values()) == {1}
    assert read_json(workspace.session_dir(harness_id("chaos", "while-frozen")) / "session.json")["status"] == "completed"


def test_a_flooded_watcher_still_applies_everything(workspace, start_daemon, config_home):
    """20,000 files arrive while the daemon is frozen: the kernel's event queue overflows."""
    use_hooks(workspace, {})
    # The default reconcile (a listing every 10 minutes where inotify reports overflows): it is
    # the overflow notice, not a timer, that makes the daemon list the inbox again.
    (config_home / "config.toml").write_text("heartbeatInterval = 0.5\n")
    daemon = start_daemon(workspace.root)
    limit = Path("/proc/sys/fs/inotify/max_queued_events")
    os.kill(daemon.pid, signal.SIGSTOP)
    try:
        count = 20_000
        for i in range(count):
            data = b'{"event":"tool-use","session_id":"flood-%d","host":"chaos","tool_name":"x"}' % (i % 50)
            temp = workspace.inbox / f".f{i}.tmp"
            temp.write_bytes(data)
            os.rename(temp, workspace.inbox / f"{i:08d}.json")
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
    if limit.exists():
        assert int(limit.read_text()) < 2 * count  # the queue really overflowed
    wait_until(lambda: not inbox_events(workspace), 120, 0.2)
    total = sum(read_json(workspace.session_dir(harness_id("chaos", f"flood-{s}")) / "session.json")
                ["traceCount"] - 1 for s in range(50))
    assert total == count
