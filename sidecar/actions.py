"""What firing a follow-up hook does: run the host's resume command, or the hook's command.

Commands come only from hooks.json and the user's config.toml. Event values (session id,
prompt, paths) are substituted into single argv elements and nothing runs through a shell.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .kinds import SidecarError
from .layout import Workspace

KILL_GRACE = 5.0  # seconds between SIGTERM and SIGKILL for an action's process group


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

    def placeholders(self, ws: Workspace) -> dict[str, str]:
        return {
            "{session_id}": self.session_id,
            "{harness_session_id}": self.harness_session_id,
            "{prompt}": self.prompt,
            "{prompt_file}": str(ws.context / self.prompt_file) if self.prompt_file else "",
            "{host}": self.host,
            "{hook_id}": self.hook_id,
            "{workspace}": str(ws.root),
        }

    def environment(self, ws: Workspace) -> dict[str, str]:
        return {
            **os.environ,
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


class RunningAction:
    """One action's process: started at once, waited on, killed whole on timeout or stop."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str], log_path: Path) -> None:
        log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.log_path = log_path
        self.interrupted = threading.Event()
        with open(log_path, "ab") as log:
            log.write(f"$ {argv!r}\n(cwd {cwd})\n".encode())
            log.flush()
            try:
                self.proc = subprocess.Popen(
                    argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
                )
            except OSError as exc:
                raise ActionError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None

    def kill(self) -> None:
        """End the whole process group: SIGTERM, a grace period, then SIGKILL."""
        for sig, wait in ((signal.SIGTERM, KILL_GRACE), (signal.SIGKILL, None)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def interrupt(self) -> None:
        self.interrupted.set()
        self.kill()

    def wait(self, timeout: float) -> str:
        """Wait for the action; returns its status: ok, or error: why."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return f"error: timed out after {timeout:g}s"
        if self.interrupted.is_set():
            return "error: interrupted"
        return "ok" if code == 0 else f"error: exit status {code}"
