"""The follow-up queue: the loop guard, claims, preconditions, retries, recovery."""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest
from freezegun import freeze_time

from conftest import read_json
from sidecar.config import Config
from sidecar.events import parse
from sidecar.hooks import HookStore, new_hook
from sidecar.layout import Workspace
from sidecar.scheduler import MAX_POSTPONES, Scheduler
from sidecar.sessions import SessionStore
from sidecar.timeutil import iso, now

T0 = 1_795_900_000.0
_names = itertools.count()


def ev(name, session="s1", ts=T0, host="claude-code", **extra):
    payload = {"hook_event_name": name, "session_id": session, "host": host, "ts": ts, **extra}
    return parse(orjson.dumps(payload), f"{next(_names):020d}.json", ts)


class Harness:
    def __init__(self, root: Path, instance="me", alive=lambda other: False, **config):
        self.ws = Workspace(root)
        self.ws.ensure_runtime()
        self.sessions = SessionStore(self.ws, durable=False)
        self.hooks = HookStore(self.ws, durable=False)
        self.hooks.seed(T0)
        self.fired = root / "fired.txt"
        self.config = Config(**config)
        self.sched = Scheduler(self.ws, self.hooks, self.sessions, self.config, instance, alive)

    def use_command_hook(self, **fields):
        """Replace the default hook with one that records each firing in fired.txt."""
        argv = [sys.executable, "-c",
                "import os,sys; open(sys.argv[1],'a').write(os.environ['SIDECAR_SESSION_ID']+'\\n')",
                str(self.fired)]
        hook = new_hook("rec", "rec", T0, action=argv, promptFile=None, delaySeconds=10, **fields)
        self.hooks.change(T0, lambda d: d.update(hooks={"rec": hook}))

    def apply(self, *events):
        return self.sessions.apply_batch(list(events), before_save=lambda e: self.sched.enqueue(e, T0))

    def pending(self):
        return self.hooks.snapshot(now())[1]

    def hook(self, hook_id="rec"):
        return self.hooks.snapshot(now())[0][hook_id]

    def fire_due(self, key=None):
        """Claim and fire synchronously, so freezegun's clock holds for the whole firing."""
        key = key or self.pending()[0]["id"]
        assert self.sched.slots.acquire(blocking=False)
        claimed = self.sched.claim(key, now())
        assert claimed is not None
        self.sched.fire(*claimed)

    def firings(self):
        return self.fired.read_text().split() if self.fired.exists() else []


@pytest.fixture
def h(tmp_path) -> Harness:
    harness = Harness(tmp_path)
    harness.use_command_hook()
    return harness


def test_a_session_end_queues_each_enabled_hook_once(h):
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 5))
    [entry] = h.pending()
    assert entry["hookId"] == "rec" and entry["sessionId"] == "s1"
    assert entry["dueAt"] == iso(T0 + 15)  # ten seconds after the session ended
    record = read_json(h.ws.session_dir(entry["harnessSessionId"]) / "session.json")
    assert "rec" in record["metadata"]["sidecar"]["followUps"]


def test_the_loop_guard_holds_across_a_resume_that_ends_again(h):
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    with freeze_time(iso(T0 + 20)):
        h.fire_due()
    assert h.firings() == ["s1"] and h.pending() == []
    # The resumed conversation starts and ends again under the same id.
    h.apply(ev("SessionStart", ts=T0 + 30, source="resume"), ev("SessionEnd", ts=T0 + 40))
    assert h.pending() == []


def test_a_run_started_by_a_hook_never_queues_even_under_a_new_id(h):
    h.apply(ev("SessionStart", session="new-id", sidecarHookId="rec"),
            ev("SessionEnd", session="new-id", ts=T0 + 1, sidecarHookId="rec"))
    assert h.pending() == []


def test_a_replayed_batch_does_not_queue_twice(h):
    batch = [ev("SessionStart"), ev("SessionEnd", ts=T0 + 1)]
    h.apply(*batch)
    h.apply(*batch)
    assert len(h.pending()) == 1


def test_a_crash_between_queue_and_session_write_is_absorbed(h):
    batch = [ev("SessionStart"), ev("SessionEnd", ts=T0 + 1)]

    def crash_after_enqueue(effects):
        h.sched.enqueue(effects, T0)
        raise OSError("power cut")

    with pytest.raises(OSError):
        h.sessions.apply_batch(batch, before_save=crash_after_enqueue)
    h.apply(*batch)  # the replay after restart
    assert len(h.pending()) == 1


def test_disabled_hooks_and_other_events_do_not_queue(h):
    h.hooks.change(T0, lambda d: d["hooks"]["rec"].update(enabled=False))
    h.hooks.change(T0, lambda d: d["hooks"].update(
        turn=new_hook("turn", "turn", T0, event="turn-end", promptFile=None, action=["true"])))
    h.apply(ev("SessionStart"), ev("Stop", ts=T0 + 1), ev("Stop", ts=T0 + 2), ev("SessionEnd", ts=T0 + 3))
    assert [e["hookId"] for e in h.pending()] == ["turn"]


def test_sweeps_do_not_queue_follow_ups(h):
    h.apply(ev("SessionStart", ts=T0))
    result = h.sessions.sweep(T0 + 2 * 86400, 86400)
    h.sched.enqueue(result.effects, T0)
    assert h.pending() == []


def test_a_session_live_again_is_postponed_then_skipped(h):
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    h.apply(ev("SessionStart", ts=T0 + 5, source="resume"))  # the user came back
    t = T0 + 20
    for attempt in range(1, MAX_POSTPONES + 1):
        with freeze_time(iso(t)):
            h.fire_due()
            [entry] = h.pending()
            assert entry["retries"] == attempt and entry["claimedBy"] is None
            assert entry["dueAt"] == iso(t + 60)
            assert h.hook()["lastStatus"] == f"postponed: session is live again ({attempt}/10)"
        t += 60
    with freeze_time(iso(t)):
        h.fire_due()
    assert h.pending() == [] and h.firings() == []
    assert h.hook()["lastStatus"].startswith("skipped: session is live again after 10")


def test_a_transcript_still_changing_postpones_and_a_missing_one_does_not(h, tmp_path):
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("{}\n")
    h.apply(ev("SessionStart", transcript_path=str(transcript)), ev("SessionEnd", ts=T0 + 1))
    h.fire_due()  # real time: the transcript was written just now
    assert h.hook()["lastStatus"] == "postponed: transcript still changing (1/10)"
    transcript.unlink()
    h.hooks.change(now(), lambda d: d["pending"][0].update(dueAt=None))
    h.fire_due()
    assert h.firings() == ["s1"] and h.hook()["lastStatus"] == "ok"


@pytest.mark.parametrize("extra,hook_fields,reason", [
    ({"cron": True}, {}, "skipped: cron session"),
    ({"subagent": True}, {}, "skipped: subagent session"),
])
def test_cron_and_subagent_sessions_are_skipped(tmp_path, extra, hook_fields, reason):
    h = Harness(tmp_path)
    h.use_command_hook(**hook_fields)
    h.apply(ev("SessionStart", **extra), ev("SessionEnd", ts=T0 + 1))
    with freeze_time(iso(T0 + 20)):
        h.fire_due()
    assert h.firings() == [] and h.hook()["lastStatus"] == reason


def test_a_cron_session_fires_when_the_hook_does_not_skip_cron(tmp_path):
    h = Harness(tmp_path)
    h.use_command_hook(skipCron=False)
    h.apply(ev("SessionStart", cron=True), ev("SessionEnd", ts=T0 + 1))
    with freeze_time(iso(T0 + 20)):
        h.fire_due()
    assert h.firings() == ["s1"]


def test_a_transcript_over_max_context_is_skipped(tmp_path):
    h = Harness(tmp_path)
    h.use_command_hook(maxContextK=1)
    transcript = tmp_path / "big.jsonl"
    transcript.write_bytes(b"x" * 8000)  # 2,000 tokens at 4 bytes each
    old = time.time() - 60
    os.utime(transcript, (old, old))
    h.apply(ev("SessionStart", transcript_path=str(transcript)), ev("SessionEnd", ts=T0 + 1))
    h.fire_due()
    assert h.firings() == [] and h.hook()["lastStatus"].startswith("skipped: context of about 2K")


def test_a_claim_of_a_dead_instance_is_recorded_interrupted_never_retried(h):
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    h.hooks.change(T0, lambda d: d["pending"][0].update(claimedBy="dead-one"))
    assert h.sched.recover() == 1
    assert h.pending() == [] and h.firings() == []
    assert h.hook()["lastStatus"] == "error: interrupted"


def test_a_claim_of_a_live_instance_is_left_alone(tmp_path):
    h = Harness(tmp_path, alive=lambda other: True)
    h.use_command_hook()
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    h.hooks.change(T0, lambda d: d["pending"][0].update(claimedBy="frozen-one"))
    assert h.sched.recover() == 0 and len(h.pending()) == 1


def test_two_schedulers_never_fire_the_same_entry(h, tmp_path):
    other = Scheduler(h.ws, HookStore(h.ws, durable=False), h.sessions, h.config, "other",
                      lambda x: True)
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    key = h.pending()[0]["id"]
    barrier = threading.Barrier(2)

    claims = []

    def race(sched):
        barrier.wait()
        claimed = sched.claim(key, T0 + 20)
        if claimed is not None:
            claims.append(sched.instance_id)
            sched.slots.acquire()
            sched.fire(*claimed)

    threads = [threading.Thread(target=race, args=(s,)) for s in (h.sched, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(claims) == 1
    assert h.firings() == ["s1"]


def test_a_missing_resume_command_is_an_error_status(tmp_path):
    h = Harness(tmp_path)  # the seeded post-task hook: action resume
    h.apply(ev("SessionStart", host="nobody-knows"), ev("SessionEnd", ts=T0 + 1, host="nobody-knows"))
    with freeze_time(iso(T0 + 20)):
        h.fire_due()
    assert "no resume command for host 'nobody-knows'" in h.hook("post-task")["lastStatus"]


def test_the_scheduler_survives_an_unexpected_error_and_fires_later(h):
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    h.hooks.change(now(), lambda d: d["pending"][0].update(dueAt=None))
    real_snapshot = h.hooks.snapshot
    failures = []

    def flaky_snapshot(t):
        if not failures:
            failures.append(t)
            raise RuntimeError("a surprise")
        return real_snapshot(t)

    h.hooks.snapshot = flaky_snapshot
    h.sched.start()
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and h.firings() != ["s1"]:
            time.sleep(0.05)
    finally:
        h.sched.finish_running()
    assert failures and h.firings() == ["s1"]
