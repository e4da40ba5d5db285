"""A real daemon ends a Cline session when Cline's manifest says it ended, and only then.

The hooks are the real `sidecar emit --source cline` with Cline's recorded payloads; the
process they name (this test) lives on, as Cline's hub daemon does, so only the manifest can
end the session. Manifests that say nothing (running, missing, torn, a symlink, too large)
end nothing.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from helpers import FIXTURES, read_json, run_cli, session_record, wait_until, write_file
from sidecar.base.ids import harness_id
from sidecar.base.timeutil import iso
from sidecar.hosts.cline.host import manifest_path, messages_path

RECORDED = FIXTURES / "cline-3.0.65"


def hook(workspace, name: str, session: str) -> None:
    """Cline running one of its hooks: the recorded payload, for `session` in the workspace."""
    payload = json.loads((RECORDED / name).read_bytes())
    payload["sessionContext"]["rootSessionId"] = session
    payload["workspaceRoots"] = [str(workspace.root)]
    result = run_cli("emit", "--source", "cline", input=json.dumps(payload).encode(),
                     cwd=workspace.root)
    assert result.returncode == 0 and not result.stderr, result.stderr


def write_manifest(home, session: str, status: str) -> None:
    manifest = json.loads((RECORDED / "session-manifest.completed.json").read_bytes())
    # Ended now: an end from before the run's start would be an earlier run's.
    manifest.update(session_id=session, status=status, ended_at=iso(time.time()))
    write_file(manifest_path(home, session), json.dumps(manifest))


def trace_messages(workspace, session) -> str:
    path = workspace.session_dir(harness_id("cline", session)) / "trace.jsonl"
    return path.read_text() if path.exists() else ""


@pytest.fixture
def home(tmp_path):
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def test_a_session_ends_when_its_manifest_says_so_and_not_before(workspace, start_daemon,
                                                                   home):
    doc = read_json(workspace.hooks_file)
    doc["hooks"]["post-task"]["delaySeconds"] = 1
    workspace.hooks_file.write_text(json.dumps(doc))
    start_daemon(workspace.root, env={"HOME": str(home)})
    spoilt = ["1796115993153_running", "1796115993153_missing", "1796115993153_torn", "1796115993153_link", "1796115993153_huge"]
    for session in ["1796115993153_done", *spoilt]:
        hook(workspace, "TaskStart.json", session)
        write_manifest(home, session, "running")
        hook(workspace, "TaskComplete.json", session)
    manifest_path(home, "1796115993153_missing").unlink()
    manifest_path(home, "1796115993153_torn").write_text('{"status": "completed", "pid": 1')
    elsewhere = home / "completed.json"
    write_manifest(home, "1796115993153_elsewhere", "completed")
    manifest_path(home, "1796115993153_elsewhere").rename(elsewhere)
    manifest_path(home, "1796115993153_link").unlink()
    manifest_path(home, "1796115993153_link").symlink_to(elsewhere)
    manifest_path(home, "1796115993153_huge").write_text(json.dumps({"status": "completed",
                                                         "pad": "x" * (2 << 20)}))
    wait_until(lambda: all(session_record(workspace, s, "cline") for s in ["1796115993153_done", *spoilt]), 10)
    time.sleep(2.5)  # past the first look after the turn end, and two sweep rounds
    assert all(session_record(workspace, s, "cline")["status"] == "active" for s in ["1796115993153_done", *spoilt])

    write_manifest(home, "1796115993153_done", "completed")
    messages_path(home, "1796115993153_done").write_text('{"messages": []}')
    wait_until(lambda: session_record(workspace, "1796115993153_done", "cline")["status"] == "completed", 5)
    done = session_record(workspace, "1796115993153_done", "cline")["metadata"]["sidecar"]
    assert done["completionReason"] == "completed"
    assert done["tokens"] == {"input": 40, "output": 20, "cacheRead": 0, "cacheWrite": 0}
    assert done["transcriptPath"] == str(messages_path(home, "1796115993153_done"))
    assert all(session_record(workspace, s, "cline")["status"] == "active" for s in spoilt)

    wait_until(lambda: read_json(workspace.hooks_file)["hooks"]["post-task"]["history"], 10)
    [firing] = read_json(workspace.hooks_file)["hooks"]["post-task"]["history"]
    assert firing["sessionId"] == "1796115993153_done"
    assert firing["status"] == ("skipped: Cline 3.0.65 cannot resume a session without a "
                                "terminal (`cline --id` needs one); not resumed")
    assert read_json(workspace.hooks_file)["pending"] == []


def test_a_session_shutdown_hook_ends_it_without_the_manifest(workspace, start_daemon, home):
    start_daemon(workspace.root, env={"HOME": str(home)})
    hook(workspace, "TaskStart.json", "1796115993153_term")
    hook(workspace, "SessionShutdown.sigterm.json", "1796115993153_term")
    wait_until(lambda: (session_record(workspace, "1796115993153_term", "cline") or {}).get("status") == "completed", 10)
    assert session_record(workspace, "1796115993153_term", "cline")["metadata"]["sidecar"]["completionReason"] == \
        "session-end"
    assert os.path.lexists(manifest_path(home, "1796115993153_term")) is False


def test_a_manifest_left_by_an_earlier_run_does_not_end_a_new_one(workspace, start_daemon,
                                                                    home):
    """A resumed conversation starts before Cline rewrites the manifest of its last run."""
    write_manifest(home, "1796115993153_again", "completed")
    time.sleep(1.5)  # more than the slack the rules allow a record written after a run's end
    daemon = start_daemon(workspace.root, env={"HOME": str(home)})
    hook(workspace, "TaskStart.json", "1796115993153_again")
    hook(workspace, "TaskComplete.json", "1796115993153_again")
    wait_until(lambda: session_record(workspace, "1796115993153_again", "cline"), 10)
    time.sleep(2.5)  # the first look after the turn end, and two rounds
    assert session_record(workspace, "1796115993153_again", "cline")["status"] == "active"
    # A restarted daemon has seen no start of this run: the record still tells the
    # earlier run's end from this one's.
    assert daemon.stop() == 0
    start_daemon(workspace.root, env={"HOME": str(home)})
    wait_until(lambda: "the host recorded an earlier run's end; the session goes on" in
               trace_messages(workspace, "1796115993153_again"), 10)
    assert session_record(workspace, "1796115993153_again", "cline")["status"] == "active"
