"""The test support's real redis-server: its addresses and URLs, no persistence, an outage and
a restart on the same address, a password, and cutting off one client's connections."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from support import redis_server as redis_support
from support.redis_server import RedisServer


def test_a_tcp_server_serves_its_url_without_persistence(redis_server):
    assert redis_server.url == f"redis://127.0.0.1:{redis_server.port}/0"
    client = redis_server.client()
    client.set("k", "v")
    assert client.get("k") == "v"
    assert client.config_get("save") == {"save": ""}
    assert client.config_get("appendonly") == {"appendonly": "no"}
    assert Path(client.config_get("dir")["dir"]) == redis_server.folder.resolve()
    assert "Ready to accept connections" in redis_server.log()


def test_stopped_the_server_refuses_and_started_again_it_serves_the_same_port(redis_server):
    import redis

    client = redis_server.client(socket_timeout=2, socket_connect_timeout=2)
    client.set("k", "v")
    port = redis_server.port
    assert redis_server.stop() == 0  # SIGTERM: a clean exit
    with pytest.raises(redis.ConnectionError):
        client.get("k")
    redis_server.start()
    assert redis_server.port == port
    assert client.get("k") is None  # the same client reconnects; nothing was saved
    client.set("k", "again")
    assert redis_server.client().get("k") == "again"


def test_a_server_that_ignores_sigterm_is_killed(redis_server):
    redis_server.proc.send_signal(signal.SIGSTOP)  # a stopped process takes no SIGTERM
    assert redis_server.stop(timeout=0.5) == -signal.SIGKILL
    assert not redis_server.running


def test_a_unix_socket_server_in_the_tmp_folder(redis_servers, tmp_path):
    server = redis_servers(unix_socket=True)
    assert server.socket_path == tmp_path / "redis-0" / "redis.sock"
    assert server.url == f"unix://{server.socket_path}?db=0"
    assert server.port is None
    client = server.client()
    client.set("k", "v")
    assert client.get("k") == "v"
    server.stop()
    server.start()  # the same socket again
    assert server.client().ping()


def test_a_password_is_required_and_given_by_the_url(redis_servers):
    import redis

    server = redis_servers(password="s3cret/pw")
    assert server.url == f"redis://:s3cret%2Fpw@127.0.0.1:{server.port}/0"
    assert server.client().ping()
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    anonymous = redis.Redis(host="127.0.0.1", port=server.port, retry=Retry(NoBackoff(), 0))
    with pytest.raises(redis.AuthenticationError):
        anonymous.ping()
    anonymous.close()
    on_socket = redis_servers(unix_socket=True, password="pw")
    assert on_socket.url == f"unix://:pw@{on_socket.socket_path}?db=0"
    assert on_socket.client().ping()


def test_kill_clients_cuts_off_the_named_connection_only(redis_server):

    leader = redis_server.client(client_name="leader")
    other = redis_server.client(client_name="other")
    assert leader.ping() and other.ping()
    assert {c["name"] for c in redis_server.clients()} == {"leader", "other"}
    assert redis_server.kill_clients(name="leader") == 1
    assert [c["name"] for c in redis_server.clients()] == ["other"]
    assert leader.ping()  # redis-py reconnects: a new connection, after the cut
    assert redis_server.kill_clients(name="nobody") == 0
    assert redis_server.kill_clients(addr="127.0.0.1:") == 2
    assert redis_server.clients() == []


def test_a_long_tmp_folder_gets_a_short_socket_folder_removed_at_close(tmp_path):
    pytest.importorskip("redis")
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    server = RedisServer(deep, unix_socket=True).start()
    try:
        assert len(str(server.socket_path)) <= redis_support.MAX_SOCKET_PATH
        assert server.client().ping()
    finally:
        server.stop()
        server.close()
    assert server.socket_path is not None and not server.socket_path.parent.exists()


def test_a_machine_without_redis_server_skips_saying_why(tmp_path, monkeypatch):
    monkeypatch.setattr(redis_support.shutil, "which", lambda name: None)
    with pytest.raises(pytest.skip.Exception, match="redis-server is not installed"):
        RedisServer(tmp_path)


def test_a_server_that_cannot_start_fails_with_its_log(redis_server, tmp_path):
    taken = RedisServer(tmp_path / "second")
    taken.port = redis_server.port  # the address is in use
    try:
        with pytest.raises(RuntimeError, match="did not start") as failure:
            taken.start()
    finally:
        taken.close()
    assert "Address already in use" in str(failure.value)
    assert not taken.running
