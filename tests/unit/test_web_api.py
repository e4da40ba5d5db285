"""The web view's API over a real workspace (support/top_demo.py: a session in every state,
made by sidecar's own ingestion) and a real Feed, asked through Starlette's test client: the
list in `top`'s order with its filters, counts and next due follow-up, one session's detail
with its timeline and log lines, keys that name rows and never paths, and what the guard adds."""

from __future__ import annotations

import time

import inotify_simple
import pytest
from starlette.testclient import TestClient

from sidecar.base.ids import harness_id
from sidecar.live.feed import Feed
from sidecar.web import rows
from sidecar.web.app import build
from support import top_demo

TOKEN = "t" * 43
BEARER = {"Authorization": f"Bearer {TOKEN}"}
# inotify_simple finds libc through ldconfig (a process) on its first instance: made here, at
# collection, so the real watch the feed follows files with starts none.
inotify_simple.INotify().close()


@pytest.fixture
def demo(tmp_path):
    ws = top_demo.build(tmp_path / "demo", time.time())
    with TestClient(build(Feed([ws.root]), TOKEN, 24 * 3600, tls=False)) as client:
        yield ws, client


def listed(client, **params):
    answer = client.get("/api/sessions", params=params, headers=BEARER)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_list_is_in_tops_order_with_counts_and_the_next_due(demo):
    ws, client = demo
    data = listed(client)
    ids = [r["sessionId"] for r in data["sessions"]]
    assert ids[:3] == ["b21d44f0-asks", "d4471b2c-limit", "7f3a9c1e-work"]
    assert data["total"] == data["matched"] == len(top_demo.STORIES)
    assert data["counts"] == {"working": 1, "waiting": 1, "idle": 1, "limited": 1, "ended": 2,
                              "queued": data["counts"]["queued"]}
    asks = data["sessions"][0]
    assert asks["stateWords"] == "waiting for you" and "permission" in asks["whyWords"]
    assert asks["machine"] == "" and rows.key_of(asks["key"]) == ("", ws.root, harness_id("claude-code",
                                                                                          asks["sessionId"]))
    if data["counts"]["queued"]:
        assert data["nextDue"]["hookId"] and data["nextDue"]["at"]


def test_filters_search_and_pages(demo):
    _, client = demo
    assert [r["sessionId"] for r in listed(client, q="limit")["sessions"]] == ["d4471b2c-limit"]
    ended = listed(client, state="ended")
    assert ended["matched"] == 2 and ended["total"] == len(top_demo.STORIES)
    assert {r["state"] for r in ended["sessions"]} == {"ended"}
    assert listed(client, machine="elsewhere")["matched"] == 0
    first, second = listed(client, limit=2), listed(client, offset=2, limit=2)
    assert len(first["sessions"]) == 2 and first["matched"] == len(top_demo.STORIES)
    assert not {r["key"] for r in first["sessions"]} & {r["key"] for r in second["sessions"]}
    for bad in ({"state": "asleep"}, {"limit": "0"}, {"limit": "many"}, {"offset": "-1"}):
        answer = client.get("/api/sessions", params=bad, headers=BEARER)
        assert answer.status_code == 400 and answer.json()["error"], bad


def test_the_detail_has_the_timeline_and_a_fired_follow_ups_last_lines(demo):
    _, client = demo
    done = next(r for r in listed(client)["sessions"] if r["sessionId"] == "e5a8f3d1-done")
    detail = client.get("/api/session", params={"key": done["key"]}, headers=BEARER).json()
    assert detail["where"] == "" and detail["session"]["key"] == done["key"]
    events = [e["event"] for e in detail["timeline"]]
    assert events[0] == "session.created" and events[-1] == "session.completed"
    assert all(e["at"] for e in detail["timeline"])
    fired = [f for f in detail["followUps"] if f["state"] == "ok"]
    assert fired and fired[0]["log"][-1] == "Done." and fired[0]["words"].startswith("post-task ok")


def test_a_key_names_a_row_never_a_path(demo):
    ws, client = demo
    planted = rows.key_text(("", ws.root.parent, "../../etc/passwd"))
    for key in (planted, "not base64!", rows.key_text(("", ws.root, "nothing-here")), ""):
        answer = client.get("/api/session", params={"key": key}, headers=BEARER)
        assert answer.status_code == 404 and answer.json() == {
            "error": "no such session (it may have been removed)"}
    assert rows.key_of("WyJhIl0") is None  # ["a"]: not a row's key


def test_an_action_needs_a_key_and_cancel_or_fire(demo):
    _, client = demo
    page = client.get("/", headers=BEARER)
    csrf = page.text.split('name="csrf-token" content="')[1].split('"')[0]
    headers = {**BEARER, "X-CSRF-Token": csrf}
    for body in (b"{", b"[]", b'{"key": "x", "what": "delete"}', b'{"what": "cancel"}'):
        answer = client.post("/api/act", content=body, headers=headers)
        assert answer.status_code == 400, body
    asks = listed(client)["sessions"][0]
    said = client.post("/api/act", json={"key": asks["key"], "what": "cancel"}, headers=headers)
    assert said.status_code == 200 and "no follow-up waiting" in said.json()["said"]


def test_under_tls_the_cookie_is_secure(tmp_path):
    with TestClient(build(Feed([]), TOKEN, None, tls=True), base_url="https://testserver") as client:
        signed = client.get(f"/?token={TOKEN}", follow_redirects=False)
        assert signed.status_code == 303
        assert "secure" in signed.headers["set-cookie"].lower()


def test_static_serves_the_folders_own_files_only(demo):
    _, client = demo
    for path in ("/static/..%2f__init__.py", "/static/%2e%2e%2fapp.py", "/static/.gitignore",
                 "/static/none.js"):
        assert client.get(path, headers=BEARER).status_code == 404, path
    assert client.get("/static/index.html", headers=BEARER).status_code == 200
