"""End to end with the real Kilo Code CLI 7.7.7, offline against a loopback chat-completions stub.

`sidecar integrate kilo` installs opencode's plugin (naming its events `kilo`) into
`.kilo/plugins/`; a `kilo run` session is tracked and completed when the process exits (Kilo
sends no session end of its own), or by the process watch when it is killed mid-turn;
`post-task` resumes it once through `kilo run --session`, the resumed run carries the earlier
turn, and its end queues nothing. A turn refused by a 429 is resumed once after its reset; a
permission ask in Kilo's terminal interface (tmux) shows the session waiting, `kilo run`'s own
rejection does not.
"""

from __future__ import annotations

import json
import os
import signal

from helpers import npm_host, read_json, run_cli, wait_until
from sidecar.base.ids import harness_id
from sidecar.hosts import registry
from stubs.chat_stub import ChatStub, LimitedChatStub, ToolCallChatStub
from stubs.host_exit import assert_ends_as_host_exit, running_host
from stubs.lifecycle import (
    assert_resumed_after_limit,
    assert_whole_lifecycle,
    enable_limit_resume,
    prepare_post_task,
    set_resume,
    settled_record,
    wait_for_the_limit_resume,
)
from stubs.opencode_family import run_in_project, stub_provider
from support.tmux import Tmux

KILO_VERSION = "7.7.7"


def kilo_setup(tmp_path, root, stub_url, **settings):
    """A provider at the stub in the project's kilo.json (with Kilo's own `settings`), a
    throwaway HOME and TMPDIR, and nothing that would reach the vendor (model catalogue,
    telemetry, updates)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    (root / "kilo.json").write_text(stub_provider(stub_url, **settings))
    return {"HOME": str(home), "TMPDIR": str(tmp_path / "tmp"), "TERM": "dumb",
            "KILO_DISABLE_MODELS_FETCH": "1", "KILO_DISABLE_AUTOUPDATE": "1",
            "KILO_TELEMETRY_LEVEL": "off"}


def test_a_kilo_session_is_completed_at_exit_and_resumed_once(workspace, start_daemon,
                                                              config_home, tmp_path):
    kilo = npm_host("kilo", KILO_VERSION, "kilo")
    prepare_post_task(workspace)
    # The resume as shipped, with the program found where the tests installed it.
    set_resume(config_home, "kilo", [str(kilo), *registry.get("kilo").resume[1:]])
    result = run_cli("integrate", "kilo", cwd=workspace.root)
    assert result.returncode == 0, result.stderr
    plugin = workspace.root / ".kilo" / "plugins" / "sidecar.js"
    assert plugin.read_bytes().startswith(b"// sidecar: kilo's session events")
    assert str(tmp_path).encode() not in plugin.read_bytes()  # a project may commit it
    with ChatStub() as stub:
        env = kilo_setup(tmp_path, workspace.root, stub.url)
        start_daemon(workspace.root, env=env)
        first = run_in_project(kilo, workspace.root, env, "--format", "json", "remember", "banana")
        assert first.returncode == 0, first.stderr[-3000:]
        session_id = json.loads(first.stdout.splitlines()[0])["sessionID"]
        record = settled_record(workspace, "kilo", session_id)
        requests = list(stub.requests)
    done = assert_whole_lifecycle(workspace, record, requests, "remember banana", end_reason="exit")
    assert done["metadata"]["sidecar"]["cwd"] == str(workspace.root)
    # The resumed run was the same conversation: the first answer went back to the model as is.
    resumed = next(r for r in requests if "POST-TASK-MARKER" in json.dumps(r["body"]))
    turns = [(m["role"], m["content"]) for m in resumed["body"]["messages"] if m["role"] != "system"]
    assert turns[1] == ("assistant", "Done.") and turns[0][1][0]["text"] == "remember banana"
    # Its tokens came from Kilo's own database (the stub reports 10 in, 3 out per answer).
    assert done["metadata"]["sidecar"]["tokens"]["input"] >= 10


def test_kilo_killed_mid_turn_is_ended_by_the_process_watch(workspace, start_daemon, tmp_path):
    kilo = npm_host("kilo", KILO_VERSION, "kilo")
    with ChatStub() as stub:
        stub.hold()  # the answer never comes: the turn is still running when kilo is killed
        env = kilo_setup(tmp_path, workspace.root, stub.url)
        assert run_cli("integrate", "kilo", "--user", env=env).returncode == 0
        daemon = start_daemon(workspace.root, env=env)
        with running_host([kilo, "run", "a", "long", "task"], workspace.root,
                          {**env, "PWD": str(workspace.root)}):
            # The plugin runs in Kilo's own binary (below the node launcher): kill that one.
            assert_ends_as_host_exit(workspace, start_daemon, daemon, "kilo",
                                     lambda pid: os.kill(pid, signal.SIGKILL))


def test_a_kilo_turn_refused_by_a_rate_limit_is_resumed_once_it_resets(
        workspace, start_daemon, config_home, tmp_path):
    """Kilo retries a 429 itself, then reports `session.error` (statusCode 429): the session is
    recorded limited, its end queues no post-task, and resume-after-limit resumes the very
    session once the stated reset has come."""
    kilo = npm_host("kilo", KILO_VERSION, "kilo")
    enable_limit_resume(workspace, config_home, "kilo",
                        [str(kilo), "run", "--session", "{session_id}", "<{prompt}"])
    assert run_cli("integrate", "kilo", cwd=workspace.root).returncode == 0
    with LimitedChatStub("Rate limit reached for requests. Please try again in 3s.") as stub:
        env = kilo_setup(tmp_path, workspace.root, stub.url)
        start_daemon(workspace.root, env=env)
        first = run_in_project(kilo, workspace.root, env, "--format", "json", "remember", "banana")
        assert stub.refused, first.stdout[-2000:] + first.stderr[-2000:]
        session_id = json.loads(first.stdout.splitlines()[0])["sessionID"]
        record_path = workspace.session_dir(harness_id("kilo", session_id)) / "session.json"
        wait_until(lambda: record_path.exists() and read_json(record_path)["status"] == "completed"
                   and not list(workspace.inbox.glob("*.json")), 60, 0.1)
        limited = read_json(record_path)
        stub.refusing = False  # the limit resets

        wait_for_the_limit_resume(workspace)
        answered = [r for r in stub.requests[stub.refused:] if r["body"]]
    limit = limited["metadata"]["sidecar"]["limit"]
    assert limit["error"] == "rate_limit" and "try again in 3s" in limit["message"], limit
    assert_resumed_after_limit(workspace, "kilo", session_id, answered)
    # The very session: its first prompt went back to the model word for word, then the resume.
    resumed = next(r for r in answered if "Continue where you left off" in json.dumps(r["body"]))
    users = [m["content"] for m in resumed["body"]["messages"] if m["role"] == "user"]
    assert users[0][0]["text"] == "remember banana", users


def test_kilo_asking_to_allow_a_tool_is_waiting_until_the_user_answers(workspace, start_daemon,
                                                                       tmp_path):
    """Kilo's terminal interface, whose permission rule asks before a shell command: the
    record says the session waits, with the ask, until the user allows it and the tool runs.
    (`kilo run` asks no one: it rejects the tool, see the host's page.)"""
    kilo = npm_host("kilo", KILO_VERSION, "kilo")
    root = workspace.root
    assert run_cli("integrate", "kilo", cwd=root).returncode == 0
    with ToolCallChatStub("touch allowed.txt") as stub:
        env = kilo_setup(tmp_path, root, stub.url, permission={"bash": "ask"})
        start_daemon(root, env=env)
        tmux = Tmux(tmp_path / "tmux.sock")
        try:
            tmux.start([str(kilo), "--prompt", "run it"],
                       {**env, "TERM": "xterm-256color", "PWD": str(root)}, root)
            wait_until(lambda: "Permission required" in tmux.screen(), 60, 0.2)  # its dialog
            record = wait_until(lambda: (r := only_record(workspace))
                                and r["metadata"]["sidecar"].get("needsInput") and r, 60, 0.2)
            asked = record["metadata"]["sidecar"]["needsInput"]
            assert (asked["kind"], asked["message"]) == ("permission", "bash: touch allowed.txt")
            assert not (root / "allowed.txt").exists()  # nothing ran yet: it waits
            tmux.keys("Enter")  # Allow once
            wait_until(lambda: (root / "allowed.txt").exists(), 60, 0.2)
            after = wait_until(lambda: (r := only_record(workspace))
                               and "needsInput" not in r["metadata"]["sidecar"] and r, 60, 0.2)
        finally:
            tmux.stop()
    assert after["metadata"]["sidecar"]["lastTool"] == "bash"


def test_kilo_run_asks_no_one_and_its_session_is_not_left_waiting(workspace, start_daemon,
                                                                  tmp_path):
    """`kilo run` rejects a tool its rules say to ask about, and ends: the session is completed,
    not shown waiting for an answer no one can give."""
    kilo = npm_host("kilo", KILO_VERSION, "kilo")
    root = workspace.root
    assert run_cli("integrate", "kilo", cwd=root).returncode == 0
    with ToolCallChatStub("touch allowed.txt") as stub:
        env = kilo_setup(tmp_path, root, stub.url, permission={"bash": "ask"})
        start_daemon(root, env=env)
        run = run_in_project(kilo, root, env, "run", "it")
    assert run.returncode == 1 and "auto-rejecting" in run.stderr, run.stderr[-2000:]
    assert not (root / "allowed.txt").exists()
    record = wait_until(lambda: (r := only_record(workspace)) and r["status"] == "completed"
                        and not list(workspace.inbox.glob("*.json")) and r, 60, 0.2)
    assert "needsInput" not in record["metadata"]["sidecar"], record


def only_record(workspace) -> dict | None:
    records = list(workspace.sessions.glob("*/session.json"))
    return read_json(records[0]) if len(records) == 1 else None


def test_integrate_and_uninstall_leave_the_users_kilo_files_byte_for_byte(workspace):
    project = workspace.root
    theirs = {project / ".kilo" / "kilo.json": b'{"model": "mine/m"}\n',
              project / ".kilo" / "plugins" / "mine.js": b"export const Mine = async () => ({})\n"}
    for path, data in theirs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    os.chmod(project / ".kilo" / "kilo.json", 0o600)
    assert run_cli("integrate", "kilo", "--root", str(project)).returncode == 0
    assert (project / ".kilo" / "plugins" / "sidecar.js").exists()
    assert b"nothing changed" in run_cli("integrate", "kilo", "--root", str(project)).stdout
    assert run_cli("integrate", "kilo", "--uninstall", "--root", str(project)).returncode == 0
    assert sorted(p for p in (project / ".kilo").rglob("*")) == sorted(
        [*theirs, project / ".kilo" / "plugins"])
    assert all(path.read_bytes() == data for path, data in theirs.items())
    assert (project / ".kilo" / "kilo.json").stat().st_mode & 0o777 == 0o600
    # A file of sidecar's name that sidecar did not write is never replaced nor removed.
    mine = project / ".kilo" / "plugins" / "sidecar.js"
    mine.write_bytes(b"export const Other = async () => ({})\n")
    assert run_cli("integrate", "kilo", "--root", str(project)).returncode == 1
    assert run_cli("integrate", "kilo", "--uninstall", "--root", str(project)).returncode == 1
    assert mine.read_bytes() == b"export const Other = async () => ({})\n"


def test_an_empty_kilo_folder_sidecar_created_is_removed_again(workspace):
    project = workspace.root
    assert run_cli("integrate", "kilo", "--root", str(project)).returncode == 0
    assert (project / ".kilo" / "plugins" / "sidecar.js").exists()
    assert run_cli("integrate", "kilo", "--uninstall", "--root", str(project)).returncode == 0
    assert not (project / ".kilo").exists()
