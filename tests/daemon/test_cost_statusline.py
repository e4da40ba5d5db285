"""The session's cost on Claude Code's status line, when asked for (`status --line --cost`),
through the real launcher, for a session a real daemon keeps from recorded hook payloads: its
record given the cost object a turn end records (docs/cost.md). Without --cost the line is as
it was; a cost not known names no amount. The line still loads nothing but the standard library
and the modules it reads through (views/cost.py, only when asked), and a new
`sidecar integrate claude-code --statusline` keeps the --cost a user added."""

from __future__ import annotations

import json
import re
import shlex
import sys

import orjson
from test_imports import launched

from helpers import emit, fixture_payload, run_cli, wait_until
from sidecar.base.ids import harness_id

SESSION = "5d0f3e8a-4c1b-4e7a-9d2f-6b8e1c0a7f31"


def statusline_payload(root) -> bytes:
    payload = json.loads(fixture_payload("statusline/claude-code-2.1.328.json"))
    text = json.dumps(payload).replace("/home/dev/proj", str(root))
    return json.dumps(json.loads(text) | {"session_id": SESSION}).encode()


def send(root, name: str) -> None:
    payload = json.loads(fixture_payload(f"claude-code-2.1.328/{name}.json"))
    given = json.dumps(payload | {"session_id": SESSION, "cwd": str(root)}).encode()
    assert emit(root, given, "--source", "claude-code").returncode == 0


def line(root, *args: str) -> str:
    done = run_cli("status", "--line", "--source", "claude-code", *args,
                   input=statusline_payload(root), cwd=root)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    return done.stdout.decode().removesuffix("\n")


def priced(ws, cost: dict) -> None:
    path = ws.session_dir(harness_id("claude-code", SESSION)) / "session.json"
    record = orjson.loads(path.read_bytes())
    record["metadata"]["sidecar"]["cost"] = cost
    path.write_bytes(orjson.dumps(record))


def test_the_status_line_shows_the_sessions_cost_only_when_asked(workspace, start_daemon):
    root = workspace.root
    start_daemon(root)
    send(root, "SessionStart")
    send(root, "UserPromptSubmit")
    wait_until(lambda: re.fullmatch(r"working \d+ s", line(root)), 20, 0.05)
    priced(workspace, {"usd": 0.4213, "source": "table", "models": ["claude-sonnet-4-5"],
                       "unpriced": [], "days": {}})
    assert re.fullmatch(r"working \d+ s · \$0\.42", line(root, "--cost"))
    assert re.fullmatch(r"working \d+ s", line(root))  # not asked: as it was
    # Asked, it loads one module more than the line always does (test_imports.py), and no
    # module outside the standard library.
    result, loaded = launched("status", "--line", "--source", "claude-code", "--cost", check=True,
                              input=statusline_payload(root).decode(), cwd=root)
    assert result.stdout.endswith(" · $0.42\n")
    assert sorted(m for m in loaded if m.startswith("sidecar.views.")) == [
        "sidecar.views.activity", "sidecar.views.cost", "sidecar.views.line"]
    assert [m for m in loaded if m.split(".")[0] not in (*sys.stdlib_module_names, "sidecar")] == []
    priced(workspace, {"usd": None, "source": "unknown", "models": [], "unpriced": [],
                       "days": {}, "why": "the host names no model"})
    assert re.fullmatch(r"working \d+ s", line(root, "--cost"))  # unknown: no amount, never $0


def test_integrating_again_keeps_the_cost_the_user_asked_for(workspace, tmp_path):
    from support.user_files import run, user_env

    env = user_env(tmp_path)
    local = workspace.root / ".claude" / "settings.local.json"
    assert run("integrate", "claude-code", "--statusline", cwd=workspace.root, env=env).returncode == 0
    data = json.loads(local.read_text())
    data["statusLine"]["command"] += " --cost"  # by hand, as docs/guide/status-line.md says
    local.write_text(json.dumps(data, indent=2) + "\n")
    again = run("integrate", "claude-code", "--statusline", cwd=workspace.root, env=env)
    assert again.returncode == 0, again.stderr
    command = json.loads(local.read_text())["statusLine"]["command"]
    assert shlex.split(command)[1:] == ["status", "--line", "--source", "claude-code", "--cost"]
