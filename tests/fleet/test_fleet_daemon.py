"""A real daemon publishes its sessions to a real redis-server's fleet; `sessions --fleet`
lists them (with a MACHINE column), a machine that stops is unreachable, an ACL user's
password is never shown, and a TLS server works."""

from __future__ import annotations

import time

import orjson
import pytest

from helpers import emit, fleet_config, run_cli, wait_until

pytestmark = pytest.mark.daemon


def fleet_listing(*args: str) -> dict:
    done = run_cli("sessions", "--fleet", "--json", *args)
    assert done.returncode == 0, done.stderr.decode()
    return orjson.loads(done.stdout)


def test_a_daemons_sessions_are_listed_by_sessions_fleet_with_its_machine(
        workspace, config_home, redis_server, start_daemon):
    fleet_config(config_home, redis_server.url)
    daemon = start_daemon(workspace.root)
    emit(workspace.root, None, "session-start", "--session-id", "s-fleet", "--source", "claude-code")
    emit(workspace.root, None, "turn-start", "--session-id", "s-fleet", "--source", "claude-code")
    began = time.monotonic()

    def working():
        doc = fleet_listing()
        return doc if [(s["machine"], s["sessionId"], s["state"]) for s in doc["sessions"]] \
            == [("laptop", "s-fleet", "working")] else None

    doc = wait_until(working, 10)
    print(f"listed {time.monotonic() - began:.2f}s after the event")
    assert doc["sessions"][0]["reachable"] is True
    assert doc["machines"][0]["name"] == "laptop" and doc["machines"][0]["reachable"]
    text = run_cli("sessions", "--fleet").stdout.decode()
    heading, line = text.splitlines()[:2]
    assert heading.split()[:2] == ["MACHINE", "HOST"]
    assert line.split()[:3] == ["laptop", "claude-code", "s-fleet"]

    status = run_cli("status", "--root", str(workspace.root)).stdout.decode()
    assert f"fleet         {redis_server.url} as laptop (publishing)" in status

    daemon.stop()  # a machine that stops publishing: unreachable at once, its session kept
    status = run_cli("status", "--root", str(workspace.root)).stdout.decode()
    assert "as laptop: not publishing: no heartbeat from laptop: is its daemon running?" in status
    done = run_cli("sessions", "--fleet")
    assert done.returncode == 0
    assert "sidecar: laptop: unreachable since" in done.stderr.decode()
    assert done.stdout.decode().splitlines()[1].split()[:2] == ["laptop", "(unreachable)"]
    doc = fleet_listing()
    assert doc["sessions"][0]["reachable"] is False and doc["sessions"][0]["state"] == "working"
    assert fleet_listing("--active")["sessions"] == []  # not shown as live


def test_what_is_published_is_the_rows_json_never_a_prompt_and_a_bad_row_is_named(
        workspace, config_home, redis_server, start_daemon):
    fleet_config(config_home, redis_server.url)
    start_daemon(workspace.root)
    prompt = "the secret plan for the release"
    for event in ("SessionStart", "UserPromptSubmit"):
        emit(workspace.root, orjson.dumps({"hook_event_name": event, "session_id": "s-prompt",
                                           "cwd": str(workspace.root), "prompt": prompt}),
             "--source", "claude-code")
    wait_until(lambda: [s["state"] for s in fleet_listing()["sessions"]] == ["working"], 10)
    with redis_server.client() as client:
        published = client.hgetall("sidecar:fleet:rows:laptop")
        assert len(published) == 1 and prompt not in next(iter(published.values()))
        local = orjson.loads(run_cli("sessions", "--json").stdout)["sessions"][0]
        assert set(orjson.loads(next(iter(published.values())))) == set(local)  # sessions --json's row
        # Another machine's word is checked: a row that is not one is named, the rest listed.
        client.hset("sidecar:fleet:rows:mallory", mapping={"x": '{"state": "rm -rf"}', "y": "[1]"})
        client.hset("sidecar:fleet:machines", "mallory", "1 3.5")
    done = run_cli("sessions", "--fleet", "--json")
    doc = orjson.loads(done.stdout)
    assert [s["sessionId"] for s in doc["sessions"]] == ["s-prompt"]
    assert "mallory: a row that cannot be read (not a session's state: 'rm -rf')" in doc["errors"]
    assert any(e.startswith("mallory: unreachable since") for e in doc["errors"])  # no heartbeat


def test_without_a_fleet_sessions_fleet_says_how_to_configure_one(config_home):
    done = run_cli("sessions", "--fleet")
    assert done.returncode == 1
    assert "no fleet is configured: add [fleet]" in done.stderr.decode()


def test_an_acl_users_password_works_and_is_never_shown(
        workspace, config_home, redis_server, start_daemon):
    secret = "fleet-s3cret-Pw"
    with redis_server.client() as admin:
        admin.acl_setuser("fleetuser", enabled=True, passwords=[f"+{secret}"],
                          keys=["sidecar:fleet:*"], channels=["sidecar:fleet:*"],
                          commands=["+@all", "-@dangerous", "+info", "+client"])
    url = redis_server.url.replace("redis://", f"redis://fleetuser:{secret}@")
    fleet_config(config_home, url, machine="ci-box")
    daemon = start_daemon(workspace.root)
    emit(workspace.root, None, "session-start", "--session-id", "s-acl", "--source", "codex")
    wait_until(lambda: [s["sessionId"] for s in fleet_listing()["sessions"]] == ["s-acl"], 10)
    shown = run_cli("sessions", "--fleet")
    assert b"ci-box" in shown.stdout and secret.encode() not in shown.stdout + shown.stderr
    assert "to redis://***:***@127.0.0.1" in daemon.output() and secret not in daemon.output()

    wrong = url.replace(secret, "not-the-password-9")  # refused: said, the password masked
    done = run_cli("sessions", "--fleet", env={"SIDECAR_CONFIG_HOME": str(_with_url(config_home, wrong))})
    assert done.returncode == 1
    assert b"cannot be read" in done.stderr and b"not-the-password-9" not in done.stderr + done.stdout


def _with_url(config_home, url: str):
    """Another user folder whose config.toml's fleet URL is `url`."""
    other = config_home.parent / "other-config"
    other.mkdir(exist_ok=True)
    (other / "config.toml").write_text("")
    fleet_config(other, url)
    return other


def test_a_tls_redis_server_is_published_to_through_rediss(
        workspace, config_home, tmp_path, start_daemon):
    server = tls_redis_server(tmp_path)
    try:
        fleet_config(config_home, server.url, machine="tls-box")
        start_daemon(workspace.root)
        emit(workspace.root, None, "session-start", "--session-id", "s-tls", "--source", "codex")
        wait_until(lambda: [(s["machine"], s["sessionId"]) for s in fleet_listing()["sessions"]]
                   == [("tls-box", "s-tls")], 10)
    finally:
        server.close()


def tls_redis_server(folder):
    """A redis-server that speaks TLS alone, its certificate made by openssl for 127.0.0.1."""
    import subprocess

    from support.redis_server import RedisServer

    certs = folder / "certs"
    certs.mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
                    "subjectAltName=IP:127.0.0.1", "-keyout", str(certs / "key.pem"),
                    "-out", str(certs / "cert.pem")], check=True, capture_output=True)

    class TlsRedis(RedisServer):
        @property
        def url(self) -> str:
            return f"rediss://127.0.0.1:{self.port}/0?ssl_ca_certs={certs / 'cert.pem'}"

        def _argv(self) -> list[str]:
            argv = super()._argv()
            at = argv.index("--port")
            argv[at:at + 2] = ["--port", "0", "--tls-port", str(self.port),
                               "--tls-cert-file", str(certs / "cert.pem"),
                               "--tls-key-file", str(certs / "key.pem"),
                               "--tls-ca-cert-file", str(certs / "cert.pem"), "--tls-auth-clients", "no"]
            return argv

    return TlsRedis(folder / "redis-tls").start()


def test_fire_now_through_the_fleet_fires_on_the_owning_machine_and_a_forged_row_is_refused(
        workspace, config_home, redis_server, start_daemon, tmp_path):
    import dataclasses
    from pathlib import Path

    from sidecar.base.errors import SidecarError
    from sidecar.config import load_config
    from sidecar.fleet.read import source_from_config

    out = tmp_path / "ran"
    assert run_cli("hooks", "disable", "post-task", "--root", str(workspace.root)).returncode == 0
    assert run_cli("hooks", "add", "note", "--delay", "1h", "--root", str(workspace.root), "--",
                   "sh", "-c", f'echo "$SIDECAR_SESSION_ID" >> {out}').returncode == 0
    fleet_config(config_home, redis_server.url)
    daemon = start_daemon(workspace.root)
    for event in ("session-start", "session-end"):
        emit(workspace.root, None, event, "--session-id", "s-fire", "--source", "codex")
    feed = source_from_config(load_config())

    def queued():
        feed.load()
        return next((r for r in feed.rows.values() if r.follow_ups
                     and r.follow_ups[0].state == "queued"), None)

    row = wait_until(queued, 10)
    forged = dataclasses.replace(row, root=Path("/etc"))
    with pytest.raises(SidecarError, match="laptop: /etc is not a workspace this machine serves"):
        feed.act(forged, "fire", time.time())
    assert feed.act(row, "fire", time.time()) == "laptop: note for codex session s-fire is due now; " \
                                                 "the daemon fires it"
    wait_until(out.exists, 10)  # an hour early, by the daemon of the machine that owns it
    assert out.read_text() == "s-fire\n"

    daemon.stop()
    feed.load()
    began = time.monotonic()
    with pytest.raises(SidecarError, match="laptop: unreachable since .*nothing can be asked of it"):
        feed.act(row, "cancel", time.time())
    assert time.monotonic() - began < 1  # said at once, not after waiting for an answer
    feed.stop()
