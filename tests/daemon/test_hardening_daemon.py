"""What an adversarial run broke: each case reproduced, and what sidecar does now.

Those that start real processes; the rest run in process in tests/unit/test_hardening.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import orjson
import pytest

from helpers import run_cli, wait_until
from sidecar import locks
from sidecar.base.ids import harness_id
from sidecar.inbox import events
from sidecar.layout import Workspace
from support.stores import drop, ingestor

T0 = 1_795_900_000.0


# -- ids and times -------------------------------------------------------------------------------

def test_a_session_id_can_never_become_an_option(workspace):
    with pytest.raises(events.BadEvent, match="not starting with -"):
        events.parse(b'{"event": "x", "session_id": "--dangerously-skip-permissions"}', "f", 0)
    result = run_cli("emit", "session-end", "--session-id=--dangerously-skip-permissions",
                     cwd=workspace.root)
    assert result.returncode == 0  # dropped; the daemon rejects it with the reason above


# -- files that are not what they should be -------------------------------------------------------

def test_a_fifo_where_the_bindings_belong_blocks_nothing(workspace):
    os.mkfifo(workspace.bindings_file)
    drop(workspace, "a.json", b'{"event": "session-start", "session_id": "s", "host": "t"}', T0 - 60)
    ing = ingestor(workspace)
    worker = threading.Thread(target=ing.start, args=(T0,), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "the leader blocked on a FIFO"
    assert "is not a regular file" in ing.health.last_error
    assert (workspace.inbox / "a.json").exists()  # kept for a retry, not lost
    status = subprocess.run([sys.executable, "-m", "sidecar", "status", "--root",
                             str(workspace.root)], capture_output=True, timeout=20)
    assert b"is not a regular file" in status.stdout + status.stderr


# -- clear errors ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_hooks_add_while_the_lock_is_held_says_so_and_exits_75(workspace):
    with locks.locked(workspace.lock("hooks")):
        result = run_cli("hooks", "add", "x", "--delay", "5", cwd=workspace.root, timeout=60)
    assert result.returncode == 75 and b"holds it; try again" in result.stderr
    assert b"Traceback" not in result.stderr


def test_one_workspace_that_cannot_be_served_stops_no_other(tmp_path, workspace, start_daemon):
    broken = tmp_path / "broken"
    broken.mkdir()
    assert run_cli("init", str(broken)).returncode == 0
    inbox = broken / ".context" / "runtime" / "inbox"
    shutil.rmtree(inbox)
    inbox.write_text("a file where the inbox belongs")
    daemon = start_daemon(wait_leader=False)  # every registered workspace
    wait_until(lambda: run_cli("status", "--root", str(workspace.root)).returncode == 0, 20)
    wait_until(lambda: "cannot be served" in daemon.output(), 20)
    assert daemon.proc.poll() is None
    inbox.unlink()  # repaired: it is taken up without a restart
    wait_until(lambda: run_cli("status", "--root", str(broken)).returncode == 0, 20)
    assert "can be served again" in daemon.output()


@pytest.mark.parametrize("part", ["hooks.json", "hooks/host-sessions.json", "instances", "inbox",
                                  "sessions", "inbox/rejected", "locks"])
def test_status_and_doctor_say_what_is_wrong_instead_of_a_traceback(workspace, part):
    path = workspace.runtime / part
    if path.is_dir():
        shutil.rmtree(path)
        path.write_text("a file where a folder belongs")
    else:
        path.unlink(missing_ok=True)
        path.mkdir()  # a folder where a file belongs
    for command in (["status", "--root", str(workspace.root)], ["status", "--json"], ["doctor"]):
        result = run_cli(*command, cwd=workspace.root)
        said = (result.stdout + result.stderr).decode()
        assert "Traceback" not in said, (command, said)
        assert result.returncode in (1, 3), (command, result.returncode)
    status = run_cli("status", "--root", str(workspace.root)).stdout.decode()
    if part != "locks":  # nothing reads locks/ while no instance is registered
        assert str(path) in status and ("cannot read" in status or "BROKEN" in status), status


# -- never through a symlink ----------------------------------------------------------------------

@pytest.mark.parametrize("part", ["inbox/rejected", "inbox", "sessions", "hooks", "logs"])
def test_a_symlinked_runtime_folder_is_never_written_through_nor_chmodded(
        tmp_path, config_home, start_daemon, part):
    good, bad = tmp_path / "good", tmp_path / "bad"
    for root in (good, bad):
        root.mkdir()
        assert run_cli("init", str(root)).returncode == 0
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o755)
    os.chmod(target, 0o755)
    (target / "theirs.json").write_bytes(b'{"event": "x", "session_id": "s", "host": "t"}')
    linked = bad / ".context" / "runtime" / part
    shutil.rmtree(linked)
    linked.symlink_to(target)
    drop(Workspace(bad), "x.json", b"not json", T0 - 60) if part != "inbox" else None
    daemon = start_daemon(good, bad, wait_leader=False)
    wait_until(lambda: "is a symlink; sidecar never writes through one" in daemon.output(), 15)
    assert run_cli("emit", "session-start", "--session-id", "g", "--source", "t",
                   cwd=good).returncode == 0
    wait_until(lambda: (good / ".context/runtime/sessions" / harness_id("t", "g")).exists(), 15)
    assert sorted(os.listdir(target)) == ["theirs.json"]  # nothing written, nothing consumed
    assert oct(target.stat().st_mode & 0o777) == "0o755"  # and its mode left as it was
    assert daemon.proc.poll() is None


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root and setpriv to act as an unprivileged user")
def test_an_unprivileged_user_cannot_steer_a_root_daemon_into_root_only_files(tmp_path, config_home,
                                                                           start_daemon):
    """A root daemon serves a workspace that belongs to an unprivileged user (uid 65534). The
    user replaces inbox/rejected with a link to a root-only folder and drops a bad event: the
    daemon writes nothing there, changes no mode, and says why; the user's status says so too."""
    top = Path(tempfile.mkdtemp(prefix="sidecar-unpriv-"))  # traversable by the user
    try:
        os.chmod(top, 0o755)
        root = top / "ws"
        root.mkdir()
        assert run_cli("init", str(root)).returncode == 0
        subprocess.run(["chown", "-R", "65534:65534", str(root)], check=True)
        secret = tmp_path / "root-only"
        secret.mkdir(mode=0o700)
        (secret / "shadow").write_bytes(b"root's\n")
        as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c"]
        runtime = root / ".context/runtime"
        script = (f"rm -rf {runtime}/inbox/rejected && ln -s {secret} {runtime}/inbox/rejected"
                  f" && printf 'not json' > {runtime}/inbox/bad.json")
        assert subprocess.run([*as_user, script]).returncode == 0
        daemon = start_daemon(root, wait_leader=False)
        wait_until(lambda: "is a symlink; sidecar never writes through one" in daemon.output(), 15)
        assert sorted(os.listdir(secret)) == ["shadow"]
        assert oct(secret.stat().st_mode & 0o777) == "0o700" and secret.stat().st_uid == 0
        assert (runtime / "inbox/bad.json").exists()  # left for the user to see, not consumed
        status = orjson.loads(run_cli("status", "--root", str(root), "--json").stdout)
        assert not status["workspaces"][0]["served"]
        assert "inbox/rejected is a symlink" in status["workspaces"][0]["errors"][0]
        assert status["workspaces"][0]["rejected"] == 0  # not counted through the link
        assert daemon.proc.poll() is None
    finally:
        shutil.rmtree(top, ignore_errors=True)
