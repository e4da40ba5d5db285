"""Notify hooks with a real daemon and a real loopback HTTP receiver (tests/support/receiver.py):
what arrives, how often, how soon, and what a failing or hanging target stops (nothing)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from helpers import clone_of, emit, fixture_payload, needs_git, read_json, run_cli, wait_until
from sidecar.followups import trust
from sidecar.layout import Workspace

FAST = {"SIDECAR_NOTIFY_TIMEOUT": "1"}  # a hanging target gives up after 1 s a try


@pytest.fixture
def ws(workspace: Workspace) -> Workspace:
    """The workspace `sidecar init` made, by the short name these tests use."""
    return workspace


def add(ws: Workspace, name: str, event: str, target: str, *extra: str) -> None:
    added = run_cli("hooks", "add", name, "--event", event, "--notify", target,
                    "--root", str(ws.root), *extra)
    assert added.returncode == 0, added.stderr


def drop(ws: Workspace, event: dict[str, object], name: str | None = None) -> str:
    """Write one event file into the inbox, as `sidecar emit` does (a fixed name: to replay)."""
    name = name or f"{time.time_ns():020d}-{os.getpid()}-test"
    temp = ws.inbox / f".{name}.tmp"
    temp.write_bytes(orjson.dumps(event))
    temp.rename(ws.inbox / f"{name}.json")
    return name


def ask(session: str, message: str) -> dict[str, object]:
    return {"event": "needs-input", "session_id": session, "host": "claude-code",
            "notification_type": "permission_prompt", "message": message}


def history(ws: Workspace, hook: str) -> list[dict[str, object]]:
    return read_json(ws.hooks_file)["hooks"][hook]["history"]


def test_one_notice_per_transition_soon_after_the_event(ws, start_daemon, receiver):
    add(ws, "phone", "needs-input", f"ntfy://{receiver.hostport}/agents")
    add(ws, "hook", "session-end", f"{receiver.url}/hook")
    start_daemon(ws.root)
    emit(ws.root, None, "session-start", "--session-id", "s1", "--source", "claude-code")

    dropped = time.monotonic()
    drop(ws, ask("s1", "Claude needs your permission to use Bash"))
    [first] = wait_until(lambda: receiver.at("/agents"), 10)
    delay_ask = first.at - dropped
    assert first.headers["Title"] == "claude-code is waiting for you"
    assert first.headers["Priority"] == "4"
    assert "raising_hand" in first.headers["Tags"].split(",")
    assert first.body.decode().startswith("Claude needs your permission to use Bash\n")

    drop(ws, ask("s1", "Claude needs your permission to use Edit"))  # a second ask: a second notice
    wait_until(lambda: len(receiver.at("/agents")) == 2, 10)
    assert b"use Edit" in receiver.at("/agents")[1].body

    dropped = time.monotonic()
    emit(ws.root, None, "session-end", "--session-id", "s1", "--source", "claude-code")
    [end] = wait_until(lambda: receiver.at("/hook"), 10)
    delay_end = end.at - dropped
    body = end.json()
    assert body["event"] == "session-end" and body["host"] == "claude-code"
    assert body["sessionId"] == "s1" and body["workspace"] == str(ws.root)
    assert body["hookId"] == "hook" and body["reason"] == "session-end"
    assert body["reasonInWords"] and body["title"].startswith("claude-code finished")
    assert end.headers["Content-Type"] == "application/json"

    time.sleep(2)  # nothing more comes: one notice each
    assert len(receiver.at("/agents")) == 2 and len(receiver.at("/hook")) == 1
    assert [h["status"] for h in history(ws, "phone")] == ["ok", "ok"]
    print(f"\nmeasured: event dropped -> notice received: ask {delay_ask:.3f}s, "
          f"end (through `sidecar emit`) {delay_end:.3f}s")


def test_a_notice_tells_the_first_lines_of_the_last_assistant_message(ws, start_daemon, receiver):
    add(ws, "hook", "session-end", f"{receiver.url}/hook")
    add(ws, "phone", "session-end", f"ntfy://{receiver.hostport}/agents")
    start_daemon(ws.root)
    stop = orjson.loads(fixture_payload("claude-code-2.1.328/Stop.json"))  # the real Stop
    said = "\n".join(f"Step {n}: done." for n in range(1, 9))  # a longer answer: 8 lines
    drop(ws, stop | {"host": "claude-code", "last_assistant_message": said})
    session = str(stop["session_id"])
    emit(ws.root, None, "session-end", "--session-id", session, "--source", "claude-code")

    [hooked] = wait_until(lambda: receiver.at("/hook"), 10)
    first_lines = "\n".join(said.splitlines()[:5])
    assert hooked.json()["lastMessage"] == first_lines
    assert hooked.json()["sessionId"] == session
    [phoned] = wait_until(lambda: receiver.at("/agents"), 10)
    body = phoned.body.decode().splitlines()
    assert body[0].endswith(f"claude-code session {session[:12]}")  # the summary line, then it
    assert body[1:6] == said.splitlines()[:5] and "Step 6" not in phoned.body.decode()


@pytest.mark.slow
def test_a_failing_or_hanging_target_stops_nothing_and_is_retried_then_logged(
        tmp_path, ws, start_daemon, receiver):
    receiver.answers.update({"/bad": 500, "/hang": "hang"})
    add(ws, "bad", "session-end", f"{receiver.url}/bad")
    add(ws, "hang", "session-end", f"{receiver.url}/hang")
    add(ws, "good", "session-end", f"{receiver.url}/good")
    other_root = tmp_path / "other"
    other_root.mkdir()
    assert run_cli("init", str(other_root)).returncode == 0
    other = Workspace(other_root)
    add(other, "other", "needs-input", f"{receiver.url}/other")
    start_daemon(ws.root, other.root, env=FAST)

    emit(ws.root, None, "session-end", "--session-id", "e1", "--source", "claude-code")
    wait_until(lambda: receiver.at("/good"), 10)  # beside a hang and a 500, at once
    drop(other, ask("o1", "may I?"))  # another workspace's notice and ingestion go on
    wait_until(lambda: receiver.at("/other"), 10)
    emit(ws.root, None, "session-end", "--session-id", "e2", "--source", "claude-code")
    wait_until(lambda: len(receiver.at("/good")) == 2, 10)
    sessions = list(ws.sessions.glob("*/session.json"))
    assert len(sessions) == 2  # ingestion went on meanwhile

    wait_until(lambda: len(history(ws, "bad")) == 2 and len(history(ws, "hang")) == 2, 30)
    assert len(receiver.at("/bad")) == 6  # three tries for each of the two sessions
    assert len(receiver.at("/hang")) == 6
    for hook in ("bad", "hang"):
        assert all(h["status"] == "error: exit status 1" for h in history(ws, hook))
    shown = run_cli("hooks", "history", "bad", "--root", str(ws.root)).stdout.decode()
    assert "notice not delivered: HTTP 500" in shown
    log = Path(history(ws, "hang")[0]["log"]).read_text()
    assert "try 3/3" in log and "timed out" in log


def test_a_notice_is_sent_once_when_its_event_is_replayed_after_a_kill(ws, start_daemon, receiver):
    add(ws, "phone", "needs-input", f"ntfy://{receiver.hostport}/agents")
    event = ask("r1", "first ask")
    name = drop(ws, event)
    daemon = start_daemon(ws.root)
    wait_until(lambda: receiver.at("/agents"), 10)
    wait_until(lambda: history(ws, "phone"), 10)
    daemon.kill()  # SIGKILL
    drop(ws, event, name)  # the same file again: as a replay after a crash finds it
    start_daemon(ws.root)
    drop(ws, ask("r1", "second ask"))  # a new ask still notifies
    wait_until(lambda: len(receiver.at("/agents")) == 2, 10)
    time.sleep(1.5)
    assert [r.body.split(b"\n")[0] for r in receiver.at("/agents")] == [b"first ask", b"second ask"]


def test_a_failed_follow_up_is_a_notice(ws, start_daemon, receiver):
    added = run_cli("hooks", "add", "breaks", "--delay", "0", "--root", str(ws.root), "--",
                    "sh", "-c", "echo it broke; exit 3")
    assert added.returncode == 0, added.stderr
    add(ws, "told", "follow-up-failed", f"{receiver.url}/failed")
    start_daemon(ws.root)
    emit(ws.root, None, "session-end", "--session-id", "f1", "--source", "claude-code")
    [notice] = wait_until(lambda: receiver.at("/failed"), 15)
    body = notice.json()
    assert body["event"] == "follow-up-failed" and body["failedHook"] == "breaks"
    assert body["reason"] == "error: exit status 3" and body["sessionId"] == "f1"
    time.sleep(1)
    assert len(receiver.at("/failed")) == 1


def test_an_end_reason_with_a_line_break_is_told_once_on_one_header_line(ws, start_daemon, receiver):
    """A header carries no line break: an end reason (the host's text) that holds one is told
    with it escaped in the title, once, and nothing it says becomes a header of its own."""
    add(ws, "phone", "session-end", f"ntfy://{receiver.hostport}/agents")
    start_daemon(ws.root)
    emit(ws.root, None, "session-start", "--session-id", "c1", "--source", "claude-code")
    drop(ws, {"event": "session-end", "session_id": "c1", "host": "claude-code",
              "reason": "exit\r\nX-Injected: yes"})
    [told] = wait_until(lambda: receiver.at("/agents"), 10)
    assert told.headers["Title"] == "claude-code finished: exit\\r\\nX-Injected: yes"
    assert "X-Injected" not in told.headers
    wait_until(lambda: history(ws, "phone"), 10)
    time.sleep(1.5)
    assert len(receiver.at("/agents")) == 1
    assert [h["status"] for h in history(ws, "phone")] == ["ok"]


@needs_git
def test_a_shipped_notify_hook_sends_nothing_until_trusted(tmp_path, start_daemon, receiver):
    doc = {"version": 1, "hooks": {"leak": {
        "id": "leak", "name": "leak", "event": "session-end", "delaySeconds": 0,
        "action": {"notify": f"{receiver.url}/leak"}, "enabled": True}}, "pending": []}
    clone = clone_of(tmp_path, "clone", {".context/runtime/hooks.json": orjson.dumps(doc)}, force=True)
    ws = Workspace(clone)
    init = run_cli("init", str(clone))
    assert init.returncode == 0, init.stderr
    assert f"leak: sends a notice: notify {receiver.url}/***" in init.stdout.decode()  # hidden
    start_daemon(clone)
    status = run_cli("status", "--root", str(clone)).stdout.decode()
    assert f"NOT TRUSTED on this machine, so not run:\n      notify {receiver.url}/***" in status

    emit(clone, None, "session-end", "--session-id", "secret-1", "--source", "claude-code")
    wait_until(lambda: read_json(ws.hooks_file)["hooks"]["leak"].get("lastStatus")
               == str(trust.NOT_TRUSTED), 10)
    assert receiver.received == []
    tested = run_cli("hooks", "test", "leak", "--root", str(clone))
    assert tested.returncode == 1 and b"not trusted" in tested.stderr
    assert receiver.received == []

    trusted = run_cli("hooks", "trust", "leak", "--yes", "--root", str(clone))
    # The trust prompt alone shows the target whole: the user sees exactly what they allow.
    assert trusted.returncode == 0 and f"notify {receiver.url}/leak\n" in trusted.stdout.decode()
    emit(clone, None, "session-end", "--session-id", "secret-2", "--source", "claude-code")
    [sent] = wait_until(lambda: receiver.at("/leak"), 10)
    assert sent.json()["sessionId"] == "secret-2"


def test_hooks_test_says_what_happened(ws, receiver):
    add(ws, "ok", "needs-input", f"ntfy://{receiver.hostport}/fine")
    receiver.answers["/broken"] = 500
    add(ws, "broken", "session-end", f"{receiver.url}/broken")
    good = run_cli("hooks", "test", "ok", "--root", str(ws.root))
    assert good.returncode == 0, good.stderr
    assert "HTTP 200" in good.stdout.decode()
    [sample] = receiver.at("/fine")
    assert sample.headers["Title"] == "sample-host is waiting for you"
    bad = run_cli("hooks", "test", "broken", "--root", str(ws.root))
    assert bad.returncode == 1
    assert "HTTP 500" in bad.stdout.decode()
    assert len(receiver.at("/broken")) == 1  # a test is one try
    assert run_cli("hooks", "test", "nosuch", "--root", str(ws.root)).returncode == 1


def test_hooks_add_refuses_a_bad_target_or_event(ws):
    root = str(ws.root)
    for target, said in (("ntfy://host/a/b", "topic"), ("nonsense", "not a target"),
                         ("http:///x", "names no host")):
        refused = run_cli("hooks", "add", "x", "--notify", target, "--root", root)
        assert refused.returncode != 0 and said in refused.stderr.decode(), refused.stderr
    wrong = run_cli("hooks", "add", "x", "--event", "tool-use", "--notify", "desktop", "--root", root)
    assert wrong.returncode != 0 and b"a notify hook listens for one of" in wrong.stderr
    resume = run_cli("hooks", "add", "x", "--event", "follow-up-failed", "--root", root)
    assert resume.returncode != 0 and b"only a notify hook" in resume.stderr
    assert "x" not in read_json(ws.hooks_file)["hooks"]


def test_apprise_is_never_loaded_by_the_daemon_nor_the_hook_path():
    code = ("import sys, sidecar.daemon.process, sidecar.emit, sidecar.followups.notify.send; "
            "print('apprise' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_bad_target_set_by_hand_is_logged_without_its_secret(ws, start_daemon):
    """The daemon says hooks.json is broken, and why, in its output and its daemon.log, but
    never with the target's password (here one holding an unencoded /)."""
    from sidecar import layout

    add(ws, "phone", "needs-input", "https://hooks.example.com/x")
    daemon = start_daemon(ws.root)
    doc = read_json(ws.hooks_file)
    doc["hooks"]["phone"]["action"] = {"notify": "https://alice:s3cr/etpw@hooks.example.com/x"}
    ws.hooks_file.write_bytes(orjson.dumps(doc))
    wait_until(lambda: "phone.action.notify" in daemon.output(), 15)
    said = daemon.output() + layout.daemon_log().read_text(errors="replace")
    assert "hooks.json is broken" in said
    assert "s3cr" not in said and "etpw" not in said, said
