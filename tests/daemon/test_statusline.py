"""`sidecar status --line` through the real launcher, fed Claude Code's own statusLine payload
(recorded from the real 2.1.328), for a session a real daemon keeps from the recorded hook
payloads, in each state; and tmux's form, counting two workspaces."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import SIDECAR, emit, fixture_payload, read_json, run_cli, wait_until
from sidecar.base.ids import harness_id

SESSION = "5d0f3e8a-4c1b-4e7a-9d2f-6b8e1c0a7f31"


def statusline_payload(root: Path, session: str = SESSION) -> bytes:
    payload = json.loads(fixture_payload("statusline/claude-code-2.1.328.json"))
    text = json.dumps(payload).replace("/home/dev/proj", str(root))
    return json.dumps(json.loads(text) | {"session_id": session}).encode()


def line(root: Path, payload: bytes | None, *args: str, cwd: Path | None = None,
         timeout: float = 30) -> str:
    done = run_cli("status", "--line", *args, input=payload, cwd=cwd or root, timeout=timeout)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    out = done.stdout.decode()
    assert out.endswith("\n")
    return out[:-1]


def send(root: Path, name: str, session: str = SESSION) -> None:
    """A recorded Claude Code hook payload, for this workspace and session, through emit."""
    payload = json.loads(fixture_payload(f"claude-code-2.1.328/{name}.json"))
    given = json.dumps(payload | {"session_id": session, "cwd": str(root)}).encode()
    assert emit(root, given, "--source", "claude-code").returncode == 0


def test_claude_codes_status_line_shows_its_own_session_in_each_state(workspace, start_daemon):
    root = workspace.root
    start_daemon(root)
    given = statusline_payload(root)

    def shown(pattern: str) -> str:
        def matching() -> str | None:
            text = line(root, given, "--source", "claude-code")
            return text if re.fullmatch(pattern, text) else None

        return wait_until(matching, 20, 0.05)

    assert line(root, given, "--source", "claude-code") == "sidecar: not tracked"
    send(root, "SessionStart")
    shown(r"idle( \d+ s)?")
    send(root, "UserPromptSubmit")
    shown(r"working \d+ s")
    send(root, "PostToolUse")
    shown(r"working \d+ s \(Bash\)")  # the tool it last ran
    send(root, "Notification.permission_prompt")
    shown(r"waiting for you \d+ s")
    send(root, "PostToolUse")  # the user allowed it: the tool ran, the wait is over
    shown(r"working \d+ s \(Bash\)")
    send(root, "Stop")
    shown(r"idle \d+ s")
    send(root, "SessionEnd")
    shown(r"ended \d+ s ago · post-task (in \d+ s|due now|running)")  # its follow-up, queued
    # An ended session's line needs no binding, but without --source only a live session's
    # binding names its host.
    assert line(root, given) == "sidecar: not tracked"
    limited = "c0000000-0000-4000-8000-000000000004"
    given = statusline_payload(root, limited)
    send(root, "UserPromptSubmit", session=limited)
    send(root, "StopFailure.rate_limit", session=limited)
    shown(r"usage limit \d+ s")


def test_a_session_outside_any_workspace_prints_an_empty_line(tmp_path):
    assert line(tmp_path, statusline_payload(tmp_path), "--source", "claude-code") == ""


def test_the_users_own_status_line_runs_first_with_the_same_input(workspace, tmp_path):
    theirs = tmp_path / "theirs.sh"
    theirs.write_text("#!/bin/sh\nprintf 'mine: '; cat | head -c 14; echo\n")
    theirs.chmod(0o755)
    payload = statusline_payload(workspace.root)
    text = line(workspace.root, payload, "--source", "claude-code", "--then", str(theirs))
    assert text.splitlines() == ['mine: {"session_id":', "sidecar: not tracked"]
    assert line(workspace.root, payload, "--then", "exit 3") == "sidecar: not tracked"


def test_tmux_counts_the_sessions_of_every_registered_workspace(workspace, start_daemon, tmp_path):
    second = tmp_path / "second"
    second.mkdir()
    assert run_cli("init", str(second)).returncode == 0
    start_daemon(workspace.root, second)
    send(workspace.root, "UserPromptSubmit")
    send(second, "UserPromptSubmit", session="b0000000-0000-4000-8000-000000000002")
    send(second, "Notification.permission_prompt", session="b0000000-0000-4000-8000-000000000002")
    send(second, "SessionEnd", session="b0000000-0000-4000-8000-000000000003")
    expected = "1 working · 1 waiting · 1 queued"
    # tmux runs it with no input: from a folder that is no workspace at all
    wait_until(lambda: line(tmp_path, None) == expected, 20, 0.05)
    # a terminal's stdin, or a pipe that never says anything, changes nothing
    with subprocess.Popen(["sleep", "5"], stdout=subprocess.PIPE) as silent:
        done = subprocess.run([SIDECAR, "status", "--line"], stdin=silent.stdout,
                              capture_output=True, cwd=tmp_path, timeout=10)
        silent.kill()
    assert done.stdout.decode() == expected + "\n"
    assert line(tmp_path, None, "--root", str(second)) == "1 waiting · 1 queued"
    # a live session's host is found from its binding: its line needs no --source
    assert line(workspace.root, statusline_payload(workspace.root)).startswith("working")


def test_a_broken_registry_says_so_and_exits_0(config_home, tmp_path):
    (config_home / "workspaces.json").write_text("[1, 2")
    assert line(tmp_path, None) == "sidecar: registry unreadable"
    (config_home / "workspaces.json").write_text(json.dumps({"workspaces": [str(tmp_path / "gone")]}))
    assert line(tmp_path, None) == "no active sessions"


@pytest.mark.parametrize("launcher", ["bin", "module"])
def test_an_unknown_option_is_said_on_stderr_and_the_line_still_prints(workspace, launcher):
    argv = [SIDECAR] if launcher == "bin" else [sys.executable, "-m", "sidecar"]
    done = subprocess.run([*argv, "status", "--line", "--colour"], input=b"",
                          capture_output=True, cwd=workspace.root, timeout=10)
    assert done.returncode == 0
    assert b"unknown option '--colour'" in done.stderr and done.stdout == b"no active sessions\n"


def test_status_line_help_is_the_command_lines(workspace):
    done = run_cli("status", "--line", "--help")
    assert done.returncode == 0 and b"status bar" in done.stdout


def test_the_workspace_is_the_payloads_not_the_callers(workspace, tmp_path):
    # run from a folder that is no workspace, about a session of one: found there
    assert line(tmp_path, statusline_payload(workspace.root), "--source", "claude-code") \
        == "sidecar: not tracked"


def test_a_broken_hooks_file_a_fifo_or_a_hard_link_is_not_read_and_the_line_says_what_it_can(
        workspace, start_daemon, tmp_path):
    """A hooks.json that does not parse still shows the session's state. A FIFO would block a
    reader that opens it for ever (and so every refresh of the bar); a hard link is some other
    file. Neither is read: the line says what it can without it."""
    root = workspace.root
    daemon = start_daemon(root)
    send(root, "SessionStart")
    send(root, "UserPromptSubmit")
    record = workspace.session_dir(harness_id("claude-code", SESSION)) / "session.json"
    wait_until(lambda: record.exists() and read_json(record)["metadata"]["sidecar"].get("turnOpen"), 20)
    workspace.hooks_file.write_text("{ not json")
    text = line(root, statusline_payload(root), "--source", "claude-code")
    assert re.fullmatch(r"working \d+ s · hooks.json unreadable", text), text
    assert line(root, None) == "1 working · 1 unreadable"

    daemon.stop()  # nothing rewrites the files below while they are looked at
    bindings = root / ".context" / "runtime" / "hooks" / "host-sessions.json"
    bindings.unlink()
    os.mkfifo(bindings)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"pending": []}))
    workspace.hooks_file.unlink()
    os.link(elsewhere, workspace.hooks_file)
    text = line(root, statusline_payload(root), "--source", "claude-code", timeout=20)
    assert re.fullmatch(r"working \d+ s · hooks.json unreadable", text), text
    assert line(root, None, "--root", str(root), timeout=20) == "1 unreadable"
    bindings.unlink()
    os.link(elsewhere, bindings)  # the bindings hard-linked too: the workspace is unreadable
    assert line(root, None, "--root", str(root), timeout=20) == "1 unreadable"


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie no parent has reaped yet counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.parametrize("theirs", [
    # never reads its input, larger than a pipe holds, and a child of its own keeps running
    "echo $$ > {pids}; echo mine; sleep 60 & echo $! >> {pids}; wait",
    # closes its output at once, then keeps running
    "echo $$ > {pids}; echo mine; exec >&-; exec sleep 60",
    # exits at once, but a child it left behind holds its output open
    "echo $$ > {pids}; echo mine; (sleep 60 & echo $! >> {pids})",
])
def test_a_users_command_that_hangs_is_stopped_at_its_deadline(workspace, tmp_path, theirs):
    pids = tmp_path / "pids"
    payload = json.loads(statusline_payload(workspace.root)) | {"padding": "x" * (1 << 20)}
    try:
        done = run_cli("status", "--line", "--then", theirs.format(pids=pids),
                       input=json.dumps(payload).encode(), cwd=workspace.root, timeout=30)
        assert done.returncode == 0 and done.stderr == b"", done.stderr
        assert done.stdout.decode().splitlines() == ["mine", "sidecar: not tracked"]
        started = [int(pid) for pid in pids.read_text().split()]
        assert started and wait_until(lambda: not any(alive(pid) for pid in started), 5)
    finally:  # a test that fails leaves nothing running either
        for pid in [int(p) for p in pids.read_text().split()] if pids.exists() else []:
            if alive(pid):
                os.kill(pid, 9)
