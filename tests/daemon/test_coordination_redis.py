"""The Redis backend's parts, each against a real redis-server: the lead and its fencing, the
store locks, instance leases, runner leases, wake-ups, and an unreachable server."""

from __future__ import annotations

import threading
import time

import pytest

from helpers import run_cli, wait_until
from sidecar.coordination.base import LeaseLost, Unreachable, workspace_key
from sidecar.coordination.redis.backend import BREAK_AFTER, RedisCoordination
from sidecar.coordination.redis.client import INSTANCE_TTL
from sidecar.layout import Workspace
from sidecar.locks import LockTimeout
from support.cluster import coordinate_through, daemon_log
from support.redis_server import RedisServer


@pytest.fixture
def coords(redis_server: RedisServer):
    made: list[RedisCoordination] = []

    def make(url: str | None = None) -> RedisCoordination:
        coord = RedisCoordination(url or redis_server.url)
        made.append(coord)
        return coord

    yield make
    for coord in made:
        coord.close()


@pytest.fixture
def pair(tmp_path, coords) -> tuple[Workspace, RedisCoordination, RedisCoordination]:
    """Two instances of one workspace, `aaaa` and `bbbb`, each joined on a client of its own."""
    ws = Workspace(tmp_path)
    a, b = coords(), coords()
    a.join(ws, "aaaa")
    b.join(ws, "bbbb")
    return ws, a, b


def test_one_lead_at_a_time_and_the_next_after_a_release(pair):
    ws, a, b = pair
    lead_a = a.leadership(ws, "aaaa", lambda: None)
    lead_b = b.leadership(ws, "bbbb", lambda: None)
    assert lead_a.try_acquire()
    assert not lead_b.try_acquire()
    lead_a.check()  # held: no error
    assert lead_a.term.startswith("aaaa.")
    lead_a.release()
    assert lead_b.try_acquire()
    with pytest.raises(LeaseLost):
        lead_a.check()
    assert int(lead_b.term.split(".")[1]) > 0


def test_a_leader_whose_connections_are_killed_is_fenced_and_told(pair, redis_server):
    ws, a, b = pair
    lost = threading.Event()
    lead_a = a.leadership(ws, "aaaa", lost.set)
    assert lead_a.try_acquire()
    assert redis_server.kill_clients(match=lambda client: "leader-lock" in client.get("name", ""))
    assert lost.wait(5), "the lost lead was never reported"
    assert not lead_a.held()
    with pytest.raises(LeaseLost):
        lead_a.check()
    lead_b = b.leadership(ws, "bbbb", lambda: None)
    assert wait_until(lead_b.try_acquire, 3)
    with pytest.raises(LeaseLost):
        lead_a.check()  # and stays fenced once another leads


def test_an_instance_lives_while_its_process_renews_its_lease(pair):
    ws, a, b = pair
    assert wait_until(lambda: b.is_alive(ws, "aaaa"), 2)
    assert not b.is_alive(ws, "zzzz")
    time.sleep(INSTANCE_TTL + 0.5)  # renewed meanwhile
    assert b.is_alive(ws, "aaaa")
    a.stopping.set()  # its keeper stops, as at the process's death
    assert wait_until(lambda: not b.is_alive(ws, "aaaa"), INSTANCE_TTL + 2)


def test_a_store_lock_excludes_and_a_dead_holders_lock_is_broken(pair):
    ws, a, b = pair
    order: list[str] = []
    with a.store_lock(ws, "hooks"):
        with pytest.raises(LockTimeout):
            with b.store_lock(ws, "hooks", timeout=0.3):
                order.append("b inside a")
        entered = a.client.get(next(iter(a.held_locks)))
        assert entered and entered.startswith("aaaa:")
        # The holder dies holding it (its keeper stops renewing its instance's lease)
        a.stopping.set()
        began = time.monotonic()
        with b.store_lock(ws, "hooks", timeout=INSTANCE_TTL + 3):
            order.append("b after a died")
        took = time.monotonic() - began
    assert order == ["b after a died"]
    assert took < BREAK_AFTER / 1000 + 2, took  # not the lock's own 10 s expiry


def test_a_deposed_leaders_store_lock_is_broken_by_the_next_leader_at_once(pair):
    """A leader that dies holding the sessions' lock does not keep its successor waiting for
    its lease to run out: its lock names its term, which the new lead's fence has passed."""
    ws, a, b = pair
    lead_a = a.leadership(ws, "aaaa", lambda: None)
    assert lead_a.try_acquire()
    held = a.store_lock(ws, "bindings")
    held.__enter__()  # and then the leader's process stops for good: nothing renews or frees it
    a.stopping.set()
    a.client.connection_pool.disconnect()
    lead_a.lock.release()  # its subscription gone with it, as at its death
    lead_b = b.leadership(ws, "bbbb", lambda: None)
    assert wait_until(lead_b.try_acquire, 3)
    began = time.monotonic()
    with b.store_lock(ws, "bindings", timeout=5):
        took = time.monotonic() - began
    assert took < INSTANCE_TTL, took  # not its lease's end, nor the lock's own expiry


def test_a_command_holds_a_store_lock_without_being_an_instance(tmp_path, coords):
    ws = Workspace(tmp_path)
    cmd = coords()
    with cmd.store_lock(ws, "bindings"):
        key = next(k for k in cmd.client.keys("sidecar:*:lock:bindings"))
        assert cmd.client.get(key).startswith("cmd:")
    assert not cmd.client.exists(key)


def test_a_runners_lease_is_what_says_it_runs(tmp_path, coords):
    ws = Workspace(tmp_path)
    coord = coords()
    lease = coord.run_lease(ws, "entry-1")
    assert lease.url == coord.url.encode()  # given on a pipe: never in an environment
    assert "SIDECAR_COORDINATION_URL" not in lease.env
    assert not coord.run_alive(ws, "entry-1")
    coord.client.set(lease.env["SIDECAR_RUN_LEASE"], "1", px=3000)
    assert coord.run_alive(ws, "entry-1")


def test_a_change_announced_on_one_machine_wakes_the_other(tmp_path, coords):
    ws = Workspace(tmp_path)
    here, there = coords(), coords()
    heard: list[str] = []
    there.listen(heard.append)
    wait_until(lambda: "" in heard, 3)  # subscribed (it says so with "")
    here.changed(ws)
    assert wait_until(lambda: workspace_key(ws) in heard, 3)


def test_an_unreachable_server_is_named_without_its_password(tmp_path, coords, redis_server):
    ws = Workspace(tmp_path)
    url = f"redis://:s3cret-pw@127.0.0.1:{redis_server.port}/0"
    redis_server.stop()
    coord = coords(url)
    with pytest.raises(Unreachable) as caught:
        coord.ping()
    assert "s3cret-pw" not in str(caught.value)
    assert "redis://:***@127.0.0.1" in str(caught.value)
    with pytest.raises(Unreachable):
        coord.leadership(ws, "aaaa", lambda: None).try_acquire()
    with pytest.raises(Unreachable):
        with coord.store_lock(ws, "hooks"):
            pass
    with pytest.raises(Unreachable):
        coord.is_alive(ws, "aaaa")
    redis_server.start()
    again = coords()  # (the same server, without the password it does not ask for)
    wait_until(lambda: _answers(again), 5)
    lead = again.leadership(ws, "aaaa", lambda: None)
    assert not lead.try_acquire()  # a lead needs the instance's own lease, confirmed in time
    again.join(ws, "aaaa")
    assert lead.try_acquire()


def _answers(coord: RedisCoordination) -> bool:
    try:
        coord.ping()
    except Unreachable:
        return False
    return True


def test_a_redis_password_never_shows_in_the_log_status_or_doctor(
        workspace, config_home, redis_servers, start_daemon):
    secret = "pa55-w0rd-xyz"
    server = redis_servers(password=secret)
    coordinate_through(config_home, server)
    daemon = start_daemon(workspace.root)
    assert "redis://:***@127.0.0.1" in run_cli("status", "--root", str(workspace.root)).stdout.decode()
    server.stop()
    wait_until(lambda: "unreachable" in daemon_log().read_text(), 10)
    status = run_cli("status", "--root", str(workspace.root))
    report = run_cli("status", "--root", str(workspace.root), "--json")
    doctor = run_cli("doctor", cwd=workspace.root)
    shown = [status.stdout, status.stderr, report.stdout, doctor.stdout, doctor.stderr]
    assert f"workspace {workspace.root} is registered".encode() in doctor.stdout, doctor.stdout
    assert status.returncode == 3
    assert b"redis://:***@127.0.0.1" in status.stdout and b"unreachable since" in status.stdout
    server.start()
    wait_until(lambda: run_cli("status", "--root", str(workspace.root)).returncode == 0, 15)
    daemon.stop()
    said = daemon_log().read_bytes() + daemon.log_path.read_bytes()
    assert b"reachable again" in said or b"answers again" in said
    for text in [*shown, said]:
        assert secret.encode() not in text
