"""Which module may import which, read from the source: storage never reaches up to what
starts processes, and a part never imports the one that wires it."""

from __future__ import annotations

import ast
from pathlib import Path

import sidecar

PACKAGE = Path(sidecar.__file__).parent


def imported(module: str) -> set[str]:
    path = PACKAGE.joinpath(*module.split(".")[1:]).with_suffix(".py")
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_queue_never_imports_what_starts_processes():
    names = imported("sidecar.followups.queue")
    assert not {"sidecar.followups.actions", "sidecar.followups.runner"} & names


def test_the_host_watch_does_not_import_the_workspace_that_uses_it():
    assert "sidecar.daemon.workspace" not in imported("sidecar.daemon.hostwatch")


def test_config_and_the_environment_file_read_only_the_ground_floor():
    for module in ("sidecar.config", "sidecar.envfile", "sidecar.hosts.registry"):
        names = imported(module)
        assert "tomlkit" not in names
        assert not [n for n in names if n.startswith(("sidecar.install", "sidecar.hosts.files",
                                                      "sidecar.cli"))]
