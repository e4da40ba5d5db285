"""The notices people expect, with a real daemon and a loopback receiver (tests/support/
receiver.py): a global notify hook fires for every workspace the daemon serves, and only as the
user wrote it; `sidecar notify setup` sets them up in one command; a turn's end is told at
once, and the idle prompt that follows it tells nothing more; a host killed mid-turn is told
of once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import orjson
import pytest

from helpers import SIDECAR, emit, fixture_payload, read_json, run_cli, session_record, wait_until
from sidecar.layout import Workspace


def second_workspace(tmp_path) -> Workspace:
    root = tmp_path / "second"
    root.mkdir()
    done = run_cli("init", str(root))  # registered, as any workspace the user made
    assert done.returncode == 0, done.stderr
    return Workspace(root)


def drop(ws: Workspace, payload: dict[str, object], host: str = "claude-code") -> None:
    done = emit(ws.root, json.dumps(payload).encode(), "--source", host)
    assert done.returncode == 0, done.stderr


def test_a_global_notify_hook_fires_for_every_registered_workspace_as_the_user_wrote_it(
        tmp_path, workspace, start_daemon, receiver):
    second = second_workspace(tmp_path)
    added = run_cli("hooks", "add", "phone", "--global", "--event", "needs-input",
                    "--notify", f"{receiver.url}/phone")
    assert added.returncode == 0, added.stderr
    assert b"global.phone" in added.stdout
    # A pull brings a hooks.json that names a "global" hook of its own: it never sends.
    doc = read_json(second.hooks_file)
    doc["hooks"]["global.planted"] = {"id": "global.planted", "name": "global.planted",
                                      "event": "needs-input", "delaySeconds": 0,
                                      "action": {"notify": f"{receiver.url}/planted"}}
    second.hooks_file.write_bytes(orjson.dumps(doc))
    daemon = start_daemon(wait_leader=False)  # the registry: both workspaces
    wait_until(lambda: "global.phone" in read_json(second.hooks_file)["hooks"], 15)
    assert "global.planted" not in read_json(second.hooks_file)["hooks"]

    drop(second, {"hook_event_name": "SessionStart", "session_id": "s2", "source": "startup"})
    drop(second, {"hook_event_name": "Notification", "session_id": "s2",
                  "notification_type": "permission_prompt", "message": "may I run make?"})
    [notice] = wait_until(lambda: receiver.at("/phone"), 10)
    body = notice.json()
    assert body["workspace"] == str(second.root) and body["hookId"] == "global.phone"
    assert body["detail"] == "may I run make?"
    shown = run_cli("hooks", "history", "phone", "--global")
    assert str(second.root) in shown.stdout.decode() and "ok" in shown.stdout.decode()

    # A workspace's file that changes its copy's target is written back as the user wrote it.
    doc = read_json(second.hooks_file)
    doc["hooks"]["global.phone"]["action"] = {"notify": f"{receiver.url}/planted"}
    second.hooks_file.write_bytes(orjson.dumps(doc))
    wait_until(lambda: read_json(second.hooks_file)["hooks"]["global.phone"]["action"]
               == {"notify": f"{receiver.url}/phone"}, 10)
    # The user's own file edited by hand (a new target) sends nothing until they trust it.
    mine = read_json(tmp_path / "config" / "hooks.json")
    mine["hooks"]["phone"]["action"] = {"notify": f"{receiver.url}/edited"}
    (tmp_path / "config" / "hooks.json").write_bytes(orjson.dumps(mine))
    wait_until(lambda: read_json(workspace.hooks_file)["hooks"]["global.phone"]["action"]
               == {"notify": f"{receiver.url}/edited"}, 10)
    drop(workspace, {"hook_event_name": "Notification", "session_id": "s1",
                     "notification_type": "permission_prompt", "message": "and now?"})
    wait_until(lambda: read_json(workspace.hooks_file)["hooks"]["global.phone"]["history"], 10)
    [skipped] = read_json(workspace.hooks_file)["hooks"]["global.phone"]["history"]
    assert skipped["status"] == "skipped: not trusted on this machine"
    trusted = run_cli("hooks", "trust", "--global", "phone", "--yes")
    assert trusted.returncode == 0, trusted.stderr
    drop(workspace, {"hook_event_name": "Notification", "session_id": "s1",
                     "notification_type": "permission_prompt", "message": "and now?"})
    [edited] = wait_until(lambda: receiver.at("/edited"), 10)
    assert edited.json()["workspace"] == str(workspace.root)
    assert receiver.at("/planted") == [] and len(receiver.at("/phone")) == 1
    assert daemon.proc.poll() is None


def test_the_end_of_a_turn_is_told_at_once_and_its_idle_prompt_is_not_told_again(
        workspace, start_daemon, receiver):
    set_up = run_cli("notify", "setup", f"{receiver.url}/n")
    assert set_up.returncode == 0, set_up.stderr
    assert run_cli("notify", "setup", f"{receiver.url}/n").stdout.count(b"unchanged") == 5
    start_daemon(workspace.root)
    stop = orjson.loads(fixture_payload("claude-code-2.1.328/Stop.json"))  # the real Stop
    session = str(stop["session_id"])
    for name in ("SessionStart", "UserPromptSubmit"):
        drop(workspace, {"hook_event_name": name, "session_id": session, "prompt": "go"})
    stopped = time.monotonic()
    drop(workspace, stop)
    [finished] = wait_until(lambda: receiver.at("/n"), 10)
    # At once, not with the idle prompt a minute later: measured at 0.2 to 0.6 s from the
    # Stop hook's start (`sidecar emit` included); the bound is loose, as tests never assert
    # speed, and only tells "at once" from "a minute later".
    assert finished.at - stopped < 5.0
    print(f"\nmeasured: Stop -> finished notice {finished.at - stopped:.3f}s")
    body = finished.json()
    assert (body["event"], body["hookId"]) == ("turn-end", "global.finished")
    assert body["title"] == "claude-code finished its turn"
    assert body["lastMessage"] == "All done.\nDONE"
    # What Claude Code sends a minute later, while it waits for the next prompt (recorded):
    drop(workspace, orjson.loads(fixture_payload("claude-code-2.1.328/Notification.idle_prompt.json")))
    wait_until(lambda: (r := session_record(workspace, session))
               and r["metadata"]["sidecar"].get("needsInput"), 10)
    time.sleep(1.5)  # a notice would have come by now (they take about 0.2 s)
    assert len(receiver.at("/n")) == 1
    history = read_json(workspace.hooks_file)["hooks"]["global.waiting"]["history"]
    assert [h["status"] for h in history] == [
        "skipped: an idle prompt after a turn whose end was told already"]


# A stand-in host: it runs its hooks as Claude Code does (`sh -c`, the payload on stdin), starts
# a turn, then works on it until it is killed.
HOST = """
import subprocess, sys
sidecar, root, sid = sys.argv[1:4]
for name in ("SessionStart", "UserPromptSubmit"):
    payload = '{"hook_event_name": "%s", "session_id": "%s", "cwd": "%s"}' % (name, sid, root)
    subprocess.run(["sh", "-c", sidecar + " emit --source claude-code"], input=payload.encode(),
                   check=True, capture_output=True)
print("ready", flush=True)
sys.stdin.read()
"""


@pytest.mark.slow
def test_a_host_killed_mid_turn_is_one_notice_of_the_default_set(workspace, start_daemon, receiver):
    assert run_cli("notify", "setup", f"{receiver.url}/n").returncode == 0
    # A session-end notify hook of the workspace, as it comes: it tells this end too.
    plain = run_cli("hooks", "add", "plain", "--event", "session-end", "--notify",
                    f"{receiver.url}/plain", "--root", str(workspace.root))
    assert plain.returncode == 0, plain.stderr
    start_daemon(workspace.root)
    host = subprocess.Popen([sys.executable, "-c", HOST, SIDECAR, str(workspace.root), "busy"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
    assert host.stdin is not None and host.stdout is not None
    try:
        assert host.stdout.readline() == b"ready\n"
        wait_until(lambda: (r := session_record(workspace, "busy"))
                   and r["metadata"]["sidecar"].get("turnOpen"), 10)
    finally:
        os.killpg(host.pid, signal.SIGKILL)  # mid-turn
        host.wait()
        host.stdin.close()
        host.stdout.close()
    [told] = wait_until(lambda: receiver.at("/n"), 10)
    body = told.json()
    assert (body["event"], body["reason"], body["midTurn"]) == ("session-end", "host-exited", True)
    assert body["title"] == "claude-code stopped: the host process exited, mid-turn"
    assert body["hookId"] == "global.exited"
    wait_until(lambda: receiver.at("/plain"), 10)
    time.sleep(2)  # nothing more comes
    assert len(receiver.at("/n")) == 1 and len(receiver.at("/plain")) == 1
