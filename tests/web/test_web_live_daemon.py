"""The web view beside a real daemon: an event dropped by `sidecar emit` reaches a browser's
Server-Sent Events stream within a second, and a follow-up is cancelled, fired now (a trusted
command runs; an untrusted one is skipped by the daemon and runs nothing) through the API as
the page calls it."""

from __future__ import annotations

import queue
import threading
import time

import httpx
import orjson
import pytest

from helpers import emit, end_session, read_json, trust_hooks, wait_until
from sidecar.followups import trust
from support.webapi import act, add_hook, bearer, listed, row_of

pytestmark = [pytest.mark.daemon, pytest.mark.slow]


def changes(web, into: queue.Queue, ready: threading.Event) -> None:
    """A browser's EventSource: each `change` event's data, as it arrives, until the server
    stops."""
    try:
        with httpx.stream("GET", web.base + "api/events", headers=bearer(web), timeout=30) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            ready.set()
            event = None
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "change":
                    into.put((time.monotonic(), orjson.loads(line[6:])))
    except httpx.HTTPError:
        return  # the server stopped at the end of the test


def test_an_emitted_event_reaches_the_browser_within_a_second(workspace, start_daemon, serve_web):
    start_daemon(workspace.root)
    web = serve_web(workspace.root)
    got: queue.Queue = queue.Queue()
    ready = threading.Event()
    threading.Thread(target=changes, args=(web, got, ready), daemon=True).start()
    assert ready.wait(5)
    assert emit(workspace.root, None, "session-start", "--session-id", "live-one",
                "--source", "claude-code").returncode == 0
    emitted = time.monotonic()
    key = None
    while key is None:
        at, change = got.get(timeout=5)
        row = row_of(web, "live-one")
        if row is not None and row["key"] in change.get("keys", []):
            key = row["key"]
    assert at - emitted < 1.0
    assert change["feedVersion"] >= 1
    assert row["state"] == "idle" and row["stateWords"] and row["whyWords"]
    detail = httpx.get(web.base + "api/session", params={"key": key}, headers=bearer(web)).json()
    assert detail["session"]["sessionId"] == "live-one" and detail["where"] == ""
    assert detail["timeline"] and detail["timeline"][0]["event"] == "session.created"


def test_fire_now_runs_a_trusted_command_long_before_its_delay(workspace, start_daemon, serve_web, tmp_path):
    out = tmp_path / "ran"
    add_hook(workspace, out)
    start_daemon(workspace.root)
    web = serve_web(workspace.root)
    end_session(workspace.root, "fire-me")
    wait_until(lambda: (r := row_of(web, "fire-me")) and r["canFire"], 5)
    row = row_of(web, "fire-me")
    assert "note due in" in row["followUpWords"] and listed(web)["nextDue"]["hookId"] == "note"
    said = act(web, row["key"], "fire")
    assert said.status_code == 200 and "due now" in said.json()["said"], said.text
    wait_until(out.exists, 5)  # an hour early: fired on the daemon's wake-up
    assert out.read_text() == "fire-me\n"
    wait_until(lambda: "note ok" in row_of(web, "fire-me")["followUpWords"], 5)


def test_fire_now_of_an_untrusted_command_is_skipped_by_the_daemon(workspace, start_daemon, serve_web,
                                                                   tmp_path):
    out = tmp_path / "ran"
    add_hook(workspace, out)
    doc = read_json(workspace.hooks_file)  # a hand edit (a pull): no longer trusted
    doc["hooks"]["note"]["action"] = ["sh", "-c", f"echo edited >> {out}"]
    workspace.hooks_file.write_bytes(orjson.dumps(doc))
    start_daemon(workspace.root)
    web = serve_web(workspace.root)
    end_session(workspace.root, "edited-one")
    wait_until(lambda: (r := row_of(web, "edited-one")) and r["canFire"], 10)
    assert act(web, row_of(web, "edited-one")["key"], "fire").status_code == 200
    wait_until(lambda: "skipped" in row_of(web, "edited-one")["followUpWords"], 10)
    assert read_json(workspace.hooks_file)["hooks"]["note"]["lastStatus"] == str(trust.NOT_TRUSTED)
    assert any("not trusted" in e for e in listed(web)["errors"])
    assert not out.exists()


def test_cancel_keeps_the_daemon_from_firing_it(workspace, start_daemon, serve_web, tmp_path):
    out = tmp_path / "ran"
    add_hook(workspace, out, delay="3s")
    trust_hooks(workspace)
    start_daemon(workspace.root)
    web = serve_web(workspace.root)
    end_session(workspace.root, "cancel-me")
    wait_until(lambda: (r := row_of(web, "cancel-me")) and r["canCancel"], 10)
    said = act(web, row_of(web, "cancel-me")["key"], "cancel")
    assert said.status_code == 200 and said.json()["said"].startswith("cancelled note"), said.text
    wait_until(lambda: "cancelled by the user" in row_of(web, "cancel-me")["followUpWords"], 5)
    time.sleep(3.5)  # past the delay: the daemon would have fired it by now
    assert not out.exists()
    assert read_json(workspace.hooks_file)["pending"] == []
    again = act(web, row_of(web, "cancel-me")["key"], "cancel")
    assert again.status_code == 200 and "no follow-up waiting" in again.json()["said"]
