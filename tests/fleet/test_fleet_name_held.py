"""One fleet name, one publisher: a second daemon under the same machine name (a `sidecar run`
beside the service, a second user of a dev box) neither overwrites the holder's rows nor
deletes its heartbeat nor answers its requests; it says so, and takes over when the holder
stops. And a request that is not UTF-8 never stops a daemon answering."""

from __future__ import annotations

import time

import orjson
import pytest
from typer.testing import CliRunner

from helpers import emit, fleet_config, run_cli, wait_until
from sidecar.layout import Workspace

pytestmark = pytest.mark.daemon

HELD = ("the fleet name laptop is held by another daemon (set [fleet] machine = … to publish "
        "this one too)")


def listed() -> list[str]:
    done = run_cli("sessions", "--fleet", "--json")
    return sorted(s["sessionId"] for s in orjson.loads(done.stdout)["sessions"] if s["reachable"])


def second_workspace(tmp_path) -> Workspace:
    from sidecar.cli.main import app

    root = tmp_path / "ws2"
    root.mkdir()
    assert CliRunner().invoke(app, ["init", str(root)]).exit_code == 0
    return Workspace(root)


def test_a_second_daemon_under_the_same_name_waits_and_takes_over_when_the_holder_stops(
        workspace, tmp_path, config_home, redis_server, start_daemon):
    other = second_workspace(tmp_path)
    fleet_config(config_home, redis_server.url)
    first = start_daemon(workspace.root)
    emit(workspace.root, None, "session-start", "--session-id", "s-first", "--source", "codex")
    wait_until(lambda: listed() == ["s-first"], 10)
    second = start_daemon(other.root)
    emit(other.root, None, "session-start", "--session-id", "s-second", "--source", "codex")
    wait_until(lambda: HELD in second.output(), 10)
    time.sleep(1.5)  # beats of both: the holder's rows stay whole
    assert listed() == ["s-first"]
    status = run_cli("status", "--root", str(other.root)).stdout.decode()
    assert f"as laptop: not publishing: {HELD}" in status
    assert "as laptop (publishing)" in run_cli("status", "--root", str(workspace.root)).stdout.decode()

    with redis_server.client() as client:  # a request is answered once, by the holder only
        client.xadd("sidecar:fleet:actions:laptop", {"what": "cancel", "session": "s-first",
                                                      "workspace": str(workspace.root), "token": "t1"})
        wait_until(lambda: client.llen("sidecar:fleet:reply:t1") == 1, 5)
        time.sleep(1.0)
        assert client.llen("sidecar:fleet:reply:t1") == 1

    assert first.stop() == 0  # the holder stops: the other takes the name over by itself
    wait_until(lambda: listed() == ["s-second"], 10)
    assert "as laptop (publishing)" in run_cli("status", "--root", str(other.root)).stdout.decode()
    second.stop()  # and its stop deletes its own heartbeat
    with redis_server.client() as client:
        assert not client.exists("sidecar:fleet:alive:laptop")


def test_a_request_that_is_not_utf8_is_deleted_and_the_next_is_answered(
        workspace, config_home, redis_server, start_daemon):
    fleet_config(config_home, redis_server.url)
    daemon = start_daemon(workspace.root)
    emit(workspace.root, None, "session-start", "--session-id", "s-utf", "--source", "codex")
    wait_until(lambda: listed() == ["s-utf"], 10)
    with redis_server.client() as client:
        stream = "sidecar:fleet:actions:laptop"
        client.xadd(stream, {"what": b"\xff", "token": "bad"})
        wait_until(lambda: "not UTF-8" in daemon.output(), 5)
        client.xadd(stream, {"what": "cancel", "session": "s-utf", "workspace": str(workspace.root),
                             "token": "good"})
        wait_until(lambda: client.llen("sidecar:fleet:reply:good") == 1, 5)
        assert client.xlen(stream) == 0


def test_a_publisher_that_cannot_follow_the_files_says_why_and_publishes_once_it_can(
        workspace, tmp_path, config_home, redis_server):
    from support.inotify_limit import start_limited

    fleet_config(config_home, redis_server.url)
    emit(workspace.root, None, "session-start", "--session-id", "s-limit", "--source", "codex")
    daemon = start_limited(tmp_path, workspace.root, instances=1)  # none left for the publisher
    try:
        wait_until(lambda: "fleet: the publisher failed" in daemon.output(), 10)
        assert "Too many open files" in daemon.output()
        daemon.allow(8)  # the limit raised: it publishes by itself
        wait_until(lambda: listed() == ["s-limit"], 10)
        assert daemon.output().count("fleet: the publisher failed") == 1  # said once, not each try
    finally:
        daemon.stop()
