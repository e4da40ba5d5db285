"""What firing a follow-up hook does: run the host's resume command, or the hook's command.

Commands come only from hooks.json and the user's config.toml. Event values (session id,
prompt, paths) are substituted into single argv elements and nothing runs through a shell.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .kinds import SidecarError
from .layout import Workspace
from .procwatch import Proc, is_alive, start_time

KILL_GRACE = 5.0  # seconds between SIGTERM and SIGKILL for an action's process group
RUNNER = str(Path(__file__).with_name("runner.py"))  # run by path, without site: fast to start


@dataclass
class Firing:
    """Everything an action needs to know about the firing it serves."""

    hook_id: str
    host: str
    session_id: str
    harness_session_id: str
    prompt: str
    prompt_file: str | None
    cwd: Path
    permission_mode: str = "acceptEdits"  # Claude Code's, from config.toml
    codex_sandbox: str = "workspace-write"  # Codex's sandbox_mode, from config.toml

    def placeholders(self, ws: Workspace) -> dict[str, str]:
        return {
            "{session_id}": self.session_id,
            "{harness_session_id}": self.harness_session_id,
            "{prompt}": self.prompt,
            "{prompt_file}": str(ws.context / self.prompt_file) if self.prompt_file else "",
            "{host}": self.host,
            "{hook_id}": self.hook_id,
            "{workspace}": str(ws.root),
            "{permission_mode}": self.permission_mode,
            "{codex_sandbox}": self.codex_sandbox,
        }

    def environment(self, ws: Workspace, agent_env: Mapping[str, str]) -> dict[str, str]:
        """The daemon's environment, the environment file's variables over it, then the
        firing's own."""
        return {
            **os.environ,
            **agent_env,
            "SIDECAR_HOOK_ID": self.hook_id,
            "SIDECAR_SESSION_ID": self.session_id,
            "SIDECAR_HARNESS_SESSION_ID": self.harness_session_id,
            "SIDECAR_HOST": self.host,
            "SIDECAR_WORKSPACE": str(ws.root),
            "PWD": str(self.cwd),  # opencode takes its project folder from PWD, not its cwd
        }


class ActionError(SidecarError):
    """The action cannot be started; the message becomes the hook's `lastStatus`."""


def substitute(template: list[str], values: dict[str, str]) -> list[str]:
    """Fill placeholders inside each element; every element stays exactly one argument."""
    argv = []
    for element in template:
        for key, value in values.items():
            element = element.replace(key, value)
        argv.append(element)
    return argv


def build_argv(action: str | list[str], firing: Firing, resume: Mapping[str, Sequence[str]],
               ws: Workspace) -> list[str]:
    if action == "resume":
        template = resume.get(firing.host)
        if template is None:
            raise ActionError(f"no resume command for host {firing.host!r} "
                              "(set [resume] in config.toml)")
        return substitute(list(template), firing.placeholders(ws))
    return substitute(list(action), firing.placeholders(ws))


def working_folder(ws: Workspace, cwd: str | None) -> Path:
    """The session's cwd when it lies inside the workspace, else the workspace root."""
    root = ws.root.resolve()
    if cwd:
        try:
            candidate = Path(cwd).resolve()
        except (OSError, RuntimeError):
            return root
        if candidate.is_dir() and (candidate == root or root in candidate.parents):
            return candidate
    return root


def start(argv: list[str], cwd: Path, env: dict[str, str], log_path: Path) -> Proc:
    """Start the action through `sidecar.runner`, in a session of its own, and return its
    process: it outlives this instance, and its outcome lands in `status_file(log_path)`."""
    log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                 0o600)
    with open(fd, "ab") as log:
        log.write(f"$ {argv!r}\n(cwd {cwd})\n".encode())
        log.flush()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-S", RUNNER, str(log_path), "--", *argv],
                cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, close_fds=True,
            )
        except OSError as exc:
            raise ActionError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None
    # Not waited for through this Popen: any instance may be the one that sees it end.
    proc.returncode = 0  # keeps subprocess from warning about a child it never waited for
    return Proc(proc.pid, start_time(proc.pid))


def refuse_links(base: Path, folder: Path) -> None:
    """ActionError if any folder from `base` down to `folder` is a symlink: a log is never
    written through one (a hand-made link could point it anywhere)."""
    path = base
    for part in ("", *folder.relative_to(base).parts):
        path = path / part if part else base
        if path.is_symlink():
            raise ActionError(f"{path} is a symlink; the firing's log is never written through one")


def status_file(log_path: Path) -> Path:
    return log_path.with_name(log_path.name + ".status")


def settle_start(log_path: Path) -> Proc | None:
    """For a firing whose instance died before recording its start: the runner's process if
    it started, else None, having made sure it never will (see `sidecar.runner`)."""
    from .runner import claim_start

    token = log_path.with_name(log_path.name + ".started")
    try:
        log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if claim_start(str(token), '{"givenUp": true}'):
            return None
        started = json.loads(token.read_bytes())
    except (OSError, ValueError):
        return None
    pid = started.get("pid")
    return Proc(pid, started.get("start")) if isinstance(pid, int) else None


def outcome(log_path: Path) -> str:
    """The recorded outcome of an action that has ended: ok, or error: why."""
    try:
        status = json.loads(status_file(log_path).read_bytes())
    except (OSError, ValueError):
        return "error: interrupted"  # the runner itself was killed before it could say
    if "error" in status:
        return f"error: {status['error']}"
    code = status.get("exit")
    return "ok" if code == 0 else f"error: exit status {code}"


def signal_group(proc: Proc, sig: int) -> bool:
    """Signal the action's whole process group, if it is still that process; whether sent."""
    if not is_alive(proc):
        return False
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def reap(pid: int) -> None:
    """Collect an action's exit if this process started it (no zombie left behind)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # started by another instance: not ours to reap
