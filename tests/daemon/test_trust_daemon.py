"""Nothing a cloned repository ships runs here until this machine's user trusts it.

Those that start real processes; the rest run in process in tests/unit/test_trust.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from freezegun import freeze_time
from test_followups import SID, Harness, ev

from helpers import clone_of, end_session, needs_git, read_json, run_cli, wait_for_written, wait_until
from sidecar.base.proc import start_time
from sidecar.base.timeutil import iso
from sidecar.followups import trust
from sidecar.layout import Workspace


def evil_clone(tmp_path: Path, pwned: Path, with_pending: bool) -> Path:
    """The issue's repro: a repository that commits `.context/runtime/hooks.json` (`git add
    -f`) with a command hook and, optionally, a queue entry that is due already."""
    doc = {"version": 1,
           "hooks": {"post-task": {"id": "post-task", "name": "post-task", "event": "session-end",
                                   "delaySeconds": 1, "promptFile": None,
                                   "action": ["sh", "-c", f"id >> {pwned}"], "enabled": True}},
           "pending": [{"hookId": "post-task", "host": "claude-code", "sessionId": "x1",
                        "dueAt": "2020-01-01T00:00:00Z"}] if with_pending else []}
    return clone_of(tmp_path, "clone", {
        ".context/runtime/hooks.json": orjson.dumps(doc),
        ".context/runtime/inbox/planted.json":
            b'{"event": "session-end", "session_id": "x2", "host": "claude-code"}'}, force=True)


def last_status(ws: Workspace, hook: str = "post-task") -> str | None:
    return read_json(ws.hooks_file)["hooks"][hook].get("lastStatus")


@needs_git
@pytest.mark.slow
@pytest.mark.parametrize("with_pending", [True, False], ids=["due-entry", "no-entry"])
def test_a_cloned_repositorys_command_runs_only_once_trusted_then_exactly_once(
        tmp_path, config_home, start_daemon, with_pending):
    pwned = tmp_path / "PWNED"
    clone = evil_clone(tmp_path, pwned, with_pending)
    ws = Workspace(clone)
    daemon = start_daemon(extra=[])  # the service: serves the registry, picks up new ones
    init = run_cli("init", str(clone))
    assert init.returncode == 0, init.stderr
    out = init.stdout.decode()
    assert "did not write" in out and "runtime.untrusted-" in out
    assert f"  post-task: runs sh -c 'id >> {pwned}'\n" in out
    assert "sidecar hooks trust post-task" in out
    assert "wrote the default hooks" not in out  # the shipped definition was kept
    [aside] = (clone / ".context").glob("runtime.untrusted-*")
    assert (aside / "hooks.json").exists() and (aside / "inbox/planted.json").exists()
    assert read_json(ws.hooks_file)["pending"] == []  # the shipped queue is not adopted
    wait_until(lambda: any(p.get("role") == "leader" for p in map(read_json, ws.instances.glob("*.json"))), 15)
    time.sleep(4)  # the repro ran its command about 3 s after init
    assert not pwned.exists()

    status = run_cli("status", "--root", str(clone))
    assert f"NOT TRUSTED on this machine, so not run:\n      sh -c 'id >> {pwned}'" in status.stdout.decode()
    doctor = run_cli("doctor", cwd=clone)
    assert f"hook post-task (runs sh -c 'id >> {pwned}') is not trusted on this machine" \
        in doctor.stdout.decode()
    assert "sidecar hooks trust post-task" in doctor.stdout.decode()

    end_session(clone, "first")  # a session end: still nothing runs
    wait_until(lambda: last_status(ws) == str(trust.NOT_TRUSTED), 15)
    assert not pwned.exists()

    refused = run_cli("hooks", "trust", "post-task", "--root", str(clone))  # no tty, no --yes
    assert refused.returncode == 1 and b"--yes" in refused.stderr
    trusted = run_cli("hooks", "trust", "post-task", "--yes", "--root", str(clone))
    assert trusted.returncode == 0
    assert f"sh -c 'id >> {pwned}'" in trusted.stdout.decode()  # shown before it is trusted
    assert "NOT TRUSTED" not in run_cli("status", "--root", str(clone)).stdout.decode()

    end_session(clone, "second")
    wait_until(lambda: last_status(ws) == "ok", 15)
    time.sleep(2)  # nothing else is queued: it stays at one run
    assert len(pwned.read_text().splitlines()) == 1
    assert read_json(ws.hooks_file)["pending"] == []
    assert daemon.proc.poll() is None


def test_a_command_hook_the_user_adds_runs_without_a_trust_step(workspace, start_daemon, tmp_path):
    out = tmp_path / "ran"
    added = run_cli("hooks", "add", "note", "--delay", "0", "--root", str(workspace.root), "--",
                    "sh", "-c", f'echo "$SIDECAR_SESSION_ID" >> {out}')
    assert added.returncode == 0, added.stderr
    start_daemon(workspace.root)
    end_session(workspace.root, "mine")
    assert wait_for_written(out, lambda data: data.endswith(b"\n"), 15) == b"mine\n"
    wait_until(lambda: last_status(workspace, "note") == "ok", 15)


def test_a_hand_edited_command_is_not_run_until_trusted_again(workspace, start_daemon, tmp_path):
    out = tmp_path / "ran"
    assert run_cli("hooks", "add", "note", "--delay", "0", "--root", str(workspace.root), "--",
                   "sh", "-c", f"echo first >> {out}").returncode == 0
    doc = read_json(workspace.hooks_file)
    doc["hooks"]["note"]["action"] = ["sh", "-c", f"echo edited >> {out}"]  # a pull, a hand edit
    workspace.hooks_file.write_bytes(orjson.dumps(doc))
    status = run_cli("status", "--root", str(workspace.root), "--json")
    [note] = [h for h in orjson.loads(status.stdout)["workspaces"][0]["hooks"] if h["id"] == "note"]
    assert note["trusted"] is False
    assert f"sh -c 'echo edited >> {out}'" in run_cli("hooks", "list", "--root",
                                                     str(workspace.root)).stdout.decode()
    start_daemon(workspace.root)
    end_session(workspace.root, "one")
    wait_until(lambda: last_status(workspace, "note") == str(trust.NOT_TRUSTED), 15)
    assert not out.exists()
    assert run_cli("hooks", "trust", "note", "--yes", "--root", str(workspace.root)).returncode == 0
    end_session(workspace.root, "two")
    wait_until(lambda: last_status(workspace, "note") == "ok", 15)
    assert out.read_text() == "edited\n"


def test_kill_running_signals_only_what_this_users_sidecar_started(workspace, tmp_path):
    """A run record planted in hooks.json names a process sidecar never started."""
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                              start_new_session=True)
    try:
        doc = read_json(workspace.hooks_file)
        doc["pending"] = [{"hookId": "post-task", "host": "claude-code", "sessionId": "x",
                           "dueAt": "2020-01-01T00:00:00Z", "claimedBy": "someone",
                           "run": {"pid": victim.pid, "start": start_time(victim.pid),
                                   "log": "x.log", "startedAt": "2020-01-01T00:00:00Z"}}]
        workspace.hooks_file.write_bytes(orjson.dumps(doc))
        result = run_cli("hooks", "kill-running", "--root", str(workspace.root))
        assert b"no follow-up action is running" in result.stdout
        time.sleep(0.3)
        assert victim.poll() is None
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait()


def test_a_daemon_that_cannot_become_the_owner_runs_nothing(tmp_path, config_home, monkeypatch):
    """Not root, and the workspace is someone else's: the firing says so and nothing runs."""
    h = Harness(tmp_path)  # the seeded post-task hook, trusted as `sidecar init` trusts it
    h.apply(ev("SessionStart", session=SID), ev("SessionEnd", session=SID, ts=1_795_900_001.0))
    owner_uid = os.stat(h.ws.root).st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner_uid + 4242)
    with freeze_time(iso(1_795_900_030.0)):
        h.fire_due()
    status = h.hook("post-task").last_status
    assert status.startswith(f"error: {h.ws.root} belongs to uid {owner_uid}")
    assert "cannot act as its owner; nothing was run" in status
    assert not list((h.ws.logs / "hooks").rglob("*.log"))  # nothing was started
