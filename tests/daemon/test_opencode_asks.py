"""opencode's permission ask, through the real plugin run by node: a needs-input event."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from helpers import FIXTURES
from sidecar.hosts import opencode
from sidecar.inbox.events import parse
from sidecar.sessions import activity
from sidecar.vocabulary import EventKind

NODE_HARNESS = """
import fs from "node:fs"
const [plugin, ...files] = process.argv.slice(2)
const { SidecarPlugin } = await import(plugin)
const hooks = await SidecarPlugin({ directory: process.cwd() })
for (const file of files) await hooks.event({ event: JSON.parse(fs.readFileSync(file, "utf8")) })
"""


def test_opencodes_permission_ask_is_dropped_as_needs_input(workspace, tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed, so the opencode plugin cannot run here")
    plugin = tmp_path / "sidecar.mjs"
    plugin.write_bytes(opencode.plugin_source())  # as `sidecar integrate opencode` installs it
    harness = tmp_path / "harness.mjs"
    harness.write_text(NODE_HARNESS)
    folder = FIXTURES / "opencode-1.18.33"
    result = subprocess.run([node, str(harness), str(plugin), str(folder / "permission.asked.json"),
                             str(folder / "permission.replied.json")],
                            cwd=workspace.root, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    dropped = [parse(p.read_bytes(), p.name, 0.0) for p in sorted(workspace.inbox.glob("*.json"))]
    asks = [e for e in dropped if e.kind is EventKind.NEEDS_INPUT]
    assert len(asks) == 1
    assert asks[0].session_id == "ses_dd4eb75bdffeiTFtf99JBU1lex"
    assert (asks[0].input_kind, asks[0].input_message) == ("permission", "bash: echo hello-from-stub")
    assert activity._asks(asks[0].input_kind) == "asked for permission"
