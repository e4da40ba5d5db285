"""Pi's extension, as `sidecar integrate pi` installs it, run in node with Pi's recorded
handler calls (`{event, ctx}`): what it files, and what it leaves out."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from helpers import FIXTURES, inbox_files
from sidecar.hosts.pi import host as pi
from sidecar.inbox import events
from sidecar.vocabulary import EventKind

# Calls each handler the extension registered with one recorded {event, ctx}, its context's
# session manager answering what the recording read from it; the project is this workspace.
NODE_HARNESS = """
import fs from "node:fs"
const [extension, fixtures, ...names] = process.argv.slice(2)
const handlers = {}
;(await import(extension)).default({ on: (name, handler) => { handlers[name] = handler } })
for (const name of names) {
  const text = fs.readFileSync(`${fixtures}/${name}.json`, "utf8").replaceAll("/home/user/project", process.cwd())
  const { event, ctx } = JSON.parse(text)
  const noSession = name.endsWith("+no-session")
  const manager = { getSessionId: () => ctx.sessionId,
                    getSessionFile: () => noSession ? undefined : ctx.sessionFile }
  const handler = handlers[event.type]
  if (handler) await handler(event, { cwd: ctx.cwd, sessionManager: manager })
}
"""


def run_node(workspace, tmp_path, *names: str) -> subprocess.CompletedProcess:
    """The installed extension, in node, given the recorded calls `names` in order."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed, so Pi's extension cannot run here")
    extension = tmp_path / "sidecar.mjs"  # plain JavaScript inside: node runs it as Pi's jiti does
    extension.write_bytes(pi.extension_source())
    harness = tmp_path / "harness.mjs"
    harness.write_text(NODE_HARNESS)
    fixtures = tmp_path / "fixtures"
    shutil.copytree(FIXTURES / "pi-0.73.1", fixtures)
    aborted = json.loads((fixtures / "agent_end.json").read_text())
    aborted["event"]["messages"][-1].update(stopReason="aborted", errorMessage="aborted")
    (fixtures / "agent_end.aborted.json").write_text(json.dumps(aborted))
    reload = json.loads((fixtures / "session_shutdown.json").read_text())
    reload["event"]["reason"] = "reload"
    (fixtures / "session_shutdown.reload.json").write_text(json.dumps(reload))
    shutil.copy(fixtures / "session_start.json", fixtures / "session_start+no-session.json")
    return subprocess.run([node, str(harness), str(extension), str(fixtures), *names],
                          cwd=workspace.root, capture_output=True, text=True, timeout=60)


def run_extension(workspace, tmp_path, *names: str) -> list[events.Event]:
    """What the extension filed for the recorded calls `names`; nothing thrown into Pi."""
    result = run_node(workspace, tmp_path, *names)
    assert result.returncode == 0, result.stderr
    return [events.parse(p.read_bytes(), p.name, 0.0) for p in inbox_files(workspace)]


def test_a_session_is_filed_with_its_id_transcript_folder_and_process(workspace, tmp_path):
    filed = run_extension(workspace, tmp_path, "session_start", "input", "agent_start",
                          "tool_execution_end", "turn_end", "agent_end", "session_shutdown")
    assert [(e.name, e.kind) for e in filed] == [
        ("session_start", EventKind.SESSION_START), ("agent_start", EventKind.TURN_START),
        ("tool_execution_end", EventKind.TOOL_USE), ("agent_end", EventKind.TURN_END),
        ("session_shutdown", EventKind.SESSION_END)]  # input and turn_end: not sent
    assert {e.host for e in filed} == {"pi"}
    assert {e.cwd for e in filed} == {str(workspace.root)}
    assert filed[0].text("source") == "startup" and filed[-1].reason == "quit"
    assert filed[2].tool_name == "bash"
    assert filed[3].last_message == "Hello from the chat stub. You said: say hi"  # its answer
    start = filed[0]
    assert start.transcript_path and start.transcript_path.endswith(f"_{start.session_id}.jsonl")
    assert all(e.host_pid and e.host_pid > 1 for e in filed)
    assert len({(e.host_pid, e.host_start) for e in filed}) == 1  # the one node process


def test_a_refused_or_stopped_prompt_is_traced_not_ended(workspace, tmp_path):
    filed = run_extension(workspace, tmp_path, "agent_end.rate_limit", "agent_end.aborted")
    assert [(e.name, e.kind) for e in filed] == [("agent_end:error", None),
                                                 ("agent_end:aborted", None)]
    assert filed[0].error_message.startswith("429 Rate limit reached")


def test_new_ends_one_session_and_starts_the_next_and_reload_ends_nothing(workspace, tmp_path):
    filed = run_extension(workspace, tmp_path, "session_shutdown.reload", "session_shutdown.new",
                          "session_start.new")
    assert [(e.kind, e.reason or e.text("source")) for e in filed] == [
        (EventKind.SESSION_END, "new"), (EventKind.SESSION_START, "new")]
    assert filed[0].session_id != filed[1].session_id


def test_a_session_pi_keeps_no_file_of_is_not_filed(workspace, tmp_path):
    """`pi --no-session`: nothing could resume it, so no follow-up is promised for it."""
    assert run_extension(workspace, tmp_path, "session_start+no-session") == []


def test_a_workspace_not_registered_here_gets_nothing(workspace, tmp_path, config_home):
    """Attack: a clone ships `.context/runtime/inbox`; the extension (user-wide, loaded in every
    project) writes into no workspace this machine's user did not `sidecar init`."""
    (config_home / "workspaces.json").write_text('{"workspaces": []}')
    assert run_extension(workspace, tmp_path, "session_start", "agent_end") == []


def test_a_shipped_symlink_is_never_written_through(workspace, tmp_path):
    """Attack: the runtime folder is a link to elsewhere; the extension writes nothing there
    (the writer it shares with the opencode plugin refuses the link) and Pi goes on."""
    target = tmp_path / "elsewhere"
    target.mkdir()
    runtime = workspace.context / "runtime"
    shutil.rmtree(runtime)
    runtime.symlink_to(target, target_is_directory=True)
    result = run_node(workspace, tmp_path, "session_start", "agent_end")
    assert result.returncode == 0  # nothing thrown into Pi
    assert "symlink" in result.stderr and "nothing written" in result.stderr
    assert list(target.iterdir()) == []
