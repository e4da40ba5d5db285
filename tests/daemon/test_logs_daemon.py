"""`sidecar logs` against a real daemon firing real command follow-ups."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

from helpers import SIDECAR, end_session, read_json, run_cli, use_hooks, wait_until
from sidecar import layout
from sidecar.base.ids import harness_id


def saying(hook_id: str, words: str) -> dict:
    """A command hook that prints `words` and the session it fired for."""
    argv = [sys.executable, "-c", f"import os; print({words!r}, os.environ['SIDECAR_SESSION_ID'])"]
    return {"id": hook_id, "name": hook_id, "event": "session-end", "delaySeconds": 0,
            "promptFile": None, "action": argv, "enabled": True}


def fired(ws, hook_id: str, count: int) -> bool:
    hook = read_json(ws.hooks_file)["hooks"][hook_id]
    return len(hook.get("history", [])) >= count and hook.get("lastStatus") == "ok"


def logs(ws, *args: str) -> str:
    result = run_cli("logs", "--root", str(ws.root), *args)
    assert result.returncode == 0, result.stderr
    return result.stdout.decode()


def test_logs_show_the_daemons_lines_and_each_firings_output(workspace, start_daemon):
    use_hooks(workspace, {"hello": saying("hello", "hello from the follow-up"),
                          "other": saying("other", "other hook speaking")})
    start_daemon(workspace.root)
    end_session(workspace.root, "s-first")
    wait_until(lambda: fired(workspace, "hello", 1) and fired(workspace, "other", 1), 20)
    end_session(workspace.root, "s-second")
    wait_until(lambda: fired(workspace, "hello", 2) and fired(workspace, "other", 2), 20)

    assert layout.daemon_log().is_file()  # the daemon wrote its own log file
    text = logs(workspace)
    rows = text.splitlines()
    assert any("daemon" in r and "serving" in r for r in rows)
    assert any("daemon" in r and "fired hello for claude-code session s-first" in r for r in rows)
    said = [r for r in rows if "hello from the follow-up s-first" in r]
    assert said and said[0].split()[1:3] == ["hello", "s-first"]  # source: hook + session
    # Newest last: the second session's output after the first's, the start before both.
    assert text.index("serving") < text.index("hello from the follow-up s-first") \
        < text.index("hello from the follow-up s-second")
    # The workspace's own path is left out (it is the workspace shown).
    assert str(workspace.root) + ":" not in text

    only_hook = logs(workspace, "other")
    assert "other hook speaking s-first" in only_hook and "hello from" not in only_hook
    assert "fired other for" in only_hook and "fired hello for" not in only_hook
    only_session = logs(workspace, "--session", "s-second")
    assert "hello from the follow-up s-second" in only_session
    assert "s-first" not in only_session
    by_harness_id = logs(workspace, "--session", harness_id("claude-code", "s-second"))
    assert by_harness_id == only_session
    last_two = logs(workspace, "-n", "2").splitlines()
    assert last_two == rows[-2:]


def test_logs_follow_shows_a_new_firing_as_it_happens_and_ctrl_c_exits_0(workspace,
                                                                        start_daemon):
    use_hooks(workspace, {"hello": saying("hello", "followed output")})
    start_daemon(workspace.root)
    with subprocess.Popen([SIDECAR, "logs", "-f", "--root", str(workspace.root)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as follower:
        seen: list[str] = []
        reading = threading.Thread(target=lambda: seen.extend(
            iter(lambda: follower.stdout.readline().decode(), "")), daemon=True)
        reading.start()
        try:
            time.sleep(1)  # it is following before the firing happens
            end_session(workspace.root, "s-live")
            wait_until(lambda: any("followed output s-live" in line for line in seen), 20)
            assert any("fired hello" in line for line in seen)
            follower.send_signal(signal.SIGINT)
            assert follower.wait(10) == 0
            assert b"Traceback" not in follower.stderr.read()
        finally:
            if follower.poll() is None:
                follower.kill()
                follower.wait()
            reading.join(5)


def test_a_workspace_with_no_logs_says_so(workspace):
    result = run_cli("logs", "--root", str(workspace.root))
    assert result.returncode == 0 and result.stdout == b""
    assert b"no log lines in " in result.stderr and b"no follow-up has fired here" in result.stderr


def test_logs_refuse_an_unknown_session_and_a_folder_that_is_no_workspace(workspace, tmp_path):
    unknown = run_cli("logs", "--root", str(workspace.root), "--session", "nobody")
    assert unknown.returncode == 1 and b"no session 'nobody'" in unknown.stderr
    elsewhere = tmp_path / "plain"
    elsewhere.mkdir()
    result = run_cli("logs", "--root", str(elsewhere))
    assert result.returncode == 4 and b"is not a workspace" in result.stderr


def test_a_follow_up_log_behind_a_link_is_never_read(workspace, start_daemon, tmp_path):
    secret = tmp_path / "secret"
    (secret / "hello").mkdir(parents=True)
    (secret / "hello" / "20261201T000000.000Z-s.log").write_text("not yours\n")
    workspace.logs.mkdir(parents=True, exist_ok=True)
    os.symlink(secret, workspace.logs / "hooks")
    result = run_cli("logs", "--root", str(workspace.root))
    assert result.returncode == 0 and b"not yours" not in result.stdout
