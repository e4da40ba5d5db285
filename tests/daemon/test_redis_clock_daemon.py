"""In Redis mode one clock counts, Redis's, and Redis must keep what it acknowledged: a real
redis-server, real `doctor` and `status`, and real daemons whose wall clock is wrong
(libfaketime: the wall clock faked, the monotonic one real, as on a machine whose clock is
simply set wrong)."""

from __future__ import annotations

import time

import orjson
import pytest
from test_clocks import FakeClock
from test_clocks import fake_clock as fake_clock  # (the fixture, for this module's tests)
from test_hooks_daemon import command_hook, lines, recorder

from helpers import emit, run_cli, use_hooks, wait_until
from support.cluster import coordinate_through
from support.redis_server import RedisServer

NO_APPENDONLY = "Redis runs without appendonly yes"
FSYNC_NO = "Redis runs with appendfsync no"
DAY_AND_AN_HOUR = 25 * 3600  # past staleAfter (24 h, the default)


def clock_env(clock: FakeClock, offset: int) -> dict[str, str]:
    """The daemon's (or a command's) wall clock `offset` seconds off the real one. File times
    are left as they are (NO_FAKE_STAT): the files come from hooks on machines whose clocks
    are right, as in a workspace shared by several machines."""
    clock.set(offset)
    return {**clock.env, "NO_FAKE_STAT": "1"}


def doctor(ws, env: dict[str, str] | None = None) -> str:
    return run_cli("doctor", cwd=ws.root, env=env).stdout.decode()


def coordination_row(ws, env: dict[str, str] | None = None) -> dict:
    return orjson.loads(run_cli("status", "--json", cwd=ws.root, env=env).stdout)["coordination"]


def session_status(ws, session: str) -> str | None:
    result = run_cli("status", "--session", session, "--json", cwd=ws.root)
    return orjson.loads(result.stdout)["status"] if result.returncode == 0 else None


def start_session(ws, session: str) -> None:
    emit(ws.root, None, "session-start", "--session-id", session, "--source", "claude-code")


def test_doctor_and_status_warn_of_a_redis_that_would_lose_what_it_acknowledged(
        workspace, config_home, redis_server: RedisServer):
    coordinate_through(config_home, redis_server)  # (its server: no appendonly, no snapshots)
    said = doctor(workspace)
    assert f"note    {NO_APPENDONLY}" in said, said
    assert "appendonly no, appendfsync everysec" in said
    row = coordination_row(workspace)
    assert row["reachable"] and row["persistence"] == {"appendonly": False,
                                                       "appendfsync": "everysec",
                                                       "evicts": False}
    assert [w for w in row["warnings"] if w.startswith(NO_APPENDONLY)], row
    text = run_cli("status", cwd=workspace.root).stdout.decode()
    assert f"  warning: {NO_APPENDONLY}" in text, text

    with redis_server.client() as admin:
        admin.config_set("appendonly", "yes")
    said = doctor(workspace)
    assert "Redis runs without" not in said and "appendfsync no" not in said, said
    assert "ok      Redis persists what it acknowledges (appendonly yes, appendfsync everysec)" \
        in said
    row = coordination_row(workspace)
    assert row["persistence"] == {"appendonly": True, "appendfsync": "everysec",
                                  "evicts": False}
    assert row["warnings"] == []
    assert "warning:" not in run_cli("status", cwd=workspace.root).stdout.decode()

    with redis_server.client() as admin:
        admin.config_set("appendfsync", "no")
    assert f"note    {FSYNC_NO}" in doctor(workspace)
    assert [w for w in coordination_row(workspace)["warnings"] if w.startswith(FSYNC_NO)]

    with redis_server.client() as admin:  # a Redis that may evict a record to make room
        admin.config_set("appendfsync", "everysec")
        admin.config_set("maxmemory", str(1 << 30))
        admin.config_set("maxmemory-policy", "allkeys-lru")
    assert "maxmemory-policy noeviction" in doctor(workspace)
    assert coordination_row(workspace)["persistence"]["evicts"] is True


def test_a_config_command_refused_to_sidecars_user_is_said_as_unknown(
        workspace, config_home, redis_servers):
    server = redis_servers(password="admin-pw")
    with server.client() as admin:  # a user that may do all but CONFIG
        admin.execute_command("ACL", "SETUSER", "sidecar", "on", ">pw", "~*", "&*", "+@all",
                              "-config")
    with open(config_home / "config.toml", "a") as config:
        config.write(f'\n[coordination]\nurl = "redis://sidecar:pw@127.0.0.1:{server.port}/0"\n')
    row = coordination_row(workspace)
    assert row["reachable"], row
    assert row["persistence"] == {"appendonly": False, "appendfsync": None, "evicts": False}
    assert "appendonly no, appendfsync unknown" in doctor(workspace)
    assert abs(row["clockOffsetSeconds"]) < 1.0


@pytest.mark.slow
def test_a_daemon_a_day_ahead_sweeps_no_live_session_and_doctor_says_its_offset(
        workspace, config_home, redis_server, start_daemon, fake_clock):
    coordinate_through(config_home, redis_server)
    # A session that a daemon whose clock is right saw start: bound, active, just touched.
    first = start_daemon(workspace.root)
    start_session(workspace, "live")
    wait_until(lambda: session_status(workspace, "live") == "active", 15)
    first.stop()
    # Its successor's clock is a day and an hour ahead: by it, the session is past staleAfter
    # at its first sweep (before it applies anything itself) unless it keeps to Redis's clock.
    ahead = clock_env(fake_clock, DAY_AND_AN_HOUR)
    start_daemon(workspace.root, env=ahead)
    time.sleep(3)  # three sweeps (sweepInterval = 1)
    assert session_status(workspace, "live") == "active"

    said = doctor(workspace, env=ahead)
    assert "note    this machine's clock is 25 h 0 min ahead of Redis's" in said, said
    row = coordination_row(workspace, env=ahead)
    assert row["clockOffsetSeconds"] == pytest.approx(DAY_AND_AN_HOUR, abs=1.0)
    assert [w for w in row["warnings"] if "25 h 0 min ahead of Redis's" in w], row
    assert "this machine's clock is within" in doctor(workspace)  # this one's is right


@pytest.mark.slow
def test_a_daemon_two_minutes_behind_fires_a_follow_up_when_it_is_due(
        workspace, config_home, redis_server, start_daemon, fake_clock, tmp_path):
    coordinate_through(config_home, redis_server)
    fired = tmp_path / "fired.txt"
    delay = 3
    use_hooks(workspace, {"rec": command_hook("rec", recorder(fired), delay=delay)})
    behind = clock_env(fake_clock, -120)
    start_daemon(workspace.root, env=behind)
    start_session(workspace, "s1")
    ended = time.monotonic()  # the end's time, as its hook stamps it (this clock is right)
    emit(workspace.root, None, "session-end", "--session-id", "s1", "--source", "claude-code")
    wait_until(lambda: lines(fired) == ["s1"], 30, interval=0.01)
    late = time.monotonic() - ended - delay
    # Due `delay` after the end by Redis's clock, not two minutes later by the daemon's; within
    # about a second of it (starting the action included), on a loaded machine a little more.
    assert -0.5 < late < 1.5, late
    said = doctor(workspace, env=behind)
    assert "note    this machine's clock is 2.0 min behind Redis's" in said, said
