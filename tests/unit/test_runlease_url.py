"""The runner's Redis client reads a coordination URL as redis-py's `from_url` does, so one URL
serves the daemon (redis-py) and the runner (runlease) alike."""

from __future__ import annotations

import pytest

from sidecar.followups.runlease import Address, LeaseError, parse_url

redis_connection = pytest.importorskip("redis.connection", reason="the redis extra is not installed")

SAME_AS_REDIS_PY = [
    "redis://localhost",
    "redis://redis.example:6380",
    "redis://redis.example:6380/3",
    "redis://:secret@redis.example/2",
    "redis://alice:secret@redis.example:7000/1",
    "redis://alice@redis.example",
    "redis://al%40ice:p%40ss%3Aw%2Fd@redis.example:6379/0",
    "redis://REDIS.Example",
    "redis://[::1]:6390/4",
    "redis://10.0.0.5",
    "redis://redis.example/5?db=7",
    "redis://redis.example?password=fromquery&username=bob",
    "redis://:fromurl@redis.example?password=fromquery",
    "redis://redis.example/notanumber",
    "redis://redis.example/",
    "rediss://redis.example:6380/1",
    "rediss://:secret@redis.example",
    "unix:///run/redis/redis.sock",
    "unix:///run/redis/redis.sock?db=3",
    "unix://:secret@/run/redis/redis.sock?db=2",
    "unix://alice:secret@/run/redis/redis.sock",
    "unix:///run/redis%20x/redis.sock",
]


def _as_redis_py_reads(address: Address) -> dict[str, object]:
    fields: dict[str, object] = {"db": address.db, "username": address.username,
                                 "password": address.password}
    if address.path is not None:
        fields["path"] = address.path
    else:
        fields.update(host=address.host, port=address.port)
    return fields


@pytest.mark.parametrize("url", SAME_AS_REDIS_PY)
def test_a_url_names_the_server_redis_py_would_reach(url):
    theirs = redis_connection.parse_url(url)
    expected = {"db": theirs.get("db", 0), "username": theirs.get("username"),
                "password": theirs.get("password")}
    if url.startswith("unix://"):
        expected["path"] = theirs["path"]
    else:
        expected.update(host=theirs.get("host", "localhost"), port=theirs.get("port", 6379))
    address = parse_url(url)
    assert _as_redis_py_reads(address) == expected
    assert address.tls == (theirs.get("connection_class") is redis_connection.SSLConnection)


def _combinations() -> list[str]:
    """URLs built from every awkward part a user may write, each read by both parsers."""
    logins = ["", "@", ":@", "alice@", ":p%40ss@", "al%3Aice:pa:ss@", "bob:p%2Fw%@", ":%E2%82%AC@",
              "a@b:c@"]
    hosts = ["localhost", "Redis.Example", "[::1]", "[FE80::1%25Eth0]", "10.1.2.3", "h%2Dx", ""]
    ports = ["", ":", ":6390", ":0"]
    tails = ["", "/", "/7", "//8", "/x9", "/3;p=1", "/3?db=5", "?db=2&db=4", "/1?password=q&username=u",
             "?password=a+b%21", "#frag", "/2?db=6#frag", "?\tdb=3", "/%31"]
    urls = [f"{scheme}://{login}{host}{port}{tail}" for scheme in ("redis", "rediss")
            for login in logins for host in hosts for port in ports for tail in tails]
    paths = ["/run/redis.sock", "/run/a%20b.sock", "/run/x;y/r.sock", "/r.sock;v"]
    urls += [f"unix://{login}{path}{query}" for login in logins for path in paths
             for query in ("", "?db=3", "?db=1&password=z", "#f")]
    return urls


def test_every_combination_is_read_as_redis_py_reads_it():
    for url in _combinations():
        theirs = redis_connection.parse_url(url)
        expected = {"db": theirs.get("db", 0), "username": theirs.get("username"),
                    "password": theirs.get("password")}
        if url.startswith("unix://"):
            expected["path"] = theirs["path"]
        else:
            expected.update(host=theirs.get("host", "localhost"), port=theirs.get("port", 6379))
        assert _as_redis_py_reads(parse_url(url)) == expected, url


def test_tls_checks_the_certificate_and_its_name_unless_told_otherwise():
    strict = parse_url("rediss://redis.example")
    assert (strict.tls, strict.cert_reqs, strict.check_hostname, strict.ca_certs) == (
        True, "required", True, None)
    loose = parse_url("rediss://redis.example?ssl_cert_reqs=none&ssl_check_hostname=false"
                      "&ssl_ca_certs=/etc/ca.pem")
    assert (loose.cert_reqs, loose.check_hostname, loose.ca_certs) == ("none", False, "/etc/ca.pem")


@pytest.mark.parametrize(("url", "words"), [
    ("http://redis.example", "must start with redis://, rediss://, unix://"),
    ("redis:/redis.example", "must start with"),
    ("unix://", "names no socket path"),
    ("redis://:secret@redis.example:port", "port is not a number"),
    ("redis://:secret@redis.example?db=two", "Invalid value for 'db'"),
    ("rediss://:secret@redis.example?ssl_cert_reqs=maybe", "ssl_cert_reqs"),
])
def test_a_bad_url_is_a_clear_error_that_never_shows_the_password(url, words):
    with pytest.raises(LeaseError) as caught:
        parse_url(url)
    assert words in str(caught.value)
    assert "secret" not in str(caught.value)


def test_a_server_is_named_by_host_and_port_or_its_socket_never_with_the_password():
    assert parse_url("redis://:secret@redis.example:6380").where() == "redis.example:6380"
    assert parse_url("redis://:secret@[::1]").where() == "[::1]:6379"
    assert parse_url("unix://:secret@/run/redis.sock").where() == "/run/redis.sock"
