"""`[fleet]` in config.toml, checked as it is read; this machine's default name; how an
unreachable machine is said; and the MACHINE column `sessions --fleet` adds."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from sidecar.base.words import Style
from sidecar.cli.sessions import render
from sidecar.config import ConfigError, load_config
from sidecar.fleet.read import source_from_config, unreachable_text
from sidecar.fleet.settings import resolve, this_machine
from sidecar.views.activity import Activity, State
from sidecar.views.sessions import SessionRow


def fleet_of(tmp_path: Path, table: str):
    config = tmp_path / "config.toml"
    config.write_text("[fleet]\n" + table)
    return load_config(config)


def test_a_fleet_table_is_read_with_its_defaults(tmp_path):
    settings = resolve(fleet_of(tmp_path, 'url = "rediss://:pw@redis.example:6380/2"\n').fleet)
    assert settings is not None
    assert (settings.url, settings.machine, settings.heartbeat) == \
        ("rediss://:pw@redis.example:6380/2", this_machine(), 2.0)
    assert settings.unreachable_after == 3.5  # a beat and 1.5 s
    named = resolve(fleet_of(tmp_path, 'url = "unix:///run/r.sock"\nmachine = "ci-7"\nheartbeat = 0.5\n').fleet)
    assert named is not None and (named.machine, named.heartbeat) == ("ci-7", 0.5)
    assert resolve(load_config(tmp_path / "absent.toml").fleet) is None  # no fleet: nothing published


@pytest.mark.parametrize(("table", "said"), [
    ('url = "http://redis:6379"\n', "fleet.url must start with redis://, rediss://, unix://"),
    ('url = "redis://r"\nmachine = "my laptop"\n', "fleet.machine must be a host name's"),
    ('url = "redis://r"\nmachine = "a:b"\n', "fleet.machine must be a host name's"),
    ('url = "redis://r"\nheartbeat = 0\n', "fleet.heartbeat must be a number of seconds"),
    ('url = "redis://r"\nheartbeat = true\n', "fleet.heartbeat must be a number of seconds"),
    ('url = "redis://r"\npassword = "x"\n', "[fleet] takes heartbeat, machine, url"),
])
def test_a_bad_fleet_table_is_named(tmp_path, table, said):
    with pytest.raises(ConfigError, match="config.toml: ") as raised:
        fleet_of(tmp_path, table)
    assert said in str(raised.value)


def test_this_machines_name_is_its_host_name_made_fit_for_a_key(monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "dev-box.example.com")
    assert this_machine() == "dev-box.example.com"
    monkeypatch.setattr(socket, "gethostname", lambda: "Mac Book (2)")
    assert this_machine() == "Mac-Book--2-"


def test_without_a_fleet_there_is_no_fleet_source_and_it_says_how_to_make_one(tmp_path):
    with pytest.raises(ConfigError, match=r'add \[fleet\] url = "redis://'):
        source_from_config(load_config(tmp_path / "absent.toml"))


def test_an_unreachable_machine_says_since_when_and_when_it_was_last_heard():
    heard = time.mktime((2026, 12, 3, 22, 41, 7, 0, 0, -1))
    assert unreachable_text("laptop", heard, 3.5, now=heard + 60) == \
        "laptop: unreachable since 22:41:10 (last heard 22:41:07)"
    assert unreachable_text("ghost", 0.0, 3.5) == "ghost: unreachable (never heard)"


def row(machine: str, session: str) -> SessionRow:
    now = time.time()
    return SessionRow(root=Path("/w"), host="codex", session_id=session, harness_id=session,
                      started_at=now - 60, updated_at=now, ended_at=None, reason=None,
                      activity=Activity(State.WORKING, now, "", ""), tokens=None, follow_ups=(),
                      cwd=None, machine=machine)


def test_the_fleets_table_has_a_machine_column_and_marks_an_unreachable_machines_rows():
    rows = [row("dev-box", "s-one"), row("laptop", "s-two")]
    painted = render(rows, 2, time.time(), None, Style(True), 100, {"laptop"})
    lines = render(rows, 2, time.time(), None, Style(False), 100, {"laptop"}).splitlines()
    assert lines[0].split()[:2] == ["MACHINE", "HOST"]
    assert lines[1].split()[:3] == ["dev-box", "codex", "s-one"]
    assert lines[2].split()[:4] == ["laptop", "(unreachable)", "codex", "s-two"]
    assert "\x1b[32mworking" in painted  # the live machine's state keeps its colour
    assert "\x1b[2mworking" in painted  # the unreachable one's is dimmed: not live
    assert "MACHINE" not in render(rows, 2, time.time(), None, Style(False), 100)  # not a fleet
