"""opencode's permission ask, through the real plugin run by node: a needs-input event."""

from __future__ import annotations

from helpers import FIXTURES
from sidecar.inbox.events import parse
from sidecar.views import activity
from sidecar.vocabulary import EventKind
from support.node_plugin import run_opencode_plugin

NODE_HARNESS = """
import fs from "node:fs"
const [plugin, ...files] = process.argv.slice(2)
const { SidecarPlugin } = await import(plugin)
const hooks = await SidecarPlugin({ directory: process.cwd() })
for (const file of files) await hooks.event({ event: JSON.parse(fs.readFileSync(file, "utf8")) })
"""


def test_opencodes_permission_ask_is_dropped_as_needs_input(workspace, tmp_path):
    folder = FIXTURES / "opencode-1.18.33"
    run_opencode_plugin(workspace.root, tmp_path, NODE_HARNESS, str(folder / "permission.asked.json"),
                        str(folder / "permission.replied.json"))
    dropped = [parse(p.read_bytes(), p.name, 0.0) for p in sorted(workspace.inbox.glob("*.json"))]
    asks = [e for e in dropped if e.kind is EventKind.NEEDS_INPUT]
    assert len(asks) == 1
    assert asks[0].session_id == "ses_dd4eb75bdffeiTFtf99JBU1lex"
    assert (asks[0].input_kind, asks[0].input_message) == ("permission", "bash: echo hello-from-stub")
    assert activity._asks(asks[0].input_kind) == "asked for permission"
