"""The liveness lease a follow-up's runner keeps in a real Redis (redis-server) while its
action runs, as the daemon starts it (`python -S runner.py FD LOG -- ARGV`), so that a leader
on another machine can tell whether the action still runs."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from helpers import wait_until
from sidecar.coordination.redis.client import library
from sidecar.followups.run import actions
from sidecar.followups.run.lease import TTL_MS
from support.redis_server import RedisServer, free_port

redis = pytest.importorskip("redis", reason="the redis extra is not installed")

KEY = "sidecar:run:hook-1"
WAKE = "sidecar:wake"


class TlsRedisServer(RedisServer):
    """Serving TLS only, on its port, with a certificate for localhost from a CA of its own."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.ca = folder / "ca.pem"
        key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        run = functools.partial(subprocess.run, check=True, capture_output=True, cwd=folder)
        run(["openssl", "req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=sidecar test authority"])
        run(["openssl", "req", *key, "-keyout", "server.key", "-out", "server.csr",
             "-subj", "/CN=localhost"])
        (folder / "names.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        run(["openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "names.ext"])

    @property
    def url(self) -> str:
        return f"rediss://localhost:{self.port}/0?ssl_ca_certs={self.ca}"

    def _argv(self) -> list[str]:  # its port is TLS's; the plain one (0) is off
        return [*super()._argv(), "--port", "0", "--tls-port", str(self.port), "--tls-cert-file",
                str(self.folder / "server.pem"), "--tls-key-file", str(self.folder / "server.key"),
                "--tls-ca-cert-file", str(self.ca), "--tls-auth-clients", "no"]


class Runner:
    """One runner process, started as actions.start starts it, in a session of its own."""

    def __init__(self, folder: Path, argv: list[str], **env: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.log = folder / "action.log"
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with open(self.log, "ab") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-S", actions.RUNNER, str(fd), self.log.name, "--", *argv],
                    cwd=folder, env={**os.environ, **env}, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(fd,))
        finally:
            os.close(fd)
        self.started = folder / "action.log.started"
        self.status = folder / "action.log.status"

    def wait(self, timeout: float = 15) -> int:
        return self.proc.wait(timeout)

    def text(self) -> str:
        return self.log.read_text()

    def kill_group(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


@pytest.fixture
def runners() -> Iterator[Callable[..., Runner]]:
    started: list[Runner] = []

    def start(folder: Path, argv: list[str], **env: str) -> Runner:
        started.append(Runner(folder, argv, **env))
        return started[-1]

    yield start
    for runner in started:
        runner.kill_group()


def lease_env(url: str, wake: str | None = WAKE) -> dict[str, str]:
    """As the daemon gives them (its URL aside, given on a pipe): the lease's key, where
    redis-py is, and the wake-up channel."""
    env = {"SIDECAR_RUN_LEASE": KEY, "SIDECAR_COORDINATION_URL": url,
           "SIDECAR_RUN_LIBRARY": library()}
    return {**env, "SIDECAR_RUN_WAKE": wake} if wake else env


def test_the_lease_lives_while_the_action_runs_and_ends_after_its_status(redis_server, runners,
                                                                          tmp_path):
    client = redis_server.client()
    wake = client.pubsub()
    wake.subscribe(WAKE)
    assert wake.get_message(timeout=2)["type"] == "subscribe"
    runner = runners(tmp_path / "logs", ["sleep", "5"], **lease_env(redis_server.url))
    wait_until(runner.started.exists)
    began = time.monotonic()
    held = json.loads(client.get(KEY))
    assert held["pid"] == runner.proc.pid == json.loads(runner.started.read_text())["pid"]
    time.sleep(max(0.0, 4 - (time.monotonic() - began)))  # past the lease's first lifetime
    assert client.exists(KEY)
    assert 0 < client.pttl(KEY) <= TTL_MS
    message = wake.get_message(timeout=10)  # the wake-up, once the action ends
    while message is not None and message["type"] != "message":
        message = wake.get_message(timeout=10)
    assert message is not None and message["data"] == KEY
    assert json.loads(runner.status.read_text()) == {"exit": 0}  # written before the wake-up
    assert not client.exists(KEY)
    assert runner.wait() == 0
    wake.close()


def test_a_killed_runner_s_lease_expires_within_its_lifetime(redis_server, runners, tmp_path):
    client = redis_server.client()
    runner = runners(tmp_path / "logs", ["sleep", "30"], **lease_env(redis_server.url))
    wait_until(runner.started.exists)
    assert client.exists(KEY)
    os.kill(runner.proc.pid, signal.SIGKILL)  # the machine dies, as far as Redis can tell
    runner.proc.wait()
    killed = time.monotonic()
    wait_until(lambda: not client.exists(KEY), timeout=TTL_MS / 1000 + 1)
    assert time.monotonic() - killed <= TTL_MS / 1000 + 0.5
    assert not runner.status.exists()


def test_a_given_up_firing_deletes_its_lease_and_runs_nothing(redis_server, runners, tmp_path):
    client = redis_server.client()
    client.config_set("notify-keyspace-events", "Kg$")
    events = client.pubsub()
    events.subscribe(f"__keyspace@0__:{KEY}", WAKE)
    for _ in range(2):
        assert events.get_message(timeout=2)["type"] == "subscribe"
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "action.log.started").write_text('{"pid": 1}')  # a leader gave the firing up
    ran = tmp_path / "ran"
    runner = runners(folder, ["touch", str(ran)], **lease_env(redis_server.url))
    assert runner.wait() == 0
    assert "the firing was given up before it started" in runner.text()
    assert not ran.exists() and not runner.status.exists()
    seen = []
    while (message := events.get_message(timeout=1)) is not None:
        seen.append((message["channel"], message["data"]))
    # Taken (SET ... PX: a set and its expiry), then deleted; and no wake-up published.
    assert seen == [(f"__keyspace@0__:{KEY}", "set"), (f"__keyspace@0__:{KEY}", "expire"),
                    (f"__keyspace@0__:{KEY}", "del")]
    events.close()


def test_a_wrong_password_runs_the_action_and_the_log_names_no_password(redis_servers, runners,
                                                                        tmp_path):
    server = redis_servers(password="right-horse")
    ran = tmp_path / "ran"
    url = f"redis://default:wr%40ng-battery@127.0.0.1:{server.port}/0"
    runner = runners(tmp_path / "logs", ["touch", str(ran)], **lease_env(url))
    assert runner.wait() == 0
    assert ran.exists() and json.loads(runner.status.read_text()) == {"exit": 0}
    text = runner.text()
    assert (f"no liveness lease in Redis (Redis at 127.0.0.1:{server.port}: invalid "
            "username-password pair") in text
    assert "wr@ng-battery" not in text and "wr%40ng-battery" not in text
    assert "right-horse" not in text
    assert not server.client().exists(KEY)


def test_the_right_password_and_user_take_the_lease(redis_servers, runners, tmp_path):
    server = redis_servers(password="right-horse")
    for db, url in ((0, server.url), (4, f"redis://default:right-horse@127.0.0.1:{server.port}/4")):
        in_db = redis.Redis.from_url(url)  # a client of the database the URL names
        runner = runners(tmp_path / f"logs{db}", ["sleep", "1"], **lease_env(url))
        wait_until(runner.started.exists)
        assert in_db.exists(KEY), url
        assert runner.wait() == 0
        assert not in_db.exists(KEY)
        assert "liveness" not in runner.text()


def test_a_unix_socket_url_with_a_password_and_a_database(redis_servers, runners, tmp_path):
    server = redis_servers(unix_socket=True, password="right-horse")
    url = f"unix://:right-horse@{server.socket_path}?db=3"
    runner = runners(tmp_path / "logs", ["sleep", "1"], **lease_env(url))
    wait_until(runner.started.exists)
    assert redis.Redis.from_url(url).exists(KEY) and not server.client().exists(KEY)  # db 0
    assert runner.wait() == 0
    assert not redis.Redis.from_url(url).exists(KEY)


def test_the_action_gets_neither_the_lease_nor_the_url(redis_servers, runners, tmp_path):
    server = redis_servers(password="right-horse")
    runner = runners(tmp_path / "logs", ["env"], **lease_env(server.url),
                     ACTION_MARKER="given")
    assert runner.wait() == 0
    printed = runner.text()
    assert "ACTION_MARKER=given" in printed  # the action's environment, printed whole
    for name in ("SIDECAR_RUN_LEASE", "SIDECAR_COORDINATION_URL", "SIDECAR_RUN_WAKE"):
        assert f"{name}=" not in printed
    assert "right-horse" not in printed


def test_redis_down_at_the_start_the_action_runs_and_the_log_says_so(runners, tmp_path):
    port = free_port()  # nothing listens there
    ran = tmp_path / "ran"
    began = time.monotonic()
    runner = runners(tmp_path / "logs", ["touch", str(ran)],
                     **lease_env(f"redis://:secret@127.0.0.1:{port}/0"))
    assert runner.wait() == 0
    assert time.monotonic() - began < 10
    assert ran.exists() and json.loads(runner.status.read_text()) == {"exit": 0}
    assert f"no liveness lease in Redis (cannot reach Redis at 127.0.0.1:{port}" in runner.text()
    assert "secret" not in runner.text()


def test_a_url_that_is_not_redis_s_runs_the_action_and_the_log_says_why(runners, tmp_path):
    ran = tmp_path / "ran"
    runner = runners(tmp_path / "logs", ["touch", str(ran)],
                     **lease_env("http://:secret@127.0.0.1:6379"))
    assert runner.wait() == 0 and ran.exists()
    assert "no liveness lease in Redis (the coordination URL must start with redis://" in runner.text()
    assert "secret" not in runner.text()


def test_a_redis_that_comes_back_gets_the_lease_again_quietly(redis_server, runners, tmp_path):
    runner = runners(tmp_path / "logs", ["sleep", "6"], **lease_env(redis_server.url))
    wait_until(runner.started.exists)
    redis_server.kill()  # Redis restarts, losing every key
    time.sleep(1.5)  # a refresh or two fail meanwhile
    redis_server.start()
    wait_until(lambda: redis_server.client().exists(KEY), timeout=4)
    assert runner.wait() == 0
    assert not redis_server.client().exists(KEY)
    assert json.loads(runner.status.read_text()) == {"exit": 0}
    assert "Redis" not in runner.text()  # the failed refreshes left no noise in the log


def test_redis_gone_at_the_end_the_status_is_written_and_the_runner_exits(redis_server, runners,
                                                                         tmp_path):
    runner = runners(tmp_path / "logs", ["sleep", "1"], **lease_env(redis_server.url))
    wait_until(runner.started.exists)
    redis_server.kill()
    assert runner.wait() == 0
    assert json.loads(runner.status.read_text()) == {"exit": 0}


def test_an_action_that_cannot_start_ends_its_lease_after_the_error_status(redis_server, runners,
                                                                           tmp_path):
    runner = runners(tmp_path / "logs", ["no-such-binary-5b1e"], **lease_env(redis_server.url))
    assert runner.wait() == 127
    assert "cannot start 'no-such-binary-5b1e'" in json.loads(runner.status.read_text())["error"]
    assert not redis_server.client().exists(KEY)


def test_without_the_url_there_is_no_lease_and_nothing_is_said(runners, tmp_path):
    runner = runners(tmp_path / "logs", ["true"], SIDECAR_RUN_LEASE=KEY)
    assert runner.wait() == 0
    assert json.loads(runner.status.read_text()) == {"exit": 0}
    assert "Redis" not in runner.text()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_tls_checks_the_server_s_certificate(runners, tmp_path):
    server = TlsRedisServer(tmp_path / "tls").start()
    try:
        ran = tmp_path / "ran"
        base = f"rediss://localhost:{server.port}/0"
        # Checked against the system's authorities, which never signed it: refused, said so.
        untrusted = runners(tmp_path / "untrusted", ["touch", str(ran)], **lease_env(base))
        assert untrusted.wait() == 0 and ran.exists()
        assert f"cannot reach Redis at localhost:{server.port}" in untrusted.text()
        assert "certificate verify failed" in untrusted.text()
        for name, url in (("own-authority", f"{base}?ssl_cert_reqs=required&ssl_ca_certs={server.ca}"),
                          ("unchecked", f"{base}?ssl_cert_reqs=none")):
            runner = runners(tmp_path / name, ["sleep", "1"], **lease_env(url))
            wait_until(runner.started.exists)
            assert server.client().exists(KEY), name
            assert runner.wait() == 0
            assert not server.client().exists(KEY) and "liveness" not in runner.text()
    finally:
        server.stop()


def test_the_daemon_gives_the_url_on_a_pipe_that_no_action_can_read(redis_servers, tmp_path):
    """As the daemon starts a follow-up (actions.start with the coordination's RunLease): the
    runner takes its lease with the URL it read from an inherited pipe, and neither the
    action's environment nor its parent's (/proc/$PPID/environ, readable by the same user)
    holds the URL or its password."""
    from sidecar.coordination.base import RunLease

    server = redis_servers(password="right-horse")
    probe = ("tr '\\0' '\\n' < /proc/$PPID/environ; echo ---; env; "
             "ls -l /proc/$$/fd /proc/$PPID/fd; sleep 1")
    log = tmp_path / "logs" / "fired.log"
    log.parent.mkdir()
    lease = RunLease({"SIDECAR_RUN_LEASE": KEY, "SIDECAR_RUN_WAKE": WAKE,
                      "SIDECAR_RUN_LIBRARY": library()}, server.url.encode())
    proc = actions.start(["sh", "-c", probe], tmp_path, {"PATH": os.environ["PATH"]}, log,
                         lease=lease)
    wait_until(lambda: server.client().exists(KEY))  # the runner holds its lease
    owner = json.loads(server.client().get(KEY))
    assert owner["pid"] == proc.pid
    wait_until(lambda: log.with_name(log.name + ".status").exists())
    printed = log.read_text()
    assert "SIDECAR_COORDINATION_FD=" in printed  # the runner's own environment, as the action reads it
    assert "right-horse" not in printed and "SIDECAR_COORDINATION_URL" not in printed
    assert "pipe:[" not in printed  # read and closed by the runner, never the action's
    assert json.loads(log.with_name(log.name + ".status").read_text()) == {"exit": 0}
    wait_until(lambda: not server.client().exists(KEY))
