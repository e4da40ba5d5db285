"""A file an event names (its `transcript_path`) is opened only as a regular file, and a root
daemon reads it only where the workspace's owner could.

Anyone who can write a workspace's inbox chooses that path. Each test reproduces one attack
on a real daemon: a terminal named as the transcript becomes a root daemon's controlling
terminal (a daemon started in its own session, as systemd starts services), so ^C in it
stops the daemon and ^\\ dumps its core; a FIFO or a device named as the transcript is
opened (a device's open alone can act: a watchdog is armed by it); a file only root may
read is read by a root daemon serving an unprivileged user, and what it says lands in that
user's session record. The users are made with useradd, as in test_privileges.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import test_privileges
from test_privileges import RootDaemon, daemon_command, owned_workspace, stays_alive

from helpers import emit, is_serving, session_record, wait_until
from sidecar.layout import Workspace

ROOT_ONLY = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0
    or any(shutil.which(tool) is None for tool in ("setpriv", "useradd", "userdel", "setsid")),
    reason="needs Linux, root, setsid and useradd: a root daemon serves a real user's workspace")
SECRET = "only-root-may-read-this"
SECRET_TOKENS = 31337
IN_OPEN = 0x20  # inotify: the file was opened (never reported for an O_PATH descriptor)

# test_privileges' fixtures: its throwaway user, a folder they may traverse, a root daemon.
owner, top, root_daemon = test_privileges.owner, test_privileges.top, test_privileges.root_daemon


def end_with(ws: Workspace, session: str, transcript: str | None) -> dict:
    """A Claude Code session starts and ends naming `transcript`, through the real `sidecar
    emit`; its record once the daemon completed it."""
    for event in ("session-start", "session-end"):
        doc = {"event": event, "session_id": session, "host": "claude-code"}
        if transcript is not None:
            doc["transcript_path"] = transcript
        result = emit(ws.root, orjson.dumps(doc))
        assert result.returncode == 0, result.stderr
    return wait_until(lambda: (r := session_record(ws, session)) and r["status"] == "completed" and r, 30)


def refused_turn(marker: str) -> bytes:
    """A Claude Code transcript: a turn with token figures, then a refused one saying `marker`."""
    lines = [{"type": "assistant", "uuid": "u1", "message": {
                 "id": "m1", "role": "assistant", "content": [{"type": "text", "text": "hi"}],
                 "usage": {"input_tokens": SECRET_TOKENS, "output_tokens": 4242}}},
             {"type": "assistant", "uuid": "u2", "isApiErrorMessage": True, "error": "rate_limit",
              "message": {"id": "m2", "role": "assistant",
                          "content": [{"type": "text", "text": f"API Error: {marker}"}]}}]
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def everything_under(folder: Path, but: Path) -> bytes:
    """The bytes of every file under `folder` but `but` (links are not followed)."""
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*"))
                    if p.is_file() and not p.is_symlink() and p != but)


def controlling_tty(pid: int) -> int:
    """The tty_nr of /proc/PID/stat: 0 where the process has no controlling terminal."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[4])


@pytest.fixture
def opens() -> Iterator[tuple[ctypes.CDLL, int]]:
    """An inotify instance (non-blocking) to watch files for being opened."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        pytest.skip(f"no inotify here: {os.strerror(ctypes.get_errno())}")
    try:
        yield libc, fd
    finally:
        os.close(fd)


def was_opened(fd: int) -> bool:
    try:
        return bool(os.read(fd, 4096))
    except BlockingIOError:
        return False


# -- a terminal --------------------------------------------------------------------------------

@ROOT_ONLY
def test_a_terminal_named_as_the_transcript_never_becomes_the_daemons(top, owner, tmp_path):
    """Attack: the owner names their own terminal (a pty) as a session's transcript. A root
    daemon that leads its own session (setsid, as systemd starts a service) opened it without
    O_NOCTTY and took it as its controlling terminal: ^C in it then stopped the daemon with a
    clean exit 0 (which `Restart=on-failure` does not restart), ^\\ dumped its core. Now the
    terminal is never opened: the daemon has no terminal, lives through both, and serves on."""
    ws = owned_workspace(top, owner)
    master, slave = os.openpty()
    terminal = os.ttyname(slave)
    os.close(slave)
    os.chown(terminal, owner.uid, -1)  # the owner's own terminal
    command, env = daemon_command(owner)
    daemon = RootDaemon(["setsid", *command], ["--root", str(ws.root)],
                        tmp_path / "root-daemon.log", env)
    try:
        wait_until(lambda: is_serving(ws, daemon), 20)
        assert end_with(ws, "tty", terminal)["status"] == "completed"
        for key in (b"\x03", b"\x1c"):  # ^C (SIGINT), ^\ (SIGQUIT)
            os.write(master, key)
            assert stays_alive(daemon.proc, 2), \
                f"{key!r} in the transcript's terminal stopped the daemon " \
                f"(exit {daemon.proc.returncode})\n{daemon.output()}"
        assert controlling_tty(daemon.pid) == 0, "the daemon has a controlling terminal"
        assert end_with(ws, "after", None)["status"] == "completed"  # it still serves
    finally:
        code = daemon.stop()
        os.close(master)
    assert code == 0  # stopped by the test's SIGTERM, by nothing else


# -- FIFOs and devices ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_device_named_as_the_transcript_is_never_opened(workspace, start_daemon,
                                                                  tmp_path, opens, kind):
    """Attack: an event names a FIFO, or a device (here /dev/zero's numbers, a node of the
    test's own so that nobody else's open of it counts), as the transcript. The daemon opened
    it (without blocking, and then refused it for not being a regular file), but a device's
    open alone can act. Now neither is opened at all, nothing hangs, and the session is
    recorded as usual."""
    path = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(path)
    elif os.geteuid() != 0:
        pytest.skip("only root can make a device node")
    else:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))
    libc, inotify = opens
    assert libc.inotify_add_watch(inotify, os.fsencode(path), IN_OPEN) >= 0
    daemon = start_daemon(workspace.root)
    done = end_with(workspace, "odd", str(path))
    assert done["status"] == "completed"
    assert "tokens" not in done["metadata"]["sidecar"]
    assert not was_opened(inotify), f"the daemon opened the {kind}\n{daemon.output()}"
    assert daemon.proc.poll() is None


# -- files only root may read --------------------------------------------------------------------

PLACES = ["root's 0600 file", "root's 0644 file in root's 0700 folder",
          "the owner's link to root's file", "the owner's own file"]


def place_transcript(where: str, searchable: Path, ws: Workspace,
                     user: test_privileges.Owner) -> Path:
    """The transcript `where` says, holding SECRET and SECRET_TOKENS; root's are in
    `searchable` (a folder `user` may search) or in a folder of root's only inside it."""
    if where == "the owner's own file":
        path = ws.root / "mine.jsonl"
    elif where == "root's 0600 file":
        path = searchable / "secret.jsonl"
    else:  # readable, in a folder of root's only
        (searchable / "root-only").mkdir(mode=0o700)
        path = searchable / "root-only" / "secret.jsonl"
    path.write_bytes(refused_turn(SECRET))
    os.chmod(path, 0o644 if path.parent.name == "root-only" else 0o600)
    if where == "the owner's own file":
        user.chown(path)
    if where == "the owner's link to root's file":
        link = ws.root / "link.jsonl"
        link.symlink_to(path)
        os.lchown(link, user.uid, user.gid)
        return link
    return path


@ROOT_ONLY
@pytest.mark.parametrize("where", PLACES)
def test_a_root_daemon_reads_a_transcript_only_where_its_owner_could(top, owner, config_home,
                                                                     root_daemon, where):
    """Attack: the owner names, as their session's transcript, a file only root may read
    (0600, or readable but inside a folder only root may search, or reached through a link of
    theirs). Their root daemon read it as root: the refused turn's text and the token figures
    were copied into their session record. Now it reads as the owner would: nothing of such a
    file reaches the workspace, while the owner's own transcript is read as before."""
    ws = owned_workspace(top, owner)
    transcript = place_transcript(where, top, ws, owner)
    daemon = root_daemon(ws.root)
    done = end_with(ws, "secret", str(transcript))
    figures = done["metadata"]["sidecar"].get("tokens")
    found = everything_under(ws.root, transcript)
    if where == "the owner's own file":
        assert figures is not None and SECRET_TOKENS in figures.values(), daemon.output()
        assert SECRET.encode() in found  # the refused turn's text, in the record and trace
        return
    assert figures is None, f"root's figures reached the owner's record\n{daemon.output()}"
    assert SECRET.encode() not in found, "root's text reached the owner's workspace"
    assert str(SECRET_TOKENS).encode() not in found
    assert daemon.proc.poll() is None


def test_a_nul_byte_in_a_named_path_is_no_error_and_the_sweep_goes_on(tmp_path):
    """A path with a NUL byte (which no file can have) made every open raise ValueError, not
    OSError: the stale sweep stopped at that session each time, logging a traceback."""
    from test_followups import T0, Harness, ev

    h = Harness(tmp_path)
    h.apply(ev("SessionStart", session="nul", transcript_path=f"{tmp_path}/a\x00b"),
            ev("SessionStart", session="plain"))
    assert sum(map(len, h.sessions.load_bindings().by_host.values())) == 2
    h.sessions.sweep(T0 + 10**6, 60.0)
    assert sum(map(len, h.sessions.load_bindings().by_host.values())) == 0  # both swept
