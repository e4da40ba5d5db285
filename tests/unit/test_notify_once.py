"""A notice is sent once per transition, even where the transition is reported many times:
a usage limit's episode of a host that reports each failed attempt (Copilot CLI), and a batch
whose save failed after its notices were queued (and sent) and that is applied again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import invoke
from sidecar import emit
from sidecar.base.outcome import OK
from sidecar.daemon.ingest import RETRY_SECONDS
from sidecar.followups.model import Hook
from sidecar.followups.notify.targets import Notify
from sidecar.inbox import events
from sidecar.layout import Workspace
from sidecar.sessions.batch import Batch
from sidecar.vocabulary import EventKind
from support.ingest import T0, Fixture
from support.limits import LIMITED, Harness, ev, failed
from support.stores import seeded_workspace

FIXTURES = Path(__file__).parents[1] / "e2e" / "copilot" / "fixtures"
SESSION = "6dfccab1-c455-438c-953a-2c06850f3310"


def notify_hook(hook_id: str, event: EventKind) -> Hook:
    return Hook(id=hook_id, name=hook_id, event=event, delay_seconds=0, prompt_file=None,
                action=Notify("desktop"))


def copilot(name: str, ts: float, **payload: object) -> events.Event:
    data = {"sessionId": SESSION, "cwd": "/home/user/project", "timestamp": int(ts * 1000),
            **payload}
    return events.parse(emit.envelope(json.dumps(data).encode(), [
        ("ts", repr(ts)), ("host", '"copilot"'), ("event", json.dumps(name))]), f"{ts}.json", ts)


def refused(ts: float) -> events.Event:
    fixture = json.loads((FIXTURES / "errorOccurred.rate_limit.json").read_text())
    return copilot("errorOccurred", ts, **fixture | {"sessionId": SESSION})


def send_notices(h: Harness, hook_id: str, now: float) -> int:
    """Fire every queued notice of the hook (as the daemon would, at once): how many."""
    sent = 0
    for entry in [e for e in h.pending() if e.hook_id == hook_id]:
        claimed = h.queue.claim(entry.id, now)
        assert claimed is not None
        assert h.queue.finish(claimed.entry, OK, None, now)
        sent += 1
    return sent


def test_one_limit_episode_is_one_notice_however_many_attempts_fail(tmp_path):
    h = Harness(Workspace(tmp_path / "ws"))
    h.hooks.change(T0, lambda d: d.hooks.__setitem__("limit", notify_hook(
        "limit", EventKind.TURN_FAILED)))
    t = T0 + 10
    h.apply(copilot("sessionStart", t, source="new"),
            copilot("userPromptSubmitted", t + 1, prompt="go"))
    sent = 0
    for attempt in range(3):  # Copilot retries the turn: one errorOccurred per attempt
        h.apply(refused(t + 2 + attempt))
        sent += send_notices(h, "limit", t + 2 + attempt)  # each sent before the next comes
    assert sent == 1
    # A retry that got through ends the episode; the next refusal is a new one: a new notice.
    h.apply(copilot("agentStop", t + 10, stopReason="end_turn"),
            copilot("userPromptSubmitted", t + 11, prompt="more"))
    h.apply(refused(t + 12))
    h.apply(refused(t + 13))
    assert send_notices(h, "limit", t + 13) == 1


@pytest.fixture
def f(tmp_path) -> Fixture:
    fixture = Fixture(seeded_workspace(tmp_path / "ws", T0))
    fixture.queue.store.change(T0, lambda d: d.hooks.__setitem__(
        "asked", notify_hook("asked", EventKind.NEEDS_INPUT)))
    return fixture


def test_a_notice_sent_before_its_batch_was_saved_is_not_queued_again(f, monkeypatch):
    f.ingest.start(T0)
    f.drop("a", "session-start", "s1", T0)
    f.ingest.step(T0 + 0.5, woken=True)
    f.drop("b", "needs-input", "s1", T0 + 1, notification_type="permission_prompt",
           message="may I run make?")
    real_commit = Batch.commit
    failures = []

    def commit(self, *args, **kwargs):  # the disk is full once, as the batch is saved
        if not failures:
            failures.append(OSError(28, "No space left on device"))
            raise failures[0]
        return real_commit(self, *args, **kwargs)

    monkeypatch.setattr(Batch, "commit", commit)
    f.ingest.step(T0 + 1, woken=True)
    assert failures and f.ingest.health.errors == 1
    assert len(list(f.ws.inbox.glob("*.json"))) == 1  # left in the inbox, to apply again
    [entry] = [e for e in f.queue.view(T0).pending if e.hook_id == "asked"]
    claimed = f.queue.claim(entry.id, T0 + 1.2)  # its delay is 0: it is sent meanwhile
    assert claimed is not None and f.queue.finish(claimed.entry, OK, None, T0 + 1.2)
    f.ingest.step(T0 + 1 + RETRY_SECONDS)  # the batch again, saved this time
    assert list(f.ws.inbox.glob("*.json")) == []
    assert f.record("s1")["metadata"]["sidecar"]["needsInput"]["message"] == "may I run make?"
    assert [e for e in f.queue.view(T0).pending if e.hook_id == "asked"] == []  # not again
    history = f.queue.view(T0).hooks["asked"].history
    assert [r.status for r in history] == ["ok"]


def test_another_failure_within_a_limit_episode_is_a_notice_of_its_own(tmp_path):
    """The episode's key is for its limit failures only: a server error while a limit
    holds is another transition, told of; a resume that hits the limit again is not."""
    h = Harness(Workspace(tmp_path / "ws"))
    hook = notify_hook("fail", EventKind.TURN_FAILED)
    hook.reasons = ["rate_limit", "server_error"]
    h.hooks.change(T0, lambda d: d.hooks.__setitem__("fail", hook))
    t = T0 + 10
    h.apply(ev("SessionStart", t), ev("UserPromptSubmit", t + 1, prompt="go"))
    h.apply(failed(t + 2))
    assert send_notices(h, "fail", t + 2) == 1
    h.apply(ev("UserPromptSubmit", t + 3, prompt="go on"))
    h.apply(failed(t + 4, message="API Error: 500 Internal server error", error="server_error"))
    assert send_notices(h, "fail", t + 4) == 1
    h.apply(ev("UserPromptSubmit", t + 5, prompt="once more"))
    h.apply(failed(t + 6, message=LIMITED))  # the same episode's limit again: told already
    assert send_notices(h, "fail", t + 6) == 0


def test_replacing_a_notify_hook_keeps_the_notices_it_sent(tmp_path, config_home):
    """`hooks add --replace` of the same name: the transitions it was queued for stay known,
    so a resume that hits the same limit again is not told of again."""
    ws = Workspace(tmp_path / "ws")
    h = Harness(ws)
    h.hooks.change(T0, lambda d: d.hooks.__setitem__("limit", notify_hook(
        "limit", EventKind.TURN_FAILED)))
    t = T0 + 10
    h.apply(ev("SessionStart", t), ev("UserPromptSubmit", t + 1, prompt="go"))
    h.apply(failed(t + 2))
    assert send_notices(h, "limit", t + 2) == 1
    replaced = invoke("hooks", "add", "limit", "--replace", "--event", "turn-failed",
                      "--notify", "desktop", "--root", str(ws.root))
    assert replaced.returncode == 0, replaced.stderr
    h.apply(ev("UserPromptSubmit", t + 3, prompt="go on"))
    h.apply(failed(t + 4, message=LIMITED))
    assert send_notices(h, "limit", t + 4) == 0


def test_a_notice_of_a_failure_its_reasons_name_needs_no_usage_limit(tmp_path):
    """A resume-after-limit acts on a limit, so it waits for one; a notice of `server_error`
    tells of that failure whenever it comes, with no limit episode open."""
    h = Harness(Workspace(tmp_path / "ws"))
    hook = notify_hook("broke", EventKind.TURN_FAILED)
    hook.reasons = ["server_error"]
    h.hooks.change(T0, lambda d: d.hooks.__setitem__("broke", hook))
    h.apply(ev("SessionStart", T0 + 1), ev("UserPromptSubmit", T0 + 2))
    h.apply(failed(T0 + 3, message="internal error", error="server_error"))
    assert send_notices(h, "broke", T0 + 3) == 1
    h.apply(failed(T0 + 4, error="rate_limit"))  # not a reason it names
    assert send_notices(h, "broke", T0 + 4) == 0
