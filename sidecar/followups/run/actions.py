"""What firing a follow-up hook does: run the host's resume command, or the hook's command.

Commands come only from hooks.json and the user's config.toml. Event values (session id,
prompt, paths) are substituted into single argv elements and nothing runs through a shell.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from sidecar import jsonfile, safedir
from sidecar.base import runs
from sidecar.base.errors import SidecarError
from sidecar.base.proc import start_time
from sidecar.coordination.base import RunLease
from sidecar.followups.run.runner import COORDINATION_FD
from sidecar.hosts import registry
from sidecar.layout import Workspace
from sidecar.owner import Account
from sidecar.procwatch import Proc, is_alive

log = logging.getLogger("sidecar")

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
    prompt_file: str | None  # the path `{prompt_file}` names: a copy of the approved bytes
    cwd: Path
    # The hosts' resume options (Host.options), by placeholder name, from config.toml.
    options: Mapping[str, str] = field(default_factory=registry.default_options)

    def placeholders(self, ws: Workspace) -> dict[str, str]:
        # The hosts' options first: none can stand in for a value of the firing's own.
        return {
            **{f"{{{name}}}": value for name, value in self.options.items()},
            "{session_id}": self.session_id,
            "{harness_session_id}": self.harness_session_id,
            "{prompt}": self.prompt,
            "{prompt_file}": self.prompt_file or "",
            "{host}": self.host,
            "{hook_id}": self.hook_id,
            "{workspace}": str(ws.root),
        }

    def environment(self, ws: Workspace, base: Mapping[str, str]) -> dict[str, str]:
        """`base` (the daemon's environment and the environment file's variables over it, or
        the owner's clean one), then the firing's own variables."""
        return {
            **base,
            "SIDECAR_HOOK_ID": self.hook_id,
            "SIDECAR_SESSION_ID": self.session_id,
            "SIDECAR_HARNESS_SESSION_ID": self.harness_session_id,
            "SIDECAR_HOST": self.host,
            "SIDECAR_WORKSPACE": str(ws.root),
            "PWD": str(self.cwd),  # opencode takes its project folder from PWD, not its cwd
        }


class ActionError(SidecarError):
    """The action cannot be started; the message becomes the hook's `lastStatus`."""


class CannotResume(ActionError):
    """The host cannot resume a session unattended, and config.toml names no command that
    does (`Host.resume_refusal`): the follow-up is skipped, not failed."""


PLACEHOLDER = re.compile(r"\{[a-z_]+\}")
STDIN = "<"  # a template element `<{prompt}`: not an argument, the program's standard input


def substitute(template: list[str], values: dict[str, str]) -> list[str]:
    """Fill placeholders inside each element, in one pass over the template: a value (a
    prompt that mentions `{workspace}`, say) is never searched for placeholders itself.
    Every element stays exactly one argument."""
    def fill(match: re.Match[str]) -> str:
        return values.get(match.group(0), match.group(0))

    return [PLACEHOLDER.sub(fill, element) for element in template]


@dataclass(frozen=True)
class Command:
    """What a firing runs: its argv, and the text it gets on standard input (None: none)."""

    argv: list[str]
    stdin: str | None = None


def resume_refusal(host: str, resume: Mapping[str, Sequence[str]]) -> str | None:
    """Why a resume of `host` is skipped: it cannot resume unattended, and `[resume]` names
    no command of the user's for it. None: it has a command (or a missing one is an error)."""
    known = registry.find(host)
    return known.resume_refusal() if known is not None and host not in resume else None


def build_argv(action: str | list[str], firing: Firing, resume: Mapping[str, Sequence[str]],
               ws: Workspace) -> Command:
    if action == "resume":
        template = resume.get(firing.host)
        refusal = resume_refusal(firing.host, resume)
        if refusal is not None:
            raise CannotResume(refusal)
        if template is None:
            raise ActionError(f"no resume command for host {firing.host!r} (set [resume] in config.toml)")
    else:
        template = action
    # Some hosts take a prompt best on standard input: opencode re-quotes an argument that
    # holds a space, so `<{prompt}` hands it the text exactly as written.
    words = [e for e in template if not e.startswith(STDIN + "{")]
    given = [e[len(STDIN):] for e in template if e.startswith(STDIN + "{")]
    values = firing.placeholders(ws)
    stdin = substitute(given[-1:], values)[0] if given else None
    return Command(substitute(words, values), stdin)


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


def start(argv: list[str], cwd: Path, env: dict[str, str], log_path: Path,
          account: Account | None = None, stdin: str | None = None,
          lease: RunLease | None = None) -> Proc:
    """Start the action through `sidecar.runner`, in a session of its own, and return its
    process: it outlives this instance, and its outcome lands in `status_file(log_path)`.
    With `account`, the runner and the action run as that user (uid, gid, groups). `stdin`
    is given to the action on its standard input (an unlinked file: nothing waits on a pipe).

    The log's folder is made and opened without following a link, and the runner gets it as
    a descriptor, so nothing of the firing is ever written through a symlinked folder."""
    try:
        folder = safedir.open_dir(log_path.parent, create=True)
    except OSError as exc:
        raise ActionError(f"{exc.filename}: {exc.strerror}; the firing's log is never "
                          "written through a link") from None
    passed: tuple[int, ...] = (folder,)
    if lease is not None:  # the runner's lease: its URL on a pipe, never in an environment
        env = {**env, **lease.env, COORDINATION_FD: str(pipe := _pipe_of(lease.url))}
        passed = (folder, pipe)
    try:
        given = _input(stdin)
    except OSError as exc:  # no room for a temporary file, say
        for fd in passed:
            os.close(fd)
        raise ActionError(f"cannot give {argv[0]!r} its standard input: {exc.strerror or exc}") from None
    try:
        fd = os.open(log_path.name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
                     | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600, dir_fd=folder)  # never a FIFO's wait
        with open(fd, "ab") as log_file:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ActionError(f"{log_path} is not a regular file; the firing's log is never "
                                  "written there")
            safedir.give_to_owner(fd, folder)
            as_who = "" if account is None else f" as {account.name} (uid {account.uid})"
            log_file.write(f"$ {argv!r}\n(cwd {cwd}){as_who}\n".encode())
            log_file.flush()
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-S", RUNNER, str(folder), log_path.name, "--", *argv],
                    cwd=cwd, env=env, stdin=given, stdout=log_file,
                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
                    pass_fds=passed, user=account.uid if account else None,
                    group=account.gid if account else None,
                    extra_groups=list(account.groups) if account else None)
            except OSError as exc:
                if account is not None and exc.filename in (None, sys.executable):
                    raise ActionError(  # the runner itself, as the owner
                        f"cannot start sidecar's runner ({sys.executable}) as {account.name}: "
                        f"{exc.strerror or exc}; install sidecar where that user can run it"
                    ) from None
                raise ActionError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None
    finally:
        for fd in passed:
            os.close(fd)  # the runner holds its own copies
        if not isinstance(given, int):
            given.close()
    # Not waited for through this Popen: any instance may be the one that sees it end.
    proc.returncode = 0  # keeps subprocess from warning about a child it never waited for
    return Proc(proc.pid, start_time(proc.pid))


def _pipe_of(data: bytes) -> int:
    """A pipe's read end holding `data` whole (a URL: far below a pipe's buffer)."""
    read, write = os.pipe()
    try:
        os.write(write, data)
    finally:
        os.close(write)
    return read


def _input(text: str | None) -> int | IO[bytes]:
    """The action's standard input: the text in an unlinked file, else nothing."""
    if text is None:
        return subprocess.DEVNULL
    handle = tempfile.TemporaryFile()
    handle.write(text.encode())
    handle.seek(0)
    return handle


def status_file(log_path: Path) -> Path:
    return log_path.with_name(log_path.name + ".status")


def settle_start(log_path: Path, runs_as: int) -> Proc | None:
    """For a firing whose instance died before recording its start: the runner's process if
    it started and still runs, else None (it has ended, or now never will: see
    `sidecar.runner`), whose outcome `outcome(log_path)` then tells.

    The start token lies in the workspace, which its owner can write: its pid counts only if
    that process runs now and is the runner of this very log, running as `runs_as` and
    leading its own process group, so a planted pid is never adopted, signed or signalled."""
    from sidecar.followups.run.runner import claim_start

    token = log_path.name + ".started"
    try:
        with safedir.opened(log_path.parent, create=True) as folder:
            if claim_start(folder, token, '{"givenUp": true}'):
                return None
        started = json.loads(jsonfile.read_bytes(log_path.with_name(token)))
    except (OSError, ValueError, SidecarError):
        return None
    pid, begun = started.get("pid"), started.get("start")
    if type(pid) is not int or type(begun) is not int or pid <= 1:
        return None
    proc = Proc(pid, begun)
    if not is_alive(proc):
        return None  # ended already: nothing to adopt
    if not is_runner_of(proc, log_path, runs_as):
        log.warning("%s: its start token names pid %d, which is not this firing's runner; "
                    "not adopted", log_path, pid)
        return None
    return proc


def is_runner_of(proc: Proc, log_path: Path, runs_as: int) -> bool:
    """Whether `proc` is `sidecar.runner` for `log_path`, run as `runs_as`, leading its group."""
    try:
        with open(f"/proc/{proc.pid}/cmdline", "rb") as handle:
            args = handle.read().split(b"\0")
        owner = os.stat(f"/proc/{proc.pid}").st_uid
        group = os.getpgid(proc.pid)
    except OSError:
        return False
    runner = RUNNER.encode()
    if runner not in args or owner != runs_as or group != proc.pid or not is_alive(proc):
        return False
    at = args.index(runner)
    return args[at + 2:at + 4] == [log_path.name.encode(), b"--"]


def outcome(log_path: Path) -> str:
    """The recorded outcome of an action that has ended: ok, or error: why."""
    try:
        status = json.loads(jsonfile.read_bytes(status_file(log_path)))
    except safedir.LinkRefused:
        raise  # `logs` was swapped for a link: read it again once the workspace is repaired
    except (OSError, ValueError, SidecarError):
        return "error: interrupted"  # the runner itself was killed before it could say
    return runs.described(status)


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
    with suppress(ChildProcessError):  # started by another instance: not ours to reap
        os.waitpid(pid, os.WNOHANG)
