"""The registry of workspaces (`workspaces.json`): one that cannot be read is an error
everywhere it is used and is never overwritten; a change to it is taken up live, both ways."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from helpers import emit, run_cli, run_with_open_files, session_record, wait_until
from sidecar.layout import Workspace


def _served(root: Path) -> bool:
    result = run_cli("status", "--root", str(root), "--json")
    return orjson.loads(result.stdout)["workspaces"][0]["served"]


def _trailing_comma(registry: Path, roots: list[Path]) -> None:
    text = orjson.dumps({"workspaces": [str(r) for r in roots]}, option=orjson.OPT_INDENT_2)
    registry.write_bytes(text.replace(b"\"\n  ]", b"\",\n  ]"))
    assert b",\n  ]" in registry.read_bytes()


BROKEN = {
    "trailing comma": _trailing_comma,
    "FIFO": lambda registry, roots: os.mkfifo(registry),
    "not a list": lambda registry, roots: registry.write_bytes(b'{"workspaces": "notalist"}'),
}


@pytest.fixture
def fifty(tmp_path: Path, config_home: Path) -> list[Path]:
    from sidecar import config

    roots = [tmp_path / f"ws{i:02d}" for i in range(50)]
    for root in roots:
        root.mkdir()
    assert run_cli("init", str(roots[0])).returncode == 0
    for root in roots[1:]:  # as `sidecar init` registers them, without 49 more processes
        config.register(root)
    return roots


@pytest.mark.parametrize("breakage", BROKEN.values(), ids=list(BROKEN))
def test_a_registry_that_cannot_be_read_is_an_error_everywhere_and_is_kept(
        breakage, fifty, tmp_path, config_home):
    registry = config_home / "workspaces.json"
    registry.unlink()
    breakage(registry, fifty)
    before = registry.read_bytes() if registry.is_file() else None
    new = tmp_path / "new"
    new.mkdir()
    for args in (["init", str(new)], ["status", "--all"], ["unregister", str(fifty[0])]):
        result = run_cli(*args)
        assert result.returncode != 0, args
        error = result.stderr.decode()
        assert error.count("\n") == 1 and "Traceback" not in error, error
        assert f"the registry {registry} cannot be read" in error
        assert f"the last good copy is {config_home / 'workspaces.last-good.json'}" in error
    doctor = run_cli("doctor", cwd=fifty[0])
    assert doctor.returncode != 0
    assert f"the registry {registry} cannot be read" in doctor.stdout.decode()
    # Nothing was lost: the registry is as it was, and its last good copy names all 50.
    assert (registry.read_bytes() if registry.is_file() else None) == before
    last_good = orjson.loads((config_home / "workspaces.last-good.json").read_bytes())
    assert last_good == {"workspaces": [str(r) for r in fifty]}


def test_a_daemon_says_the_registry_cannot_be_read_and_serves_on(workspace, config_home,
                                                                   start_daemon):
    first = workspace.root
    daemon = start_daemon()
    wait_until(lambda: _served(first))
    registry = config_home / "workspaces.json"
    _trailing_comma(registry, [first])
    wait_until(lambda: f"the registry {registry} cannot be read" in daemon.output(), 15)
    emit(first, None, "session-start", "--session-id", "still", "--source", "x")
    wait_until(lambda: session_record(workspace, "still", "x"), 15)
    registry.write_bytes(orjson.dumps({"workspaces": [str(first)]}))
    wait_until(lambda: "the registry can be read again" in daemon.output(), 15)


def test_a_daemon_started_on_a_registry_that_cannot_be_read_says_so(tmp_path, config_home,
                                                                      start_daemon):
    registry = config_home / "workspaces.json"
    registry.write_bytes(b'{"workspaces": ["/a",]}')
    daemon = start_daemon()
    wait_until(lambda: f"the registry {registry} cannot be read" in daemon.output(), 15)
    assert daemon.proc.poll() is None


def test_thousands_of_dead_entries_are_one_warning_and_need_no_open_files(tmp_path, config_home,
                                                                          workspace):
    live = workspace.root
    dead = [str(tmp_path / "gone" / f"w{i}") for i in range(20_000)]
    registry = config_home / "workspaces.json"
    registry.write_bytes(orjson.dumps({"workspaces": [*dead, str(live)]}))
    log = tmp_path / "daemon.log"
    proc = run_with_open_files(1024, log)
    try:
        wait_until(lambda: _served(live), 30)
    finally:
        proc.terminate()
        proc.wait(15)
    text = log.read_text()
    assert text.count("registered but not a workspace") <= 5
    assert "and 19995 more registered folders are not workspaces" in text
    assert "open files" not in text


@pytest.mark.slow
def test_a_workspace_taken_off_the_registry_is_no_longer_served_live(tmp_path, config_home,
                                                                      start_daemon):
    kept, dropped = tmp_path / "kept", tmp_path / "dropped"
    for root in (kept, dropped):
        root.mkdir()
        run_cli("init", str(root))
    daemon = start_daemon()
    wait_until(lambda: _served(kept) and _served(dropped), 15)
    result = run_cli("unregister", str(dropped))
    assert result.returncode == 0
    assert "stop serving it within seconds" in result.stdout.decode()
    wait_until(lambda: not _served(dropped), 15)
    assert f"{dropped}: no longer registered; stopped serving it" in daemon.output()
    assert _served(kept) and daemon.proc.poll() is None
    # Registered again, it is served again by the same daemon.
    assert run_cli("init", str(dropped)).returncode == 0
    wait_until(lambda: _served(dropped), 15)
    emit(dropped, None, "session-start", "--session-id", "back", "--source", "x")
    wait_until(lambda: session_record(Workspace(dropped), "back", "x"), 15)
