"""The hermes-agent plugin, loaded and invoked by hermes-agent 0.19.0's own PluginManager."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import orjson
import pytest

from helpers import FIXTURES, HOSTS_CACHE, REPO, read_json, wait_until
from sidecar.base.ids import harness_id
from stubs.lifecycle import trace_events

HERMES_VERSION = "0.19.0"

DRIVER = '''
import json, sys
from hermes_cli.plugins import PluginManager

manager = PluginManager()
manager.discover_and_load()
calls = json.load(open(sys.argv[1]))["calls"]
for call in calls:
    if call["hook"] in ("on_session_start", "on_session_end", "on_session_finalize", "on_session_reset"):
        manager.invoke_hook(call["hook"], **call["kwargs"])
print(json.dumps(sorted(name for name, p in manager._plugins.items() if p.enabled)))
'''


def hermes_python() -> Path:
    python = HOSTS_CACHE / f"hermes-agent-{HERMES_VERSION}" / "bin" / "python"
    if not python.exists():
        pytest.skip(f"hermes-agent {HERMES_VERSION} is not installed at {python.parent.parent} "
                    "(tests/install-hosts.sh installs it)")
    return python


def plugin_site(tmp_path: Path) -> Path:
    """sidecar's entry point as an installed distribution declares it, for hermes to find."""
    site = tmp_path / "site"
    info = site / "agent_sidecar-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: agent-sidecar\nVersion: 0.1.0\n")
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'sidecar = "sidecar.hosts.hermes"' in pyproject  # the entry point users get
    (info / "entry_points.txt").write_text("[hermes_agent.plugins]\nsidecar = sidecar.hosts.hermes\n")
    return site


def test_hermes_callbacks_reach_the_daemon_finalize_before_reset(workspace, start_daemon, tmp_path):
    python = hermes_python()
    hermes_home = tmp_path / "hermes"
    hermes_home.mkdir()
    (hermes_home / "config.yaml").write_text("plugins:\n  enabled:\n    - sidecar\n")
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    sequence = FIXTURES / "hermes-agent-0.19.0" / "sequences" / "interactive_A.json"
    env = {**os.environ, "HERMES_HOME": str(hermes_home),
           "PYTHONPATH": f"{plugin_site(tmp_path)}:{REPO}"}
    result = subprocess.run([str(python), str(driver), str(sequence)], cwd=workspace.root, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "sidecar" in orjson.loads(result.stdout.strip().splitlines()[-1])

    dropped = [read_json(p) for p in sorted(workspace.inbox.glob("*.json"))]
    order = [(e["event"], e["session_id"]) for e in dropped]
    old, new = "20261129_074556_8d3d55", "20261129_074608_d28171"
    assert order.index(("on_session_finalize", old)) < order.index(("on_session_reset", new))
    assert all(e["host"] == "hermes" for e in dropped)
    assert None not in [e["session_id"] for e in dropped]

    start_daemon(workspace.root)
    wait_until(lambda: not list(workspace.inbox.glob("*.json")))
    records = {s: read_json(workspace.session_dir(harness_id("hermes", s)) / "session.json")
               for s in (old, new)}
    assert records[old]["status"] == "completed" and records[new]["status"] == "completed"
    assert records[old]["completedAt"] <= records[new]["createdAt"]
    trace = trace_events(workspace.session_dir(records[new]["id"]) / "session.json")
    assert trace[:2] == ["session.created", "session.reset"]
