"""Follow-ups end to end in process: the loop guard, claims, verdicts, retries, recovery."""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest
from freezegun import freeze_time
from test_hooks_daemon import recorder

from helpers import read_json, trust_hooks, wait_until
from sidecar.base.timeutil import iso, now
from sidecar.config import Config
from sidecar.followups.fire import FollowUps
from sidecar.followups.model import new_hook
from sidecar.followups.queue import MAX_POSTPONES, FollowUpQueue
from sidecar.followups.store import HookStore
from sidecar.inbox.events import parse
from sidecar.layout import Workspace
from sidecar.sessions.batch import open_batch
from sidecar.sessions.store import SessionStore

T0 = 1_795_900_000.0
SID = "5b428364-70de-498a-b886-4c3dc8ffa7fe"  # of Claude Code's shape, for resumes
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
        trust_hooks(self.ws)  # sidecar's own defaults, as `sidecar init` trusts them
        self.queue = FollowUpQueue(self.hooks, instance)
        self.alive = alive
        self.fired = root / "fired.txt"
        self.config = Config(**config)
        self.followups = FollowUps(self.ws, self.queue, self.sessions, lambda: self.config, alive)

    def use_command_hook(self, **fields) -> Harness:
        """Replace the default hook with one that records each firing in fired.txt."""
        self._use_rec(recorder(self.fired), fields)
        return self

    def use_resume_hook(self, **fields):
        """Make `rec` a resume, whose resume command records each firing in fired.txt."""
        resume = {"claude-code": tuple(recorder(self.fired))}
        self.config = Config(**{**self.config.__dict__, "resume": resume})
        self._use_rec("resume", fields)

    def _use_rec(self, action, fields):
        hook = new_hook("rec", "rec", T0, action=action, **{"promptFile": None, "delaySeconds": 10,
                                                            **fields})
        self.hooks.change(T0, lambda d: setattr(d, "hooks", {"rec": hook}))
        trust_hooks(self.ws)  # as `sidecar hooks add` trusts what the user writes

    def set_action(self, argv, hook_id="rec"):
        """Change a hook's command, as `sidecar hooks update ID -- ARGV` does (trusting it)."""
        self.hooks.change(T0, lambda d: setattr(d.hooks[hook_id], "action", argv))
        trust_hooks(self.ws)

    def apply(self, *events, crash_after_queue=False, at=T0):
        """One batch as ingestion runs it, at `at`: plan, queue the follow-ups, commit."""
        with open_batch(self.sessions) as batch:
            queued = self.queue.add(batch.plan(list(events)), at)
            if crash_after_queue:
                raise OSError("power cut")
            return batch.commit(queued, at)

    def pending(self):
        return self.hooks.snapshot(now()).pending

    def hook(self, hook_id="rec"):
        return self.hooks.snapshot(now()).hooks[hook_id]

    def fire_due(self, key=None):
        """Claim and fire on this thread, so freezegun's clock holds for the whole firing."""
        key = key or self.pending()[0].id
        claimed = self.queue.claim(key, now())
        assert claimed is not None
        self.followups.fire_now(claimed, now())

    def firings(self):
        return self.fired.read_text().split() if self.fired.exists() else []


def wait_out(followups, now):
    """Until every running action ended and its outcome is recorded (the clock held at now)."""
    deadline = time.monotonic() + 20
    while followups.running and time.monotonic() < deadline:
        time.sleep(0.02)
        followups.check_running(now)


@pytest.fixture
def h(tmp_path) -> Harness:
    return Harness(tmp_path).use_command_hook()


def test_a_session_end_queues_each_enabled_hook_once(h):
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 5))
    [entry] = h.pending()
    assert entry.hook_id == "rec" and entry.session_id == "s1"
    assert entry.due_at == iso(T0 + 15)  # ten seconds after the session ended
    record = read_json(h.ws.session_dir(entry.harness_session_id) / "session.json")
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


@pytest.mark.parametrize("crash", [False, True])
def test_a_replayed_batch_does_not_queue_twice_even_after_a_crash_before_its_session_write(h, crash):
    batch = [ev("SessionStart"), ev("SessionEnd", ts=T0 + 1)]
    with pytest.raises(OSError) if crash else contextlib.nullcontext():
        h.apply(*batch, crash_after_queue=crash)  # crashed between queue and session write
    h.apply(*batch)  # the replay (after a restart)
    assert len(h.pending()) == 1


def test_disabled_hooks_and_other_events_do_not_queue(h):
    h.hooks.change(T0, lambda d: setattr(d.hooks["rec"], "enabled", False))
    h.hooks.change(T0, lambda d: d.hooks.update(
        turn=new_hook("turn", "turn", T0, event="turn-end", promptFile=None, action=["true"])))
    h.apply(ev("SessionStart"), ev("Stop", ts=T0 + 1), ev("Stop", ts=T0 + 2), ev("SessionEnd", ts=T0 + 3))
    assert [e.hook_id for e in h.pending()] == ["turn"]


def test_sweeps_do_not_queue_follow_ups(h):
    h.apply(ev("SessionStart", ts=T0))
    result = h.sessions.sweep(T0 + 2 * 86400, 86400)
    assert result.changes and h.queue.add(result.changes, T0) == {}
    assert h.pending() == []


def test_a_resume_of_a_session_live_again_is_postponed_then_skipped(h):
    h.use_resume_hook()
    h.apply(ev("SessionStart", session=SID), ev("SessionEnd", session=SID, ts=T0 + 1))
    h.apply(ev("SessionStart", session=SID, ts=T0 + 5, source="resume"))  # the user came back
    t = T0 + 20
    for attempt in range(1, MAX_POSTPONES + 1):
        with freeze_time(iso(t)):
            h.fire_due()
            [entry] = h.pending()
            assert entry.retries == attempt and entry.claimed_by is None
            assert entry.due_at == iso(t + 60)
            assert h.hook().last_status == f"postponed: session is live again ({attempt}/10)"
        t += 60
    with freeze_time(iso(t)):
        h.fire_due()
    assert h.pending() == [] and h.firings() == []
    assert h.hook().last_status.startswith("skipped: session is live again after 10")


def test_a_transcript_still_changing_postpones_a_resume_and_a_missing_one_does_not(h, tmp_path):
    h.use_resume_hook()
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("{}\n")
    h.apply(ev("SessionStart", session=SID, transcript_path=str(transcript)),
            ev("SessionEnd", session=SID, ts=T0 + 1))
    h.fire_due()  # real time: the transcript was written just now
    assert h.hook().last_status == "postponed: transcript still changing (1/10)"
    transcript.unlink()
    h.hooks.change(now(), lambda d: setattr(d.pending[0], "due_at", None))
    h.fire_due()
    assert h.firings() == [SID] and h.hook().last_status == "ok"


@pytest.mark.parametrize("extra,hook_fields,fired,status", [
    ({"cron": True}, {}, [], "skipped: cron session"),
    ({"subagent": True}, {}, [], "skipped: subagent session"),
    ({"cron": True}, {"skipCron": False}, ["s1"], "ok"),  # a hook that does not skip cron fires
])
def test_cron_and_subagent_sessions_are_skipped_unless_the_hook_says(tmp_path, extra, hook_fields,
                                                                     fired, status):
    h = Harness(tmp_path).use_command_hook(**hook_fields)
    h.apply(ev("SessionStart", **extra), ev("SessionEnd", ts=T0 + 1))
    with freeze_time(iso(T0 + 20)):
        h.fire_due()
    assert h.firings() == fired and h.hook().last_status == status


def test_a_transcript_over_max_context_is_skipped(tmp_path):
    h = Harness(tmp_path).use_command_hook(maxContextK=1)
    transcript = tmp_path / "big.jsonl"
    transcript.write_bytes(b"x" * 8000)  # 2,000 tokens at 4 bytes each
    old = time.time() - 60
    os.utime(transcript, (old, old))
    h.apply(ev("SessionStart", transcript_path=str(transcript)), ev("SessionEnd", ts=T0 + 1))
    h.fire_due()
    assert h.firings() == [] and h.hook().last_status.startswith("skipped: context of about 2K")


def test_a_claim_of_a_dead_instance_is_recorded_interrupted_never_retried(h):
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    h.hooks.change(T0, lambda d: setattr(d.pending[0], "claimed_by", "dead-one"))
    assert h.queue.recover(h.alive, T0) == []  # nothing to adopt: its action never started
    assert h.pending() == [] and h.firings() == []
    assert h.hook().last_status == "error: interrupted"


def test_a_claim_of_a_live_instance_is_left_alone(tmp_path):
    h = Harness(tmp_path, alive=lambda other: True).use_command_hook()
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    h.hooks.change(T0, lambda d: setattr(d.pending[0], "claimed_by", "frozen-one"))
    assert h.queue.recover(h.alive, T0) == [] and len(h.pending()) == 1


def test_two_schedulers_never_fire_the_same_entry(h, tmp_path):
    other_queue = FollowUpQueue(HookStore(h.ws, durable=False), "other")
    other = FollowUps(h.ws, other_queue, h.sessions, lambda: h.config, lambda x: True)
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    key = h.pending()[0].id
    barrier = threading.Barrier(2)

    claims = []

    def race(followups):
        barrier.wait()
        claimed = followups.queue.claim(key, T0 + 20)
        if claimed is not None:
            claims.append(followups.queue.instance_id)
            followups.fire_now(claimed, T0 + 20)

    threads = [threading.Thread(target=race, args=(f,)) for f in (h.followups, other)]
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
    assert "no resume command for host 'nobody-knows'" in h.hook("post-task").last_status


def test_a_step_fires_what_is_due_and_sleeps_until_the_next_entry(h):
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    due = T0 + 11
    assert h.followups.step(T0 + 5) == due  # not due yet: wake exactly when it is
    assert h.firings() == []
    h.followups.step(due)
    wait_out(h.followups, due)
    assert h.firings() == ["s1"] and h.pending() == []
    assert h.followups.step(due + 1) is None  # nothing left to wait for: no timer at all


def test_a_step_never_runs_more_actions_than_the_concurrency_allows(tmp_path):
    h = Harness(tmp_path, concurrency=1).use_command_hook()
    h.set_action([sys.executable, "-c", "import time; time.sleep(0.5)"])
    h.apply(*(ev(kind, session=s, ts=T0) for s in ("a", "b") for kind in ("SessionStart", "SessionEnd")))
    h.followups.step(T0 + 20)
    assert len(h.followups.running) == 1
    assert sum(1 for e in h.pending() if e.claimed_by) == 1
    wait_out(h.followups, T0 + 20)
    h.followups.step(T0 + 21)
    assert len(h.followups.running) == 1
    wait_out(h.followups, T0 + 21)
    assert h.pending() == []


def sleeper(seconds: float, code: int = 0) -> list[str]:
    return [sys.executable, "-c", f"import time, sys; time.sleep({seconds}); sys.exit({code})"]


def test_an_action_runs_detached_and_its_start_is_recorded_before_anything_waits(h):
    h.set_action(sleeper(0.3))
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    h.followups.step(T0 + 20)
    [entry] = h.pending()
    assert entry.claimed_by == "me" and entry.run is not None
    assert os.getsid(entry.run.pid) == entry.run.pid  # a session of its own: it outlives us
    assert h.followups.step(T0 + 21) is not None and len(h.followups.running) == 1
    wait_out(h.followups, T0 + 22)
    assert h.pending() == [] and h.hook().last_status == "ok"


@pytest.mark.parametrize("code,status", [(0, "ok"), (3, "error: exit status 3")])
def test_a_new_leader_adopts_a_running_action_and_records_its_real_outcome_once(
        tmp_path, code, status):
    old = Harness(tmp_path, instance="old").use_command_hook()
    old.set_action(sleeper(0.5, code))
    old.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    old.followups.step(T0 + 20)  # started; then the old instance stops, waiting for nothing
    assert len(old.followups.running) == 1
    new = FollowUps(old.ws, FollowUpQueue(HookStore(old.ws, durable=False), "new"), old.sessions,
                    lambda: old.config, lambda other: True)  # the old one may still be alive
    new.step(T0 + 21)
    [entry] = old.pending()
    assert entry.claimed_by == "new" and list(new.running) == [entry.id]
    wait_out(new, T0 + 22)
    old.followups.check_running(T0 + 22)  # the old instance no longer holds the claim
    hook = old.hook()
    assert [h.status for h in hook.history] == [status]
    assert old.pending() == []


def test_the_leader_that_holds_a_firing_enforces_its_timeout(tmp_path):
    h = Harness(tmp_path, action_timeout=0.2).use_command_hook()
    h.set_action(sleeper(30))
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    h.followups.step(T0 + 20)
    [entry] = h.pending()
    h.followups.check_running(T0 + 20.5)  # past its limit: SIGTERM to the whole group
    wait_out(h.followups, T0 + 21)
    assert h.hook().last_status == "error: timed out after 0.2s"
    with pytest.raises(ProcessLookupError):
        os.kill(entry.run.pid, 0)


def test_a_claim_whose_instance_died_before_recording_the_start_is_settled_exactly(h, tmp_path):
    """Either the runner started (adopted, real outcome) or it never will (interrupted)."""
    from sidecar import safedir
    from sidecar.followups.run import actions, runner

    h.apply(ev("SessionStart", session="never"), ev("SessionEnd", session="never", ts=T0 + 1),
            ev("SessionStart", session="began"), ev("SessionEnd", session="began", ts=T0 + 1))
    logs = {e.session_id: h.followups.log_path(e, T0) for e in h.pending()}
    for entry in h.pending():
        h.queue.claim(entry.id, T0, str(logs[entry.session_id]))
        h.hooks.change(T0, lambda d, key=entry.id: setattr(d.entry(key), "claimed_by", "dead-one"))
    # "began": its runner started (a real one, as the dead instance would have started it).
    proc = actions.start([sys.executable, "-c", "import time; time.sleep(3)"], tmp_path,
                         dict(os.environ), logs["began"])
    wait_until(logs["began"].with_name(logs["began"].name + ".started").exists, 10)
    adopted = h.followups.recover(T0 + 5)
    assert [e.session_id for e in adopted] == ["began"] and adopted[0].run.pid == proc.pid
    assert adopted[0].run.mac  # the adopting instance vouches for it from now on
    assert h.hook().history[-1].status == "error: interrupted"
    assert h.hook().history[-1].session_id == "never"
    # A runner for "never" that starts late finds the firing given up, and runs nothing.
    with safedir.opened(logs["never"].parent) as folder:
        assert not runner.claim_start(folder, logs["never"].name + ".started", '{"pid": 1}')


def test_an_action_that_cannot_start_is_an_error_status_with_the_reason(h):
    h.set_action(["no-such-binary-5b1e"])
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    with freeze_time(iso(T0 + 20)):
        h.fire_due()
    assert h.hook().last_status == "error: cannot start 'no-such-binary-5b1e': No such file or directory"
    assert h.pending() == []


def test_an_action_that_ended_with_no_leader_to_record_it_is_never_shown_running(h):
    """The daemon died while its follow-up ran; the follow-up has ended since. Every view says
    how it ended (the runner's own record), none says it runs; the next leader records it."""
    from collections import Counter

    from sidecar.views import line, session, sessions, status, status_text

    h.set_action(sleeper(0.2, 3))
    h.apply(ev("SessionStart"), ev("SessionEnd", ts=T0 + 1))
    h.followups.step(T0 + 20)  # started; its instance records nothing more (it died)
    [entry] = h.pending()
    root, ended = str(h.ws.root), "error: exit status 3"
    deadline = time.monotonic() + 20
    while not Path(entry.run.log + ".status").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    text = status_text.render_text(status.build([root], T0 + 21), now=T0 + 21)
    assert f"ended ({ended}), to be recorded by the instance that leads" in text
    assert "running pid" not in text
    [row], _ = sessions.read_rows(h.ws)
    assert row.follow_ups[0].state == ended
    assert session.session_report(h.ws, "s1")["followUps"][0]["state"] == ended
    counts: Counter[str] = Counter()
    line.count_workspace(root, counts)
    assert counts["running"] == 0 and counts["queued"] == 0
    wait_out(h.followups, T0 + 22)  # an instance that leads looks: it records the outcome
    assert h.pending() == [] and h.hook().last_status == ended
