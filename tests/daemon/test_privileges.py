"""A root daemon serving a workspace another user owns never lends that user root's rights.

Each test reproduces one attack by the workspace's owner, a real unprivileged user made for
this module (useradd), on a root daemon (`sidecar run` as root, as a system-wide service
would run it): a hook run as root, root's trust counted for the owner's commands, a planted
run record that makes root signal a root process, a planted log path that makes root create
folders where it says, and folders swapped for symlinks to root-only places while root
writes. The set-up follows test_hardening's: a top folder made with mkdtemp and opened
(0755) so the user can reach the workspace inside it, `sidecar init` as root, `chown -R`,
and `setpriv` to act as the user.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from helpers import REPO, SIDECAR, DaemonProcess, end_session, is_serving, read_json, run_cli, wait_until
from sidecar import owner as owner_mod
from sidecar.base.ids import harness_id
from sidecar.base.proc import start_time
from sidecar.followups import trust
from sidecar.followups.queue import FOREIGN_RUN
from sidecar.followups.run import actions
from sidecar.layout import Workspace
from sidecar.owner import SAFE_PATH
from sidecar.procwatch import Proc, is_alive
from support.record import use_hooks

TOOLS = ("setpriv", "useradd", "userdel")
TOGGLER = Path(__file__).with_name("symlink_toggler.py")
LINK_REFUSED = "is a symlink; sidecar never writes through one"
OLD = "2020-01-01T00:00:00Z"

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0
    or any(shutil.which(tool) is None for tool in TOOLS),
    reason="needs Linux, root, and setpriv, useradd and userdel: these tests make a real "
           "user, serve its workspace from a root daemon and act as that user")


# -- the user ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Owner:
    """The throwaway user that owns the workspaces here."""

    name: str
    uid: int
    gid: int
    home: Path
    python: str  # an interpreter this user can run (for the scripts run as them)

    @property
    def config(self) -> Path:
        """Their sidecar folder, as a root daemon finds it (their home from pwd)."""
        return self.home / ".config" / "sidecar"

    def command(self, *argv: str) -> list[str]:
        """`argv` run as this user: their uid and gid, no other group, no capability."""
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", *argv]

    def run(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(*argv), capture_output=True, timeout=timeout)

    def chown(self, path: Path) -> None:
        subprocess.run(["chown", "-R", f"{self.uid}:{self.gid}", str(path)], check=True)


def _runs_as(uid: int, gid: int, argv: list[str]) -> subprocess.CompletedProcess | None:
    """`argv` run as uid/gid the way sidecar starts an action (no capabilities left at exec,
    unlike setpriv, which still resolves the program's path with root's); None if it cannot
    be started at all."""
    try:
        return subprocess.run(argv, user=uid, group=gid, extra_groups=[], capture_output=True,
                              timeout=30, cwd="/")
    except OSError:
        return None


def _pythons() -> list[str]:
    found = [sys.executable, "/usr/bin/python3", "/usr/local/bin/python3", shutil.which("python3")]
    return list(dict.fromkeys(p for p in found if p))


@pytest.fixture(scope="module")
def owner() -> Iterator[Owner]:
    """A real user (`useradd -m`), its home in a folder anyone may traverse; removed after."""
    top = Path(tempfile.mkdtemp(prefix="sidecar-owner-"))
    os.chmod(top, 0o755)
    name = f"sidecar-t{secrets.token_hex(3)}"
    home = top / "home"
    made = subprocess.run(["useradd", "-m", "-d", str(home), "-s", "/bin/sh", name],
                          capture_output=True, text=True)
    if made.returncode != 0:
        shutil.rmtree(top, ignore_errors=True)
        pytest.skip(f"useradd cannot make a user here: {made.stderr.strip()}")
    try:
        entry = pwd.getpwnam(name)
        python = next((p for p in _pythons() if (r := _runs_as(
            entry.pw_uid, entry.pw_gid, [p, "-S", "-c", "pass"])) and r.returncode == 0), None)
        if python is None:
            pytest.skip(f"no python3 here that {name} may run (tried {_pythons()})")
        yield Owner(name, entry.pw_uid, entry.pw_gid, home, python)
    finally:
        if subprocess.run(["userdel", name], capture_output=True).returncode != 0:
            subprocess.run(["userdel", "-f", name], capture_output=True)
        shutil.rmtree(top, ignore_errors=True)


def daemon_command(owner: Owner) -> tuple[list[str], dict[str, str]]:
    """How to start a root daemon whose actions can start as `owner`: the program and extra
    environment.

    A daemon starts each action's runner (`python -S sidecar/runner.py`) with its own
    interpreter, as the owner. Where the owner may not run this test's interpreter (a
    virtualenv over a python under root's 0700 home, say), the daemon is run by an
    interpreter of the same version that they may run, with this one's packages on its
    path: the daemon is still root, only its interpreter's path changes."""
    runner = [actions.RUNNER]  # no arguments: it prints its usage and exits 2
    ours = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for python in _pythons():
        started = _runs_as(owner.uid, owner.gid, [python, "-S", *runner])
        if started is None or started.returncode != 2:
            continue
        if python == sys.executable:
            return [SIDECAR], {}
        version = _runs_as(owner.uid, owner.gid, [python, "-S", "-c",
                                                  "import sys; print('%d.%d' % sys.version_info[:2])"])
        if version is not None and version.stdout.decode().strip() == ours:
            paths = sysconfig.get_paths()
            project = str(REPO)
            path = os.pathsep.join(dict.fromkeys([project, paths["purelib"], paths["platlib"]]))
            return [python, "-s", SIDECAR], {"PYTHONPATH": path}
    pytest.skip(f"{owner.name} can run no python {ours} with {actions.RUNNER} readable: a root "
                "daemon runs its actions' runner with its own interpreter, as the owner")


class RootDaemon(DaemonProcess):
    """A `sidecar run` as root, started by `command` (see daemon_command)."""

    def __init__(self, command: list[str], args: list[str], log: Path, env: dict[str, str]) -> None:
        self.log_path = log
        self.log = open(log, "ab")
        self.proc = subprocess.Popen([*command, "run", *args], stdout=self.log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env={**os.environ, **env})


@pytest.fixture
def root_daemon(tmp_path: Path, config_home: Path,
                owner: Owner) -> Iterator[Callable[..., RootDaemon]]:
    """Start a root daemon serving a workspace (waits until it leads it); stopped after."""
    command, extra_env = daemon_command(owner)
    started: list[RootDaemon] = []

    def start(root: Path, *, wait_leader: bool = True, env: dict[str, str] | None = None) -> RootDaemon:
        daemon = RootDaemon(command, ["--root", str(root)], tmp_path / f"root-daemon-{len(started)}.log",
                            {**extra_env, **(env or {})})
        started.append(daemon)
        if wait_leader:
            wait_until(lambda: is_serving(Workspace(root), daemon), 20)
        return daemon

    try:
        yield start
    finally:
        for daemon in started:
            daemon.stop()


@pytest.fixture
def top(owner: Owner) -> Iterator[Path]:
    """A folder the user can traverse (and not write), for one test; the user's sidecar
    folder starts empty."""
    shutil.rmtree(owner.home / ".config", ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix="sidecar-priv-"))
    os.chmod(folder, 0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(owner.home / ".config", ignore_errors=True)


# -- helpers ----------------------------------------------------------------------------------

def owned_workspace(top: Path, owner: Owner, *hooks: dict) -> Workspace:
    """`sidecar init` as root (registered in root's registry), `hooks` (if any) as the whole
    of its hooks (trusted by no one), then everything given to the owner."""
    root = top / "ws"
    root.mkdir()
    result = run_cli("init", str(root))
    assert result.returncode == 0, result.stderr
    ws = Workspace(root)
    if hooks:
        use_hooks(ws, list(hooks))
    owner.chown(root)
    return ws


def command_hook(hook_id: str, argv: list[str], delay: int = 0) -> dict:
    return {"id": hook_id, "name": hook_id, "event": "session-end", "delaySeconds": delay,
            "promptFile": None, "action": argv, "enabled": True}


def trusted_hook(ws: Workspace, hook_id: str) -> trust.Content:
    """What the hook does as it stands, to trust."""
    from sidecar.followups import store

    return trust.content(ws, store.read_view(ws).hooks[hook_id])


def trust_as_owner(ws: Workspace, hook_id: str, owner: Owner) -> Path:
    """Trust the hook the way the owner's own `sidecar hooks trust` would: in their folder,
    a file of theirs. Returns the trust file."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SIDECAR_CONFIG_HOME", str(owner.config))
        trust.trust(ws, trusted_hook(ws, hook_id), time.time())
    owner.chown(owner.home / ".config")
    return owner.config / trust.TRUST_FILE


def hook(ws: Workspace, hook_id: str) -> dict:
    return read_json(ws.hooks_file)["hooks"][hook_id]


def plant_claimed(ws: Workspace, owner: Owner, session: str, **more: object) -> None:
    """As the owner, add to hooks.json's queue by hand, keeping the rest, a post-task entry for
    `session` (and `more`) claimed long ago by an instance now dead."""
    entry = {"hookId": "post-task", "host": "claude-code", "sessionId": session, "dueAt": OLD,
             "claimedBy": "dead-instance", "claimedAt": OLD, **more}
    script = ("import json, sys\n"
              "path = sys.argv[1]\n"
              "doc = json.load(open(path))\n"
              "doc['pending'].append(json.loads(sys.argv[2]))\n"
              "open(path, 'w').write(json.dumps(doc, indent=2))\n")
    result = owner.run(owner.python, "-S", "-c", script, str(ws.hooks_file),
                       orjson.dumps(entry).decode())
    assert result.returncode == 0, result.stderr
    assert read_json(ws.hooks_file)["pending"][-1]["sessionId"] == entry["sessionId"]


def stays_alive(proc: subprocess.Popen, seconds: float) -> bool:
    try:
        proc.wait(seconds)
    except subprocess.TimeoutExpired:
        return True
    return False


def snapshot(folder: Path) -> dict[str, tuple]:
    """Everything under `folder` (itself included): kind, mode, owner, links, size, content."""
    found: dict[str, tuple] = {}
    for path in [folder, *sorted(folder.rglob("*"))]:
        st = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not \
            path.is_symlink() else None
        found[str(path.relative_to(folder))] = (st.st_mode, st.st_uid, st.st_gid, st.st_nlink,
                                                st.st_size if digest else None, digest)
    return found


# -- actions run as the owner -----------------------------------------------------------------

def test_a_root_daemon_runs_an_owners_trusted_hook_as_the_owner(top, owner, config_home, root_daemon):
    """Attack: the owner writes a command hook and trusts it; the root daemon serving their
    workspace fires it. Before, it ran as root (uid 0, root's groups, root's HOME and
    environment, root's `environment` file): a root shell for anyone who owns a workspace.
    Now it runs as the owner, with a clean environment and their own environment file, and
    its log is theirs."""
    out = top / "ws" / "who.txt"
    script = ('id -u > "$0"; id -g >> "$0"; echo "$HOME" >> "$0"; id -G >> "$0"; '
              'echo "${OWNER_MARK-unset}" >> "$0"; echo "${ROOT_MARK-unset}" >> "$0"; '
              'echo "${DAEMON_MARK-unset}" >> "$0"; echo "$PATH" >> "$0"')
    argv = ["sh", "-c", script, str(out)]
    ws = owned_workspace(top, owner, command_hook("who", argv))
    trust_as_owner(ws, "who", owner)
    (owner.config / "environment").write_text("OWNER_MARK=from-the-owner\n")
    owner.chown(owner.config)
    (config_home / "environment").write_text("ROOT_MARK=root's\n")  # root's own: not for them

    daemon = root_daemon(ws.root, env={"DAEMON_MARK": "root's"})
    end_session(ws.root, "s1")
    status = wait_until(lambda: hook(ws, "who").get("lastStatus"), 30)
    assert status == "ok", f"{status}\n{daemon.output()}"

    assert out.read_text().splitlines() == [
        str(owner.uid), str(owner.gid), str(owner.home), str(owner.gid), "from-the-owner",
        "unset", "unset", SAFE_PATH]
    assert out.stat().st_uid == owner.uid
    folder = ws.logs / "hooks" / "who"
    assert [p.name for p in folder.glob("*.log")], "no firing log"
    for path in [folder, *folder.iterdir()]:  # the log, its .started and .status
        assert (path.stat().st_uid, path.stat().st_gid) == (owner.uid, owner.gid), path
    assert f"as {owner.name} (uid {owner.uid})" in next(folder.glob("*.log")).read_text()


@pytest.mark.parametrize("where", ["root's own trust file", "the owner's, writable by anyone",
                                   "in the owner's folder, another user's file",
                                   "the owner's folder, a link to root's"])
def test_only_the_owners_own_trust_counts(top, owner, config_home, root_daemon, where):
    """Attack: a command hook the owner never trusted (a cloned repository's, say) is
    trusted elsewhere: in root's own trust file (root's `sidecar hooks trust`, or a root
    daemon that counted its own user's trust), or in a trust file in the owner's folder
    that someone else may write or that belongs to someone else. Before, root's trust made
    a root daemon run it; now none of these counts, and the firing says why."""
    out = top / "ws" / "ran.txt"
    argv = ["sh", "-c", 'id -u > "$0"', str(out)]
    ws = owned_workspace(top, owner, command_hook("cmd", argv))
    if where == "root's own trust file":
        trust.trust(ws, trusted_hook(ws, "cmd"), time.time())  # the daemon's: config_home
        assert "cmd" in str(read_json(config_home / trust.TRUST_FILE))
    else:
        path = trust_as_owner(ws, "cmd", owner)
        if where == "the owner's, writable by anyone":
            os.chmod(path, 0o666)
        elif where == "the owner's folder, a link to root's":
            # Root's own folder (a trust file trusting it, root's keys in `environment`),
            # which the owner links their ~/.config/sidecar to.
            shutil.move(str(owner.config), str(config_home / "owner-made"))
            subprocess.run(["chown", "-R", "0:0", str(config_home / "owner-made")], check=True)
            owner.config.symlink_to(config_home / "owner-made")
            os.lchown(owner.config, owner.uid, owner.gid)
        else:
            os.chown(path, 65534, 65534)

    daemon = root_daemon(ws.root)
    end_session(ws.root, "s1")
    status = wait_until(lambda: hook(ws, "cmd").get("lastStatus"), 30)
    assert status == str(trust.NOT_TRUSTED), f"{status}\n{daemon.output()}"
    assert not out.exists()
    assert hook(ws, "cmd")["history"][-1]["log"] is None


# -- records planted in hooks.json ------------------------------------------------------------

@pytest.mark.parametrize("mac", [None, "forged"])
def test_a_planted_run_record_is_never_signalled(top, owner, config_home, root_daemon, mac):
    """Attack: the owner writes a queue entry claimed by a dead instance whose `run` names a
    root process (pid and its true start time), so that the root daemon adopts it as a
    running action, times it out (actionTimeout 1s) and kills its process group. Before,
    root killed it. Now a run record without this daemon user's MAC is dropped, nothing is
    signalled, and the hook's history says so."""
    (config_home / "config.toml").write_text(
        (config_home / "config.toml").read_text() + 'actionTimeout = "1s"\n')
    ws = owned_workspace(top, owner)  # the seeded hooks: post-task is enabled
    victim = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        begun = start_time(victim.pid)
        assert begun is not None and is_alive(Proc(victim.pid, begun))  # the record is true
        run = {"pid": victim.pid, "start": begun, "startedAt": OLD,
               "log": str(ws.logs / "hooks" / "post-task" / "planted.log")}
        if mac:
            run["mac"] = secrets.token_hex(32)
        plant_claimed(ws, owner, "x1", run=run)

        daemon = root_daemon(ws.root)
        wait_until(lambda: not read_json(ws.hooks_file)["pending"], 30)
        status = hook(ws, "post-task")["history"][-1]["status"]
        assert status.startswith("error: its run record was not written by this user's sidecar")
        assert status == str(FOREIGN_RUN)
        assert stays_alive(victim, 4), f"the root process was killed\n{daemon.output()}"
        assert daemon.proc.poll() is None
    finally:
        victim.kill()
        victim.wait()


@pytest.mark.parametrize("name", ["evil.log", "evil"])
def test_a_planted_log_path_is_never_created(top, owner, root_daemon, name):
    """Attack: the owner writes a queue entry claimed by a dead instance, never started, whose
    `log` is a path in a root-only folder: recovering it, the root daemon would make the
    log's folder there (and its `.started` token), as root. Now only the path's last part
    counts, inside the hook's own log folder, and only a plain `*.log` name: nothing
    appears outside the workspace, and the firing is recorded as interrupted."""
    secret = top / "root-only"
    secret.mkdir(mode=0o700)
    planted = secret / "planted-dir" / name
    ws = owned_workspace(top, owner)
    plant_claimed(ws, owner, "x2", log=str(planted))

    daemon = root_daemon(ws.root)
    wait_until(lambda: not read_json(ws.hooks_file)["pending"], 30)
    assert hook(ws, "post-task")["history"][-1]["status"] == "error: interrupted"
    assert os.listdir(secret) == []
    strays = [os.path.join(d, f) for d, _, files in os.walk(top) for f in files
              if f.startswith("evil") and not Path(d).is_relative_to(ws.logs)]
    assert strays == []
    given_up = ws.logs / "hooks" / "post-task" / "evil.log.started"
    assert given_up.exists() == (name == "evil.log")  # the name's own place, in the workspace
    assert daemon.proc.poll() is None


# -- folders swapped for symlinks while the daemon writes --------------------------------------

TOGGLED = ("inbox/rejected", "inbox", "sessions", "logs")


@pytest.mark.slow
def test_blind_symlink_toggling_plants_nothing_outside_the_workspace(top, owner, root_daemon):
    """Attack: for 20 s the owner swaps `inbox/rejected`, `inbox`, `sessions` and `logs`
    (under .context/runtime) with symlinks to root-only folders, back and forth as fast as
    they can (renameat2 RENAME_EXCHANGE where the kernel has it), while dropping bad files
    and sessions that end (and fire a trusted hook) into the inbox: a root daemon that checks
    a folder and then writes by path sometimes writes (or moves a root file) through the
    link. Now every write walks its folders without following links: each target holds
    exactly what it held, the daemon never stops, sets the workspace aside and serves it
    again once the links are gone."""
    argv = ["true"]
    ws = owned_workspace(top, owner, command_hook("fire", argv))
    trust_as_owner(ws, "fire", owner)
    secret = top / "root-only"
    secret.mkdir(mode=0o700)
    pairs = []
    for rel in TOGGLED:
        target = secret / rel.replace("/", "-")
        target.mkdir(mode=0o700)
        # An inbox would take this for an event (and set it aside); a folder for a file.
        (target / "root-secret.json").write_bytes(b"not json")
        (target / "shadow").write_bytes(b"root's\n")
        for path in target.iterdir():
            path.chmod(0o600)
        pairs.append(f"{rel}={target}")
    before = snapshot(secret)
    toggler = top / "symlink_toggler.py"
    shutil.copyfile(TOGGLER, toggler)
    toggler.chmod(0o644)

    daemon = root_daemon(ws.root)
    end_session(ws.root, "before")  # something to write at once
    result = owner.run(owner.python, str(toggler), str(ws.runtime), "20", *pairs, timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    summary = orjson.loads(result.stdout)
    print("toggler:", summary)  # shown if the test fails
    assert all(count > 20 for count in summary["swaps"].values()), summary
    assert summary["events"] > 20 and summary["bad"] > 10, summary

    assert daemon.proc.poll() is None, daemon.output()
    assert snapshot(secret) == before  # nothing made, moved, linked or changed there
    assert LINK_REFUSED in daemon.output()
    for rel in TOGGLED:  # the toggler put the folders back
        assert (ws.runtime / rel).is_dir() and not (ws.runtime / rel).is_symlink()

    # Served again: a new session is recorded and its hook fires.
    end_session(ws.root, "after")
    record = ws.session_dir(harness_id("claude-code", "after")) / "session.json"
    wait_until(lambda: record.exists() and read_json(record)["status"] == "completed", 60)
    wait_until(lambda: any(h["sessionId"] == "after" and h["status"] == "ok"
                           for h in hook(ws, "fire")["history"]), 60)
    assert snapshot(secret) == before
    assert daemon.proc.poll() is None


def test_an_owners_unreadable_settings_fail_the_firing_clearly(top, owner, config_home, root_daemon):
    """The owner's config.toml decides how their actions run; a broken one stops the firing
    with its path and the parser's words, and nothing runs (never root's settings instead)."""
    out = top / "ws" / "ran.txt"
    argv = ["sh", "-c", 'id -u > "$0"', str(out)]
    ws = owned_workspace(top, owner, command_hook("cmd", argv))
    trust_as_owner(ws, "cmd", owner)
    (owner.config / "config.toml").write_text("permissionMode = \n")
    owner.chown(owner.config)
    daemon = root_daemon(ws.root)
    end_session(ws.root, "s1")
    status = wait_until(lambda: hook(ws, "cmd").get("lastStatus"), 30)
    assert status.startswith(f"error: {owner.config / 'config.toml'}: "), f"{status}\n{daemon.output()}"
    assert not out.exists()


def test_a_root_daemon_reports_the_owners_environment_and_reads_no_link_of_theirs(
        top, owner, config_home, root_daemon, tmp_path):
    """What doctor checks is what the owner's follow-ups get: their clean environment with
    their environment file (its bad line named), never root's variables; a link in their
    home never makes root read a file of its own to find a variable name."""
    ws = owned_workspace(top, owner)
    owner.config.mkdir(parents=True, exist_ok=True)
    (owner.config / "environment").write_bytes(
        b"ANTHROPIC_API_KEY=sk-theirs\nBAD=caf\xe9\nNAMED_BY_ROOT=x\n")
    os.chmod(owner.config / "environment", 0o600)
    roots_own = tmp_path / "root-codex.toml"  # root's: names a variable the owner also sets
    roots_own.write_text('model_provider = "p"\n[model_providers.p]\nenv_key = "NAMED_BY_ROOT"\n')
    (owner.home / ".codex").mkdir(exist_ok=True)
    (owner.home / ".codex" / "config.toml").unlink(missing_ok=True)
    (owner.home / ".codex" / "config.toml").symlink_to(roots_own)
    owner.chown(owner.home / ".config")
    owner.chown(owner.home / ".codex")
    try:
        root_daemon(ws.root, env={"OPENAI_API_KEY": "root's", "PATH": os.environ["PATH"]})
        [record] = [read_json(p) for p in ws.instances.glob("*.json")]
        env = record["environment"]
        assert env["user"] == owner.name and env["path"] == SAFE_PATH
        # The owner's, not root's OPENAI_API_KEY; and not NAMED_BY_ROOT: only root's file,
        # reached through the owner's link, names it.
        assert env["variables"] == ["ANTHROPIC_API_KEY"]
        assert env["envFileProblems"] == [
            f"{owner.config / 'environment'}: line 2 is not UTF-8 text; skipped"]
        assert "sk-theirs" not in str(record)
        # A file others may write is not the owner's word: refused, and said.
        os.chmod(owner.config / "environment", 0o666)
        account = owner_mod.foreign_owner(ws)
        assert account is not None
        assert owner_mod.owner_config(account).env_problems == (
            f"{owner.config / 'environment'} is not a regular file that only {owner.name} can "
            "write; no variable was read from it",)
    finally:
        shutil.rmtree(owner.home / ".codex", ignore_errors=True)
