"""A real `redis-server` of a test's own: on a free loopback port or a socket in the test's
tmp folder, without persistence, stopped and started again on the same address (an outage
under load), its clients listed and cut off (a leader losing its connection).

The fixtures `redis_server` (a TCP one, started) and `redis_servers` (a factory: a unix socket,
a password, several servers) are registered for every test by tests/conftest.py. A test skips,
saying why, where `redis-server` is not installed (tests/install-hosts.sh installs it).
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from helpers import terminate

READY_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0
# A unix socket's path holds at most 107 bytes (sun_path); a longer tmp folder gets a short
# folder of its own for the socket.
MAX_SOCKET_PATH = 100
PR_SET_PDEATHSIG = 1


def redis_server_binary() -> str:
    """The `redis-server` to run; the test skips, saying why, where there is none."""
    found = shutil.which("redis-server")
    if found is None:
        pytest.skip("redis-server is not installed (tests/install-hosts.sh installs Debian's "
                    "redis-server package, as root with apt-get)")
    return found


def free_port() -> int:
    """A loopback port nothing listens on now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: the server is killed if the test process dies, so a killed
    pytest leaves no server behind."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class RedisServer:
    """One redis-server process, its data folder and log in `folder`.

    The address is chosen once: `start()` after `stop()` serves the same port (or socket), so
    clients given `url` reconnect to it. With `appendonly`, it keeps an append-only file in
    `folder` (fsync'd every second), so a server killed and started again has its data back:
    the persistence sidecar's documentation asks of a Redis that must lose nothing."""

    def __init__(self, folder: Path, *, unix_socket: bool = False,
                 password: str | None = None, appendonly: bool = False) -> None:
        self.binary = redis_server_binary()
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.log_path = folder / "redis.log"
        self.password = password
        self.appendonly = appendonly
        self._short_folder: Path | None = None
        self.socket_path: Path | None = None
        self.port: int | None = None
        if unix_socket:
            self.socket_path = folder / "redis.sock"
            if len(os.fsencode(self.socket_path)) > MAX_SOCKET_PATH:
                self._short_folder = Path(tempfile.mkdtemp(prefix="redis-"))
                self.socket_path = self._short_folder / "redis.sock"
        else:
            self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """redis://[:PASSWORD@]127.0.0.1:PORT/0, or unix://[:PASSWORD@]/path/redis.sock?db=0
        (the forms redis-py's `Redis.from_url` reads)."""
        auth = f":{quote(self.password, safe='')}@" if self.password else ""
        if self.socket_path is not None:
            return f"unix://{auth}{self.socket_path}?db=0"
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _argv(self) -> list[str]:
        argv = [self.binary, "--save", "", "--dir", str(self.folder),
                "--logfile", str(self.log_path), "--daemonize", "no"]
        argv += ["--appendonly", "yes", "--appendfsync", "everysec"] if self.appendonly \
            else ["--appendonly", "no"]
        if self.socket_path is not None:
            argv += ["--port", "0", "--unixsocket", str(self.socket_path), "--unixsocketperm", "700"]
        else:
            argv += ["--port", str(self.port), "--bind", "127.0.0.1"]
        if self.password:
            argv += ["--requirepass", self.password]
        return argv

    def start(self) -> RedisServer:
        """Start the server on its address and wait until it answers PING; a server that
        cannot start (its port taken meanwhile) fails the test with its log."""
        if self.running:
            raise RuntimeError(f"redis-server is already running (pid {self.pid})")
        self.proc = subprocess.Popen(self._argv(), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=_die_with_parent)
        deadline = time.monotonic() + READY_TIMEOUT
        while not self._answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"redis-server did not start on {self.url}:\n{self.log()}")
            time.sleep(0.02)
        return self

    def _answers(self) -> bool:
        """Whether this process (not another server on the same port) answers."""
        import redis

        try:
            with self.client(socket_timeout=1, socket_connect_timeout=1) as probe:
                return int(probe.info("server")["process_id"]) == self.pid
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            return False

    @property
    def pid(self) -> int:
        assert self.proc is not None, "the server was never started"
        return self.proc.pid

    def stop(self, timeout: float = STOP_TIMEOUT) -> int | None:
        """SIGTERM and wait (SIGKILL past `timeout`); the exit status, None if never started."""
        if self.proc is None:
            return None
        return terminate(self.proc, timeout)

    def kill(self) -> None:
        """SIGKILL, at once (a crash, or a teardown that must not wait)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        """Kill the server if it still runs and remove the short socket folder if one was made."""
        self.kill()
        if self._short_folder is not None:
            shutil.rmtree(self._short_folder, ignore_errors=True)

    def client(self, **kwargs: Any) -> Any:
        """A redis-py client of this server (decoded replies unless told otherwise)."""
        import redis

        kwargs.setdefault("decode_responses", True)
        return redis.Redis.from_url(self.url, **kwargs)

    def clients(self) -> list[dict[str, Any]]:
        """CLIENT LIST: one dict per connection (id, addr, name, cmd, ...), this one's left out."""
        with self.client() as admin:
            own = admin.client_id()
            return [c for c in admin.client_list() if int(c["id"]) != own]

    def kill_clients(self, name: str | None = None, addr: str | None = None,
                     match: Callable[[dict[str, Any]], bool] | None = None) -> int:
        """CLIENT KILL every connection whose name is `name`, whose address (host:port, or a
        prefix of it such as "127.0.0.1:") starts with `addr`, or that `match` accepts; how many
        were killed. With no filter at all, every other connection."""
        def chosen(client: dict[str, Any]) -> bool:
            if name is not None and client.get("name") != name:
                return False
            if addr is not None and not str(client.get("addr", "")).startswith(addr):
                return False
            return match is None or match(client)

        victims = [c for c in self.clients() if chosen(c)]
        with self.client() as admin:
            return sum(int(admin.client_kill_filter(_id=int(c["id"]))) for c in victims)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log was written)"


@pytest.fixture
def redis_servers(tmp_path: Path) -> Iterator[Callable[..., RedisServer]]:
    """Start servers of a test's own: `redis_servers(unix_socket=True, password="pw")`,
    `redis_servers(appendonly=True)`; every one is stopped at teardown, and killed if it would
    not stop."""
    pytest.importorskip("redis", reason="redis-py is not installed (make install installs "
                        "the redis extra)")
    count = itertools.count()
    with contextlib.ExitStack() as started:
        def start(*, unix_socket: bool = False, password: str | None = None,
                  appendonly: bool = False) -> RedisServer:
            server = RedisServer(tmp_path / f"redis-{next(count)}", unix_socket=unix_socket,
                                 password=password, appendonly=appendonly)
            started.callback(server.close)
            started.callback(server.stop)  # first: stopped, then closed, even if stop fails
            return server.start()

        yield start


@pytest.fixture
def redis_server(redis_servers: Callable[..., RedisServer]) -> RedisServer:
    """A started redis-server on a free loopback port, without a password."""
    return redis_servers()
