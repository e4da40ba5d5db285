"""What a host, a model or a file said never drives the terminal that shows it: every command
that prints it (`status`, `status --session`, `sessions`, `status --line`, `doctor`, `hooks
list`, `hooks history`) shows its control characters as visible escapes (`\\x1b`), the
commands the launcher answers itself and typer's alike, with sidecar's
own colours left as they are. `--json` stays JSON, which escapes them itself."""

from __future__ import annotations

import re
import time

import orjson
import pytest

from helpers import invoke, read_json, run_cli
from sidecar.layout import Workspace
from support.stores import ingest

# A clipboard write (OSC 52, ended by BEL), a C1 CSI (U+009B) and a bare clear-screen: each
# is something a terminal acts on.
OSC52 = "\x1b]52;c;SGVsbG8=\x07"
EVIL = f"{OSC52} \x9b2J \x1b[2J"
SHOWN = "\\x1b]52;c;SGVsbG8=\\x07"  # how the clipboard write reads once escaped
OWN_COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # sidecar's own styling (present.Style)
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but tab and newline, DEL, C1
FORCE = {"FORCE_COLOR": "1"}  # sidecar paints its own colours: they must stay theirs


@pytest.fixture
def world(workspace: Workspace) -> Workspace:
    """A session the host ended for a reason carrying the sequences; one still working whose
    last tool is named with them; and a hooks.json (a file a repository may carry) whose
    post-task hook, its prompt file named with them, failed twice, saying them."""
    ws, at = workspace, time.time() - 60  # Claude Code's hooks, applied a second apart
    ingest(ws, "s-end", "session-start", at=at)
    ingest(ws, "s-end", "needs-input", at=at + 1, notification_type="permission_prompt",
           message=f"may I run {EVIL}?")
    ingest(ws, "s-end", "session-end", at=at + 2, reason=EVIL)
    ingest(ws, "s-tool", "session-start", "turn-start", at=at + 3)
    ingest(ws, "s-tool", "tool-use", at=at + 5, tool_name=EVIL)
    doc = read_json(ws.hooks_file)
    failed = {"at": "2026-01-02T03:04:05.000Z", "status": f"error: {EVIL}",
              "host": "claude-code", "sessionId": "s-end", "log": None}
    doc["hooks"]["post-task"].update(lastStatus=f"error: {EVIL}", promptFile=f"hooks/{EVIL}.md",
                                     lastFiredAt=failed["at"], history=[failed, failed])
    doc["pending"] = []
    ws.hooks_file.write_bytes(orjson.dumps(doc))
    return ws


def status_line(ws: Workspace, payload: bytes | None):
    return run_cli("status", "--line", *([] if payload else ["--root", str(ws.root)]),
                   input=payload or b"", cwd=ws.root)


def painted(run, *args: str):
    """`args` about the workspace, run by `run` with sidecar's colours on."""
    return lambda ws: run(*args, "--root", str(ws.root), env=FORCE)


# Each surface: how it is run (fast: the real launcher, as a shell runs it; full: the command
# line in process), and whether the sequences reach it (the status line's counts say none).
SURFACES = {
    "status": (painted(run_cli, "status"), True),
    "status (full)": (painted(invoke, "status"), True),
    "status --session": (painted(run_cli, "status", "--session", "s-end"), True),
    "status --session (full)": (painted(invoke, "status", "--session", "s-end"), True),
    "sessions": (painted(run_cli, "sessions"), True),
    "sessions (full)": (painted(invoke, "sessions", "--limit", "9"), True),
    "status --line, a host's JSON": (lambda ws: status_line(ws, orjson.dumps(
        {"session_id": "s-tool", "cwd": str(ws.root)})), True),
    "status --line, counts": (lambda ws: status_line(ws, None), False),
    "doctor": (lambda ws: invoke("doctor", cwd=ws.root, env=FORCE), True),
    "hooks list": (painted(invoke, "hooks", "list"), True),
    "hooks history": (painted(invoke, "hooks", "history"), True),
}


@pytest.mark.parametrize("surface", SURFACES)
def test_no_control_sequence_from_a_host_or_a_file_reaches_the_terminal(world, surface):
    run, carries = SURFACES[surface]
    done = run(world)
    out = done.stdout.decode()
    assert out.strip(), done
    mine = OWN_COLOUR.sub("", out)
    assert RAW.findall(mine) == [], f"{surface} printed raw control characters:\n{out!r}"
    if carries:  # shown, escaped: never dropped without a word
        assert SHOWN[:12] in mine, out
    assert RAW.findall(OWN_COLOUR.sub("", done.stderr.decode())) == [], done.stderr


def test_the_status_line_shows_a_tool_named_with_a_clipboard_write_escaped(world):
    done = status_line(world, orjson.dumps({"session_id": "s-tool", "cwd": str(world.root)}))
    assert done.stdout.decode().startswith("working "), done
    assert "(\\x1b]52;c;SGVsbG8=\\x07 \\x9b2J)" in done.stdout.decode()


def test_status_json_stays_json_with_every_value_exact(world):
    for run in (run_cli, invoke):
        done = run("status", "--json", "--root", str(world.root))
        assert RAW.findall(done.stdout.decode()) == []  # \u001b, \u009b: the same JSON
        [report] = orjson.loads(done.stdout)["workspaces"]
        [hook] = [h for h in report["hooks"] if h["id"] == "post-task"]
        assert hook["lastStatus"] == f"error: {EVIL}"
        done = run("status", "--session", "s-end", "--json", "--root", str(world.root))
        assert RAW.findall(done.stdout.decode()) == []
        assert orjson.loads(done.stdout)["completionReason"] == EVIL
        for args in (("sessions", "--json"), ("hooks", "list", "--json"),
                     ("hooks", "history", "--json")):
            done = run(*args, "--root", str(world.root))
            assert done.returncode == 0 and RAW.findall(done.stdout.decode()) == [], args
            orjson.loads(done.stdout)


def test_the_colours_are_sidecars_own_and_the_data_is_escaped_inside_them(world):
    out = run_cli("status", "--session", "s-end", "--root", str(world.root),
                  env=FORCE).stdout.decode()
    assert "\x1b[1msession    claude-code s-end" in out  # its own colour, as it was
    ended = re.escape(f"{SHOWN} \\x9b2J \\x1b[2J")  # the reason, whole and escaped
    assert re.search(f"^status     completed .*: {ended}$", out, re.M), out
    assert f"\x1b[31merror: {SHOWN}" in out  # escaped first, then painted
    assert EVIL not in out and OSC52 not in out
