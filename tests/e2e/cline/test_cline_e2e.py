"""End to end with the real Cline CLI 3.0.65, offline against a loopback chat-completions stub.

`sidecar integrate cline` writes its hook files into the user's `~/.cline/hooks/`. After its
first run Cline leaves a hub daemon running, and later runs execute inside it: their hooks
name the hub, which never exits, and no hook ends the session. The session is completed by
what Cline writes (its manifest's `status`), a command follow-up (the notification) runs once
for it, and `post-task`'s resume is skipped, saying why: Cline 3.0.65 cannot resume without a
terminal. Separately, a SIGKILL of the hub (the process the record holds) mid-turn ends the
session through the process watch.

Cline's hub listens on one port for every HOME (25463 by default): each test gives it a port
of its own (CLINE_HUB_PORT) and kills the hubs on that port, by pid, at teardown.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import npm_host, read_json, run_cli, wait_until
from sidecar.base.ids import harness_id
from stubs.chat_stub import ChatStub
from stubs.host_exit import active_session, running_host
from stubs.lifecycle import post_task, prepare_post_task, trace_events
from support.redis_server import free_port

CLINE_VERSION = "3.0.65"
NO_RESUME = ("skipped: Cline 3.0.65 cannot resume a session without a terminal "
             "(`cline --id` needs one); not resumed")


def hubs(port: int) -> list[int]:
    """The pids of Cline hub daemons listening on `port`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--cline-hub-daemon" in args and str(port).encode() in args:
            found.append(int(entry.name))
    return found


@pytest.fixture
def cline_env(tmp_path):
    """A home of its own, Cline configured for the stub, its own hub port; its hubs killed."""
    cline = npm_host("cline", CLINE_VERSION, "cline")
    port = free_port()
    (tmp_path / "home").mkdir()
    (tmp_path / "tmp").mkdir()
    env = {"HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"),
           "CLINE_HUB_PORT": str(port)}
    with ChatStub() as stub:
        auth = subprocess.run([str(cline), "auth", "-p", "openai-compatible", "-k", "x", "-m",
                               "stub-model", "-b", stub.url], env={**os.environ, **env},
                              capture_output=True, text=True, timeout=120)
        assert auth.returncode == 0, auth.stderr[-2000:]
        try:
            yield cline, env, stub, port
        finally:
            for pid in hubs(port):
                os.kill(pid, signal.SIGKILL)


def run_cline(cline, cwd, env, prompt) -> subprocess.CompletedProcess:
    return subprocess.run([str(cline), prompt], cwd=cwd, env={**os.environ, **env},
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)


def start_hub(cline, tmp_path, env, port) -> int:
    """A first run outside any workspace leaves the hub running, as it does for users."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    warm = run_cline(cline, elsewhere, env, "warm up")
    assert warm.returncode == 0, warm.stderr[-2000:]
    [hub] = wait_until(lambda: hubs(port), 30, 0.2)
    return hub


def integrate(workspace, env) -> None:
    result = run_cli("integrate", "cline", cwd=workspace.root, env=env)
    assert result.returncode == 0, result.stderr
    hooks = Path(env["HOME"]) / ".cline" / "hooks"
    assert (hooks / "TaskStart").stat().st_mode & 0o100


def the_session(home: Path, root: Path) -> dict:
    """The manifest Cline wrote for its run in `root`."""
    for path in (home / ".cline" / "data" / "sessions").glob("*/*.json"):
        if not path.name.endswith(".messages.json"):
            manifest = read_json(path)
            if manifest.get("cwd") == str(root):
                return manifest
    raise AssertionError(f"no Cline session ran in {root}")


def test_a_cline_session_ends_by_its_manifest_notifies_once_and_is_not_resumed(
        workspace, start_daemon, cline_env, tmp_path):
    cline, env, stub, port = cline_env
    prepare_post_task(workspace, delay=1)
    notified = tmp_path / "notified.txt"
    added = run_cli("hooks", "add", "notify", "--delay", "0", "--", sys.executable, "-c",
                    "import sys; open(sys.argv[1], 'a').write(' '.join(sys.argv[2:]) + '\\n')",
                    str(notified), "{session_id}", "{host}", cwd=workspace.root)
    assert added.returncode == 0, added.stderr
    integrate(workspace, env)
    hub = start_hub(cline, tmp_path, env, port)
    start_daemon(workspace.root, env=env)
    first = run_cline(cline, workspace.root, env, "remember banana")
    assert first.returncode == 0, first.stderr[-3000:]
    manifest = the_session(Path(env["HOME"]), workspace.root)
    session_id = manifest["session_id"]
    assert manifest["pid"] == hub  # the run was the hub's, which lives on
    path = workspace.session_dir(harness_id("cline", session_id)) / "session.json"
    wait_until(lambda: path.exists() and read_json(path)["status"] == "completed"
               and notified.exists() and post_task(workspace)["history"], 60, 0.2)
    record = read_json(path)
    meta = record["metadata"]["sidecar"]
    assert record["metadata"]["hostSessionId"] == session_id
    assert meta["completionReason"] == "completed"  # Cline's word, from its manifest
    assert meta["hostPid"] == hub and hubs(port) == [hub]  # the hub is still running
    assert meta["cwd"] == str(workspace.root)
    usage = the_session(Path(env["HOME"]), workspace.root)["metadata"]["usage"]
    assert meta["tokens"]["input"] == usage["inputTokens"] > 0
    assert meta["tokens"]["output"] == usage["outputTokens"] > 0
    assert "remember banana" in json.dumps([r["body"] for r in stub.requests])
    time.sleep(3)  # a follow-up queued again would be due, and fired, by now
    assert notified.read_text() == f"{session_id} cline\n"
    assert [(h["sessionId"], h["status"]) for h in post_task(workspace)["history"]] == \
        [(session_id, NO_RESUME)]
    assert read_json(workspace.hooks_file)["pending"] == []
    trace = trace_events(path)
    assert trace.count("session.completed") == 1 and "turn.end" in trace


def test_a_cline_hub_killed_mid_turn_ends_its_session_by_the_process_watch(
        workspace, start_daemon, cline_env, tmp_path):
    cline, env, stub, port = cline_env
    integrate(workspace, env)
    hub = start_hub(cline, tmp_path, env, port)
    daemon = start_daemon(workspace.root, env=env)
    stub.hold()  # the turn goes on until the hub is killed
    with running_host([cline, "a long task"], workspace.root, env):
        path = wait_until(lambda: active_session(workspace, "cline"), 60, 0.1)
        wait_until(lambda: read_json(path)["metadata"]["sidecar"].get("hostPid"), 10)
        # The record holds the hub's pid: the run executes inside it, not in `cline`.
        assert read_json(path)["metadata"]["sidecar"]["hostPid"] == hub
        assert daemon.stop() == 0  # a restart while the hub lives ends nothing
        start_daemon(workspace.root, env=env)
        time.sleep(2)  # the new leader asked the manifest (running) and re-armed its watch
        assert read_json(path)["status"] == "active"
        os.kill(hub, signal.SIGKILL)
        wait_until(lambda: read_json(path)["status"] == "completed", 10, 0.05)
    # The process watch's end, not the manifest's: Cline wrote no end of a killed hub's run.
    assert read_json(path)["metadata"]["sidecar"]["completionReason"] == "host-exited"
    wait_until(lambda: read_json(workspace.bindings_file)["bindings"].get("cline", {}) == {}, 5)
    # (The waiting `cline` may start a new hub before it is killed: the teardown kills it.)
