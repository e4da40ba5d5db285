"""A registry (`workspaces.json`) that is a FIFO or some other file that is not a regular one is
refused by every reader at once: a read of a FIFO waits for a writer that may never come, and
a status bar or a host's hook would wait with it."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import run_cli, wait_until
from support.node_plugin import run_opencode_plugin

TIMEOUT = 10  # seconds: far more than a refusal takes; a read of the FIFO never ends
# The plugin, loaded in the workspace as opencode loads it, told of a new session.
SESSION_CREATED = """
const { SidecarPlugin } = await import(process.argv[2])
const hooks = await SidecarPlugin({ directory: process.cwd() })
await hooks.event({ event: { type: "session.created",
                             properties: { info: { id: "ses_1", directory: process.cwd() } } } })
"""


def _fifo(registry: Path) -> Iterator[None]:
    os.mkfifo(registry)
    yield


def _fifo_with_a_writer(registry: Path) -> Iterator[None]:
    """A writer holds the FIFO open and never writes: a reader's open succeeds at once, and a
    read without O_NONBLOCK waits forever (without a writer, it could end at once on EOF)."""
    os.mkfifo(registry)
    fd = os.open(registry, os.O_RDWR)
    try:
        yield
    finally:
        os.close(fd)


def _socket(registry: Path) -> Iterator[None]:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(registry))
        yield


def _device(registry: Path) -> Iterator[None]:
    registry.symlink_to("/dev/zero")  # endless bytes, through the user's own link
    yield


KINDS = {"FIFO": _fifo, "FIFO with a writer": _fifo_with_a_writer, "socket": _socket,
         "device": _device}


@pytest.fixture(params=list(KINDS.values()), ids=list(KINDS))
def bad_registry(request, workspace, config_home) -> Iterator[Path]:
    registry = config_home / "workspaces.json"
    registry.unlink()
    yield from request.param(registry)


def test_the_status_line_refuses_it(bad_registry):
    result = run_cli("status", "--line", timeout=TIMEOUT)
    assert result.returncode == 0  # a status bar is never failed
    assert result.stdout.decode().strip() == "sidecar: registry unreadable"


@pytest.mark.parametrize("args", [("status", "--all"), ("status", "--all", "--json"),
                                  ("sessions",), ("doctor",), ("reload",)])
def test_the_commands_refuse_it(bad_registry, workspace, args):
    result = run_cli(*args, cwd=workspace.root, timeout=TIMEOUT)
    assert result.returncode != 0
    output = (result.stdout + result.stderr).decode()
    assert "cannot be read" in output and "Traceback" not in output, output


def test_init_and_unregister_refuse_it(bad_registry, workspace, tmp_path):
    new = tmp_path / "new"
    new.mkdir()
    for args in (("init", str(new)), ("unregister", str(workspace.root))):
        result = run_cli(*args, timeout=TIMEOUT)
        assert result.returncode != 0, args
        assert "cannot be read" in result.stderr.decode()


def test_emit_from_a_user_level_hook_refuses_it(bad_registry, workspace):
    """A user-level hook runs emit in every folder: the workspace is then not known to be
    initialised here, so nothing is written and the host goes on."""
    result = run_cli("emit", "--source", "claude-code", cwd=workspace.root, timeout=TIMEOUT,
                     input=b'{"hook_event_name":"SessionStart","session_id":"s1"}')
    assert result.returncode == 0
    assert "Traceback" not in result.stderr.decode()
    assert list(workspace.inbox.glob("*.json")) == []


def test_the_opencode_plugin_refuses_it(bad_registry, workspace, tmp_path):
    run_opencode_plugin(workspace.root, tmp_path, SESSION_CREATED)  # ends, exit status 0
    assert list(workspace.inbox.glob("*.json")) == []


def test_a_daemon_refuses_it_and_serves_on(bad_registry, workspace, config_home, start_daemon):
    daemon = start_daemon()  # no --root: it serves what the registry names
    registry = config_home / "workspaces.json"
    wait_until(lambda: f"the registry {registry} cannot be read" in daemon.output(), TIMEOUT)
    assert daemon.proc.poll() is None
