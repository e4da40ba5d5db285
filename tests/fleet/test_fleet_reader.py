"""The fleet's reader against what anyone who can write to its Redis may leave there, and against
a Redis that goes away or hangs: one bad value is named and the rest listed, a bad byte on the
channel stops no reader, a Redis that cannot be read shows nothing as live, and a view's
thread never waits on Redis."""

from __future__ import annotations

import os
import signal
import threading
import time

import orjson
import pytest

from helpers import wait_until
from sidecar.fleet import keys
from sidecar.fleet.read import REDIS, FleetFeed
from sidecar.fleet.settings import FleetSettings
from sidecar.views import rowjson
from sidecar.views.activity import Activity, State
from sidecar.views.sessions import FollowUp, SessionRow

pytestmark = pytest.mark.daemon


def a_row(hid: str, state: str = State.WORKING) -> SessionRow:
    return SessionRow(root=__import__("pathlib").Path("/home/u/app"), host="codex", session_id=f"s-{hid}",
                      harness_id=hid, started_at=time.time(), updated_at=time.time(), ended_at=None,
                      reason=None, activity=Activity(state, time.time(), "turn started"), tokens=None,
                      follow_ups=(FollowUp("note", "queued", time.time() + 60),), cwd=None)


def publish(client, machine: str, rows: dict[str, bytes], alive: bool = True) -> None:
    client.hset(keys.MACHINES, machine, f"{time.time()} 1.5")
    if alive:
        client.set(keys.alive(machine), "x", ex=30)
    client.hset(keys.rows(machine), mapping=rows)
    client.publish(keys.CHANNEL, machine)


def good(hid: str) -> bytes:
    return orjson.dumps(rowjson.to_json(a_row(hid), None))


@pytest.fixture
def feed(redis_server):
    made = FleetFeed(FleetSettings(redis_server.url, "viewer", 0.5))
    yield made
    made.stop()


def test_bytes_that_are_not_utf8_make_one_bad_row_and_stop_no_reader(redis_server, feed):
    with redis_server.client() as client:
        publish(client, "laptop", {"h1 /home/u/app": good("h1"), "h2 /home/u/app": b"\xff\xfe"})
        client.hset(keys.MACHINES, b"\xff", b"1 1")  # a machine's name that is not UTF-8
    feed.load()
    assert [row.harness_id for row in feed.rows.values()] == ["h1"]
    assert "laptop: a row that cannot be read (not UTF-8)" in feed.errors.values()
    assert any("whose name is not UTF-8" in text for text in feed.errors.values())

    changed = threading.Event()
    feed.follow(changed.set)
    with redis_server.client() as client:
        client.publish(keys.CHANNEL, b"\xff\xfe")  # on the channel: the reader goes on
        time.sleep(0.2)
        publish(client, "laptop", {"h3 /home/u/app": good("h3")})

    def seen():
        changed.clear()
        feed.apply()
        return {row.harness_id for row in feed.rows.values()} == {"h1", "h3"}

    wait_until(seen, 5, 0.05)


def test_a_redis_that_cannot_be_read_shows_nothing_as_live(redis_server, feed):
    with redis_server.client() as client:
        publish(client, "laptop", {"h1 /home/u/app": good("h1")})
    feed.load()
    assert [row.reachable for row in feed.rows.values()] == [True]
    redis_server.stop()
    feed.load()
    assert REDIS in feed.errors and "cannot be read" in feed.errors[REDIS]
    assert [row.reachable for row in feed.rows.values()] == [False]
    assert any(text.startswith("laptop: unreachable") for text in feed.errors.values())


def test_a_views_thread_never_waits_on_a_redis_that_hangs(redis_server, feed):
    with redis_server.client() as client:
        publish(client, "laptop", {"h1 /home/u/app": good("h1")})
    feed.load()
    feed.follow(lambda: None)
    os.kill(redis_server.pid, signal.SIGSTOP)
    try:
        time.sleep(1.0)  # the follow thread's reads now wait out their timeouts
        began = time.monotonic()
        for _ in range(20):
            feed.apply()
            time.sleep(0.05)
        took = time.monotonic() - began
        # a read on this thread would wait the command's 2 s timeout at least once
        assert took < 1.0 + 1.9, f"apply waited on Redis: {took:.2f}s"
    finally:
        os.kill(redis_server.pid, signal.SIGCONT)
    wait_until(lambda: feed.apply() or REDIS not in feed.errors, 10, 0.1)


def test_another_machines_row_cannot_make_this_one_read_an_unregistered_workspace(
        redis_server, tmp_path, config_home):
    other = tmp_path / "private"
    (other / ".context" / "runtime" / "sessions" / "h1").mkdir(parents=True)
    (other / ".context" / "runtime" / "sessions" / "h1" / "trace.jsonl").write_text(
        '{"event": "secret.event", "message": "private words"}\n')
    feed = FleetFeed(FleetSettings(redis_server.url, "viewer", 0.5))
    try:
        row = SessionRow(**{**a_row("h1").__dict__, "root": other, "machine": "viewer"})
        assert feed.gather(row) is None  # a workspace this user did not register is never read
    finally:
        feed.stop()
