"""A real daemon publishes its sessions to a real redis-server's fleet; `sessions --fleet`
lists them (with a MACHINE column), a machine that stops is unreachable, an ACL user's
password is never shown, and a TLS server works."""

from __future__ import annotations

import time

import orjson
import pytest

from helpers import emit, run_cli, wait_until

pytestmark = pytest.mark.daemon


def fleet_config(config_home, url: str, machine: str = "laptop", heartbeat: float = 0.5) -> None:
    with open(config_home / "config.toml", "a") as config:
        config.write(f'\n[fleet]\nurl = "{url}"\nmachine = "{machine}"\nheartbeat = {heartbeat}\n')


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
    assert doc["machines"][0]["machine"] == "laptop" and doc["machines"][0]["reachable"]
    text = run_cli("sessions", "--fleet").stdout.decode()
    heading, line = text.splitlines()[:2]
    assert heading.split()[:2] == ["MACHINE", "HOST"]
    assert line.split()[:3] == ["laptop", "claude-code", "s-fleet"]

    daemon.stop()  # a machine that stops publishing: unreachable at once, its session kept
    done = run_cli("sessions", "--fleet")
    assert done.returncode == 0
    assert "sidecar: laptop: unreachable since" in done.stderr.decode()
    assert done.stdout.decode().splitlines()[1].split()[:2] == ["laptop", "(unreachable)"]
    doc = fleet_listing()
    assert doc["sessions"][0]["reachable"] is False and doc["sessions"][0]["state"] == "working"
    assert fleet_listing("--active")["sessions"] == []  # not shown as live


def test_without_a_fleet_sessions_fleet_says_how_to_configure_one(config_home):
    done = run_cli("sessions", "--fleet")
    assert done.returncode == 1
    assert "no fleet is configured: add [fleet]" in done.stderr.decode()
