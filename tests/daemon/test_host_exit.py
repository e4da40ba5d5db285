"""A host that dies sends no end: the daemon watches the host's process and ends its sessions."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import orjson
import pytest

from helpers import SIDECAR, read_json, session_record, wait_until
from sidecar import emit as emit_mod
from sidecar import procwatch
from sidecar.base.proc import start_time
from sidecar.inbox.events import parse
from sidecar.sessions.rules import Applied, apply, new_record

# A stand-in host: it runs its hooks the way Claude Code and Codex do (`sh -c`, payload on
# stdin), then lives on until it is killed: between turns, or mid-turn for a session whose
# id says `busy`.
HOST = """
import subprocess, sys, time
sidecar, root = sys.argv[1], sys.argv[2]
for sid in sys.argv[3:]:
    for name in ("SessionStart", "UserPromptSubmit") + (() if "busy" in sid else ("Stop",)):
        payload = '{"hook_event_name": "%s", "session_id": "%s", "cwd": "%s"}' % (name, sid, root)
        subprocess.run(["sh", "-c", sidecar + " emit --source claude-code"], input=payload.encode(),
                       check=True, capture_output=True)
print("ready", flush=True)
time.sleep(3600)
"""


def start_host(workspace, *sessions):
    host = subprocess.Popen([sys.executable, "-c", HOST, SIDECAR, str(workspace.root), *sessions],
                            stdout=subprocess.PIPE, start_new_session=True)
    assert host.stdout is not None and host.stdout.readline() == b"ready\n"
    return host


def stop_host(host) -> None:
    host.kill()
    host.wait()
    host.stdout.close()


def test_emit_names_the_host_not_the_shell_that_ran_the_hook(workspace):
    host = start_host(workspace, "s-who")
    try:
        [dropped] = [p for p in workspace.inbox.glob("*.json")][:1]
        meta = orjson.loads(dropped.read_bytes())["sidecarEnvelope"]
        assert meta["hostPid"] == host.pid
        assert meta["hostStart"] == start_time(host.pid)
    finally:
        stop_host(host)


def test_a_killed_hosts_sessions_end_as_host_exited_and_a_live_hosts_never(
        workspace, start_daemon):
    daemon = start_daemon(workspace.root)
    host = start_host(workspace, "s-a", "s-busy")  # two sessions in one process (Codex /new)
    alive = start_host(workspace, "s-alive")
    try:
        wait_until(lambda: all(session_record(workspace, s) for s in ("s-a", "s-busy", "s-alive")))
        # The daemon restarts while the hosts live: nothing is completed, the watch comes back.
        assert daemon.stop() == 0
        start_daemon(workspace.root)
        time.sleep(0.5)  # the new leader has re-armed; a wrong completion would come at once
        assert all(session_record(workspace, s)["status"] == "active" for s in ("s-a", "s-busy", "s-alive"))
        os.killpg(host.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        wait_until(lambda: all(session_record(workspace, s)["status"] == "completed"
                               for s in ("s-a", "s-busy")), 2)
        took = time.monotonic() - killed_at
        # The batch saves the records, then the bindings: wait for its end, not its middle.
        wait_until(lambda: set(read_json(workspace.bindings_file)["bindings"]["claude-code"])
                   == {"s-alive"}, 2)
        for s in ("s-a", "s-busy"):
            assert session_record(workspace, s)["metadata"]["sidecar"]["completionReason"] == "host-exited"
        bindings = read_json(workspace.bindings_file)["bindings"]["claude-code"]
        assert set(bindings) == {"s-alive"}
        hooks = read_json(workspace.hooks_file)
        # Between turns: follow-ups as for a normal end. Killed mid-turn: the user's agent
        # was stopped, and nothing resumes it.
        assert {e["sessionId"] for e in hooks["pending"]} == {"s-a"}
        assert [(f["sessionId"], f["status"]) for f in hooks["hooks"]["post-task"]["history"]] \
            == [("s-busy", "skipped: the last turn was interrupted")]
        assert session_record(workspace, "s-alive")["status"] == "active"
        assert took < 2
    finally:
        for proc in (host, alive):
            stop_host(proc)


def test_a_host_that_died_while_no_daemon_ran_is_ended_at_start(workspace, start_daemon):
    # As after a reboot: the host died (one session between turns, one mid-turn) while no
    # daemon ran; the next daemon applies the inbox, then finds the host gone.
    stop_host(start_host(workspace, "s-gone", "s-gone-busy"))
    start_daemon(workspace.root)
    for session in ("s-gone", "s-gone-busy"):
        wait_until(lambda session=session: (session_record(workspace, session) or {}).get("status") == "completed", 5)
        assert session_record(workspace, session)["metadata"]["sidecar"]["completionReason"] == \
            "host-exited"
    wait_until(lambda: read_json(workspace.hooks_file)["hooks"]["post-task"]["history"], 5)
    hooks = read_json(workspace.hooks_file)
    assert [e["sessionId"] for e in hooks["pending"]] == ["s-gone"]
    assert [(f["sessionId"], f["status"]) for f in hooks["hooks"]["post-task"]["history"]] == \
        [("s-gone-busy", "skipped: the last turn was interrupted")]


def test_an_exit_report_for_an_earlier_process_does_not_end_a_resumed_session(workspace):
    def event(name, pid, **extra):
        body = {"event": name, "session_id": "s", "host": "h", "ts": time.time(),
                "hostPid": pid, "hostStart": 7, **extra}
        return parse(orjson.dumps(body), f"{time.time_ns()}-{name}.json", 0.0)

    out = Applied()
    start = event("SessionStart", 100)
    rec = new_record(("h", "s"), "hid", "/r", start, out)
    apply(rec, start, out)
    apply(rec, event("SessionStart", 200, source="resume"), out)  # resumed in a new process
    apply(rec, event("session-end", 100, reason="host-exited"), out)
    assert rec.active and rec.sidecar.host_pid == 200
    apply(rec, event("session-end", 200, reason="host-exited"), out)
    assert not rec.active and rec.sidecar.completion_reason == "host-exited"


@pytest.mark.parametrize("form", ["stdin", "event"])
def test_only_hook_payloads_report_a_host(workspace, form):
    options = {"source": "x", "session_id": "s"}
    data, _, _ = emit_mod.build_event(options, ["{}"] if form == "stdin" else ["session-start"])
    meta = orjson.loads(data)["sidecarEnvelope"]
    assert ("hostPid" in meta) == (form == "stdin")


def test_without_pidfds_the_watch_still_sees_an_exit(monkeypatch):
    """Where os.pidfd_open is missing (macOS, old kernels), a check every second stands in."""
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    exited = threading.Event()
    seen = []
    watch = procwatch.ProcessWatch(lambda proc: (seen.append(proc), exited.set()))
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    try:
        proc = procwatch.current(child.pid)
        watch.watch(proc)
        assert not exited.is_set() and procwatch.is_alive(proc)
        child.wait()
        assert exited.wait(5) and seen == [proc]
    finally:
        watch.stop()
