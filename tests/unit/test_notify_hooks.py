"""Notify hooks in process: their form in hooks.json, the queue's once-per-transition rule
(beside the once-per-session rule of resume and command hooks, unchanged), the words of a
notice, and apprise, optional and loaded only where a notice is sent."""

from __future__ import annotations

import importlib.util
from dataclasses import replace

import orjson
import pytest

from helpers import invoke
from sidecar.followups import trust
from sidecar.followups.model import HooksError, parse
from sidecar.followups.notify import send
from sidecar.followups.notify.targets import Notify
from sidecar.followups.queue import FollowUpQueue
from sidecar.followups.store import HookStore
from sidecar.layout import Workspace
from sidecar.vocabulary import EventKind, SessionChange

T0 = 1_700_000_000.0
HAS_APPRISE = importlib.util.find_spec("apprise") is not None


def doc(*hooks: dict[str, object]) -> bytes:
    return orjson.dumps({"version": 1, "hooks": {h["id"]: h for h in hooks}, "pending": []})


def hook(hook_id: str, event: str, action: object, **more: object) -> dict[str, object]:
    return {"id": hook_id, "name": hook_id, "event": event, "action": action, **more}


@pytest.fixture
def queue(tmp_path) -> FollowUpQueue:
    ws = Workspace(tmp_path)
    ws.ensure_runtime()
    ws.hooks_file.write_bytes(doc(
        hook("phone", "needs-input", {"notify": "desktop"}),
        hook("told", "session-end", {"notify": "http://127.0.0.1:1/x"}),
        hook("cmd", "needs-input", ["true"], delaySeconds=0)))
    return FollowUpQueue(HookStore(ws, durable=False), "me")


def change(kind: EventKind, file: str, ts: float = T0, **more: object) -> SessionChange:
    return SessionChange(kind, "claude-code", "s1", "h1", ts, event_file=file, **more)  # type: ignore[arg-type]


def queued(queue: FollowUpQueue) -> list[str]:
    return sorted(e.id for e in queue.view(T0).pending)


def test_each_transition_is_one_notice_and_a_replayed_batch_adds_none(queue):
    asks = [change(EventKind.NEEDS_INPUT, "a.json", input_message="may I?"),
            change(EventKind.NEEDS_INPUT, "b.json", T0 + 1)]
    recorded = queue.add(asks, T0)
    assert recorded == {("claude-code", "s1"): ["cmd"]}  # a command: once per session, recorded
    ids = queued(queue)
    assert len([i for i in ids if i.startswith("phone:")]) == 2
    assert [i for i in ids if i.startswith("cmd:")] == ["cmd:claude-code:s1"]
    queue.add(asks, T0)  # the batch replayed before its records were saved
    assert queued(queue) == ids
    [first] = [e for e in queue.view(T0).pending if e.hook_id == "phone" and e.due_at
               == "2023-11-14T22:13:20.000Z"]
    assert first.extra["notice"] == {"event": "needs-input", "reason": "",
                                     "at": "2023-11-14T22:13:20.000Z", "message": "may I?"}
    assert first.due_at == "2023-11-14T22:13:20.000Z"  # a notify hook's delay is 0


def test_a_follow_ups_own_run_tells_nothing_unless_the_hook_asks(queue):
    own = [change(EventKind.SESSION_END, "c.json", from_hook=True)]
    queue.add(own, T0)
    assert queued(queue) == []

    def also(doc_):
        doc_.hooks["told"].also_follow_ups = True

    queue.store.change(T0, also)
    queue.add(own, T0)
    assert [i.split("@")[0] for i in queued(queue)] == ["told:claude-code:s1"]


def test_an_interrupted_end_tells_only_if_asked(queue):
    queue.add([change(EventKind.SESSION_END, "d.json", interrupted=True)], T0)
    assert queued(queue) == []
    statuses = [f.status for f in queue.view(T0).hooks["told"].history]
    assert statuses == ["skipped: the last turn was interrupted"]


def test_the_action_and_its_errors_in_hooks_json():
    loaded = parse(doc(hook("n", "turn-failed", {"notify": "ntfys://ntfy.sh/mine"})))
    assert loaded.hooks["n"].action == Notify("ntfys://ntfy.sh/mine")
    assert loaded.hooks["n"].delay_seconds == 0 and loaded.hooks["n"].prompt_file is None
    assert loaded.to_json()["hooks"]["n"]["action"] == {"notify": "ntfys://ntfy.sh/mine"}
    for bad, said in (({"notify": "ntfy://h"}, "$.hooks.n.action.notify: "),
                      ({"notify": 7}, "$.hooks.n.action.notify: must be a target string"),
                      ({"notify": "x", "also": 1}, "$.hooks.n.action: must be")):
        with pytest.raises(HooksError, match=repr(said)[1:-1].replace("$", r"\$").replace(".", r"\.")):
            parse(doc(hook("n", "session-end", bad)))
    with pytest.raises(HooksError, match=r"\$\.hooks\.n\.event: a notify hook listens"):
        parse(doc(hook("n", "tool-use", {"notify": "desktop"})))


def test_a_target_is_trusted_apart_from_any_command(tmp_path, config_home):
    from sidecar.followups.model import new_hook

    ws = Workspace(tmp_path)
    ws.ensure_runtime()
    notice = new_hook("n", "n", T0, action={"notify": "http://127.0.0.1:1/x"})
    command = new_hook("n", "n", T0, action=["notify", "http://127.0.0.1:1/x"], promptFile=None)
    assert not trust.is_trusted(ws, trust.content(ws, notice))
    trust.trust(ws, trust.content(ws, command), T0)  # a command of the same words
    assert not trust.is_trusted(ws, trust.content(ws, notice))
    trust.trust(ws, trust.content(ws, notice), T0)
    desktop = new_hook("n", "n", T0, action={"notify": "desktop"})
    assert trust.is_trusted(ws, trust.content(ws, notice))
    assert not trust.is_trusted(ws, trust.content(ws, desktop))
    assert trust.shown(Notify("ntfys://me:pw@ntfy.sh/t")) == "notify ntfys://***@ntfy.sh/***"


def test_a_notice_in_words():
    job = {"host": "claude-code", "sessionId": "0123456789abcdef", "workspace": "/w/proj",
           "tokens": {"input": 10}, "notice": {"event": "turn-failed", "reason": "rate_limit",
                                              "message": "limit reached; resets in 2h"}}
    text = send.words(job, T0)
    assert text.title == "claude-code hit a usage limit" and text.priority == 4
    assert text.body.splitlines()[0].startswith("resets at ")
    assert "proj · claude-code session 0123456789ab" in text.body and "input 10" in text.body
    ended = send.words({**job, "notice": {"event": "session-end", "reason": "host-exited"}}, T0)
    assert ended.title.startswith("claude-code finished: ") and "host" in ended.title


def test_desktop_without_a_notifier_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    said: list[str] = []
    job = {"target": "desktop", "notice": {"event": "needs-input"}}
    assert not send.deliver(job, say=said.append, sleep=lambda s: None)
    assert said[-1] == ("notice not delivered: no desktop notifier: neither notify-send nor "
                        "osascript is on PATH")
    assert len(said) == 2  # not retried: trying again changes nothing


def test_apprise_missing_says_to_install_the_extra(workspace, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "apprise" else real(name, *a))
    refused = invoke("hooks", "add", "chat", "--notify", "slack://a/b/c", "--root", str(workspace.root))
    assert refused.returncode == 1
    assert "pip install 'agent-sidecar[notify]'" in refused.stderr.decode()


@pytest.mark.skipif(not HAS_APPRISE, reason="apprise (agent-sidecar[notify]) is not installed")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # apprise's own (its imghdr shim)
def test_an_apprise_target_is_sent_by_apprise(workspace, receiver):
    ws = workspace.root
    target = f"json://{receiver.hostport}/apprise"
    added = invoke("hooks", "add", "via-apprise", "--event", "needs-input", "--notify",
                   target, "--root", str(ws))
    assert added.returncode == 0, added.stderr
    tested = invoke("hooks", "test", "via-apprise", "--root", str(ws))
    assert tested.returncode == 0, tested.stdout
    [sent] = receiver.at("/apprise")
    assert sent.json()["title"] == "sample-host is waiting for you"
    assert "sample notice" in sent.json()["message"]
    bad = invoke("hooks", "add", "nope", "--notify", "nosuchscheme://x", "--root", str(ws))
    assert bad.returncode == 1 and b"apprise does not know this URL" in bad.stderr


def test_a_changed_event_file_is_a_new_transition(queue):
    base = change(EventKind.NEEDS_INPUT, "e.json")
    queue.add([base], T0)
    queue.add([replace(base, event_file="f.json")], T0)
    assert len([i for i in queued(queue) if i.startswith("phone:")]) == 2


def test_a_failed_turn_that_is_no_limit_is_not_called_one():
    job = {"host": "claude-code", "sessionId": "0123456789abcdef", "workspace": "/w/proj",
           "notice": {"event": "turn-failed", "reason": "server_error",
                      "message": "API Error: 500 Internal server error"}}
    text = send.words(job, T0)
    assert text.title == "claude-code's turn failed: server error"
    assert text.body.splitlines()[0] == "API Error: 500 Internal server error"
    assert "reset" not in text.body


def test_a_notice_that_cannot_be_built_is_said_in_its_log_and_tried_again(monkeypatch, receiver):
    """Whatever stops one try from building or sending its request (a value no header can
    carry, a job that is not what it should be) is a try that failed, said and tried again:
    never a traceback that loses the notice."""
    built = []

    def once_unbuildable(job: dict[str, object], now: float) -> send.Text:
        built.append(now)
        if len(built) == 1:
            raise ValueError("a value it cannot take")
        return real(job, now)

    real = send.words
    monkeypatch.setattr(send, "words", once_unbuildable)
    job = {"target": f"ntfy://{receiver.hostport}/agents", "host": "claude-code",
           "sessionId": "s1", "workspace": "/w/proj",
           "notice": {"event": "needs-input", "reason": "\r\n", "message": "may I?\r\nX: 1"}}
    said: list[str] = []
    assert send.deliver(job, say=said.append, sleep=lambda s: None)
    [sent] = receiver.at("/agents")
    assert said[0].startswith("try 1/3 to ntfy://") and said[0].endswith(
        "not sent (cannot build the notice: ValueError: a value it cannot take) after 0.00s")
    assert said[1].startswith("try 2/3 to ntfy://") and "HTTP 200" in said[1]
    assert sent.body.decode().startswith("may I?\\r\nX: 1\n")  # its own line breaks kept
