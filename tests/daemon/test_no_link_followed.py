"""Nothing sidecar writes goes through a symlink shipped in, or swapped into, `.context/`.

Each test plants the link first and checks that it is live (a plain path write would land in
its target), then runs the real writer and asserts the target is left empty.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import emit, write_file
from sidecar import jsonfile, locks, safedir
from sidecar.hosts.opencode import host as opencode
from sidecar.inbox import folder as inbox
from sidecar.layout import Workspace

LINK_REFUSED = "is a symlink; sidecar never writes through one"
CONTINUE = b'{"continue": true}\n'


def plant_link(place: Path, target: Path) -> None:
    """Replace the folder at `place` by a symlink to `target`, as a pull could ship one."""
    if place.is_dir() and not place.is_symlink():
        shutil.rmtree(place)
    place.symlink_to(target)
    assert os.path.realpath(place) == str(target.resolve())  # the attack is live


def outside(tmp_path: Path, *sub: str) -> Path:
    """An empty folder outside the workspace: where the link points (`sub` made inside it)."""
    folder = tmp_path / "outside"
    (folder.joinpath(*sub)).mkdir(parents=True)
    return folder


def everything_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """The runtime folders and `hooks`, no more (no `sidecar init`: safedir works on any
    `.context/`)."""
    ws = Workspace(tmp_path / "ws")
    ws.ensure_runtime()
    (ws.context / "hooks").mkdir()
    return ws


# -- sidecar emit ---------------------------------------------------------------------------------

@pytest.mark.parametrize("part, inbox_in_target", [("runtime/inbox", ()),
                                                   ("runtime", ("inbox",))])
def test_emit_never_writes_through_a_shipped_symlink(workspace, tmp_path, part, inbox_in_target):
    """Attack: a pull ships `.context/runtime/inbox` (or `.context/runtime`) as a symlink to a
    folder outside; `sidecar emit` would have dropped its event file there."""
    target = outside(tmp_path, *inbox_in_target)
    plant_link(workspace.context / part, target)
    result = emit(workspace.root, None, "session-start", "--session-id", "s1")
    assert result.returncode == 0
    assert result.stdout == CONTINUE
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert "is a symlink or not a folder; sidecar never writes through one; nothing emitted" \
        in lines[0]
    assert everything_under(target) == list(inbox_in_target)


def test_emit_writes_into_a_real_inbox(workspace):
    """The control for the test above: without the link, the event is there."""
    result = emit(workspace.root, None, "session-start", "--session-id", "s1")
    assert result.stdout == CONTINUE and result.stderr == b""
    assert len(list(workspace.inbox.glob("*.json"))) == 1


# -- the opencode plugin --------------------------------------------------------------------------

DRIVER = """
import {{ SidecarPlugin }} from {plugin}
const ws = {ws}
const hooks = await SidecarPlugin({{ directory: ws }})
await hooks.event({{ event: {{ type: "session.created",
                              properties: {{ info: {{ id: "ses_1", directory: ws }} }} }} }})
await hooks.event({{ event: {{ type: "session.status",
                              properties: {{ sessionID: "ses_1", status: {{ type: "busy" }} }} }} }})
"""


def run_plugin(tmp_path: Path, root: Path) -> subprocess.CompletedProcess:
    """Load the plugin in node as opencode would and send it a session's first events; the
    session's end is written from the plugin's exit listener, as node exits."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    plugin = tmp_path / "sidecar.mjs"  # the file `sidecar integrate opencode` installs
    plugin.write_bytes(opencode.plugin_source())
    driver = tmp_path / "driver.mjs"
    driver.write_text(DRIVER.format(plugin=json.dumps(plugin.as_uri()),
                                    ws=json.dumps(str(root))))
    return subprocess.run(["node", str(driver)], capture_output=True, text=True, timeout=30,
                          env=dict(os.environ))  # SIDECAR_CONFIG_HOME: the test's registry


def test_the_plugin_writes_into_a_registered_workspace(workspace, tmp_path):
    """The control: with a real inbox, each event lands there (so the tests below can fail)."""
    result = run_plugin(tmp_path, workspace.root)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    events = [json.loads(p.read_bytes()) for p in sorted(workspace.inbox.glob("*.json"))]
    assert [e["event"] for e in events] == ["session-start", "turn-start", "session-end"]
    assert {e["session_id"] for e in events} == {"ses_1"}


@pytest.mark.parametrize("part, inbox_in_target", [("runtime/inbox", ()),
                                                   ("runtime", ("inbox",))])
def test_the_plugin_never_writes_through_a_shipped_symlink(workspace, tmp_path, part,
                                                           inbox_in_target):
    """Attack: the same shipped symlinks, met by the opencode plugin inside the host's
    process: it would have written its events (three here) wherever the link points."""
    target = outside(tmp_path, *inbox_in_target)
    plant_link(workspace.context / part, target)
    result = run_plugin(tmp_path, workspace.root)
    assert result.returncode == 0  # nothing thrown into the host
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines  # said once, not once per event
    assert "symlink" in lines[0] and "nothing written" in lines[0]
    assert everything_under(target) == list(inbox_in_target)


def test_the_plugin_ignores_a_context_never_initialised_here(tmp_path, config_home):
    """Attack: a clone ships a whole `.context/runtime/inbox`; no `sidecar init` was run for it
    on this machine, so the plugin (user-wide, loaded in every folder) writes nothing."""
    cloned = Workspace(tmp_path / "cloned")
    cloned.inbox.mkdir(parents=True)
    result = run_plugin(tmp_path, cloned.root)
    assert result.returncode == 0 and result.stderr == ""
    assert list(cloned.inbox.iterdir()) == []


# -- safedir and the writers built on it ----------------------------------------------------------

def test_open_dir_refuses_a_symlinked_folder(ws, tmp_path):
    """Attack: `runtime/sessions` is a symlink; a path-based open would follow it."""
    plant_link(ws.sessions, outside(tmp_path))
    with pytest.raises(OSError, match=LINK_REFUSED) as caught:
        safedir.open_dir(ws.sessions / "some-session", create=True)
    assert caught.value.errno == errno.ELOOP
    assert caught.value.filename == str(ws.sessions)
    assert everything_under(tmp_path / "outside") == []
    assert not (tmp_path / "outside" / "some-session").exists()  # `create` made nothing there


def test_open_dir_refuses_a_file_where_a_folder_belongs(ws):
    shutil.rmtree(ws.sessions)
    ws.sessions.write_bytes(b"not a folder")
    with pytest.raises(OSError, match="is not a folder") as caught:
        safedir.open_dir(ws.sessions)
    assert caught.value.errno == errno.ENOTDIR


def test_a_folder_swapped_for_a_symlink_after_it_was_opened_is_not_written_through(ws, tmp_path):
    """Attack: the folder is renamed away and a symlink put in its place between sidecar's
    open and its write; the write goes by the descriptor, into the original folder."""
    target = outside(tmp_path)
    with safedir.opened(ws.sessions) as folder:
        ws.sessions.rename(ws.runtime / "sessions.moved")
        plant_link(ws.sessions, target)
        os.close(os.open("new.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=folder))
    assert (ws.runtime / "sessions.moved" / "new.json").is_file()
    assert everything_under(target) == []


@pytest.mark.parametrize("folder, write", [
    pytest.param("sessions", lambda ws: jsonfile.write_bytes_atomic(ws.sessions / "s.json", b"{}"),
                 id="write_bytes_atomic"),
    pytest.param("sessions", lambda ws: jsonfile.append_lines(ws.sessions / "t.jsonl", [{"a": 1}]),
                 id="append_lines"),
    pytest.param("locks", lambda ws: locks.try_lock(ws.lock("leader")), id="try_lock"),
])
def test_state_writes_refuse_a_symlinked_folder(ws, tmp_path, folder, write):
    """Attack: `runtime/sessions` (or `runtime/locks`) is a symlink; a state file, a trace line
    or a lock file would have been created in its target."""
    target = outside(tmp_path)
    plant_link(getattr(ws, folder), target)
    with pytest.raises(OSError, match=LINK_REFUSED) as caught:
        write(ws)
    assert caught.value.errno == errno.ELOOP
    assert everything_under(target) == []


def test_reject_refuses_a_rejected_folder_swapped_for_a_symlink(ws, tmp_path):
    """Attack: a bad event is in the inbox, then `inbox/rejected` is swapped for a symlink;
    setting the event aside would have linked it (and its note) into the target."""
    (ws.inbox / "bad.json").write_bytes(b"not json")
    target = outside(tmp_path)
    plant_link(ws.rejected, target)
    with pytest.raises(OSError, match=LINK_REFUSED):
        inbox.reject(ws, inbox.Rejected("bad.json", "not JSON"), 0.0)
    assert everything_under(target) == []
    assert (ws.inbox / "bad.json").read_bytes() == b"not json"  # left where it was


# -- prompt files ---------------------------------------------------------------------------------

def test_a_prompt_is_never_read_through_a_symlinked_hooks_folder(ws, tmp_path):
    """Attack: a clone ships `.context/hooks` as a symlink to a folder holding a `post-task.md`
    of someone else's (a secret): it would have been read and sent to an agent as the prompt."""
    from sidecar.followups.prompts import PromptError
    from sidecar.followups.prompts import read as read_prompt

    target = outside(tmp_path)
    (target / "post-task.md").write_text("the secret\n")
    plant_link(ws.context / "hooks", target)
    assert (ws.context / "hooks" / "post-task.md").read_text() == "the secret\n"  # live
    with pytest.raises(PromptError, match="symlink") as caught:
        read_prompt(ws, "hooks/post-task.md")
    assert "the secret" not in str(caught.value)


# -- a folder swapped in the middle of a step loses nothing --------------------------------------

def test_an_inbox_swapped_while_an_event_is_read_rejects_nothing(ws, tmp_path):
    """The event is good; its folder was swapped for a link for a moment. It must wait for
    the workspace to be repaired, never be set aside as a bad file."""
    (ws.inbox / "a.json").write_bytes(b'{"event": "session-start", "session_id": "s"}')
    [arrival] = inbox.scan(ws)
    real = ws.inbox.with_name("inbox.real")
    ws.inbox.rename(real)
    plant_link(ws.inbox, outside(tmp_path))
    with pytest.raises(safedir.LinkRefused):
        inbox.read(ws, arrival, 1e10)
    ws.inbox.unlink()
    real.rename(ws.inbox)
    assert (ws.inbox / "a.json").exists() and list(ws.rejected.iterdir()) == []
    assert inbox.read(ws, arrival, 1e10).session_id == "s"


def test_an_outcome_is_read_again_once_a_swapped_logs_folder_is_repaired(ws, tmp_path):
    """An action that ended while `logs` was a link: its real outcome is recorded later,
    not `error: interrupted` for good."""
    from sidecar.followups.run import actions

    log = ws.logs / "hooks" / "h" / "x.log"
    write_file(actions.status_file(log), '{"exit": 0}')
    real = ws.logs.with_name("logs.real")
    ws.logs.rename(real)
    plant_link(ws.logs, outside(tmp_path, "hooks", "h"))
    with pytest.raises(safedir.LinkRefused):
        actions.outcome(log)
    ws.logs.unlink()
    real.rename(ws.logs)
    assert actions.outcome(log) == "ok"
