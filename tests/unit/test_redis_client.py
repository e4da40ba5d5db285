"""The redis-py client sidecar makes: it names its library's version once, not per connection."""

from __future__ import annotations

import sys

import pytest

redis = pytest.importorskip("redis")

from sidecar.coordination.redis import client as redis_client  # noqa: E402
from sidecar.coordination.redis.backend import RedisCoordination  # noqa: E402


def test_every_connection_names_the_installed_version_read_once(monkeypatch):
    def no_metadata(name: str) -> str:
        raise AssertionError(f"package metadata read for {name!r} at a connection")

    if "driver_info" not in redis_client._driver_options():
        pytest.skip(f"redis-py {redis.__version__} reads its version once, at import")
    monkeypatch.setattr("importlib.metadata.version", no_metadata)
    coord = RedisCoordination("redis://127.0.0.1:1/0")
    try:
        kwargs = coord.client.connection_pool.connection_kwargs
        assert kwargs["driver_info"].lib_version == redis.__version__
        assert kwargs["driver_info"].formatted_name == "redis-py"
        coord.client.connection_pool.make_connection()  # as a lock's subscription opens one
    finally:
        coord.close()


def test_a_redis_py_without_driver_info_gets_no_such_option(monkeypatch):
    monkeypatch.setitem(sys.modules, "redis.driver_info", None)  # its import fails
    assert redis_client._driver_options() == {}
