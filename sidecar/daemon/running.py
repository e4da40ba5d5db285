"""Whether a pid named by an instance file is really a `sidecar run`.

Instance files lie in a workspace's runtime, which its owner can write: before `reload` or
`uninstall` (perhaps run as root) signals the pid one names, the process must be this machine's
`sidecar run`, so a planted file cannot make sidecar signal some other process.
"""

from __future__ import annotations

import os
import socket
import subprocess

from sidecar.coordination import instances
from sidecar.layout import Workspace


def command_line(pid: int) -> list[str] | None:
    """The process's arguments; None if it is gone or they cannot be read."""
    if pid <= 0:
        return None  # 0 and -1 name process groups and "every process" to kill()
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return [a.decode(errors="replace") for a in handle.read().split(b"\0") if a]
    except FileNotFoundError:
        if os.path.exists("/proc/self/cmdline"):
            return None  # gone
    except OSError:
        return None
    try:  # no /proc (macOS): ps prints the command line, split at spaces
        shown = subprocess.run(["ps", "-o", "command=", "-p", str(pid)], capture_output=True,
                               text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return shown.stdout.split() if shown.returncode == 0 else None


def is_sidecar_run(pid: int) -> bool:
    """Whether `pid` runs `sidecar run` itself: the command (or the interpreter's script) is
    `sidecar`, and its very next word `run`; a wrapper that names it later (`sudo -u bob
    sidecar run`) is not, so its signal never reaches a daemon through it."""
    args = command_line(pid) or []
    at = 0  # the command; or, run by an interpreter (`python -S .../sidecar run`), its script
    if args and os.path.basename(args[0]).startswith("python"):
        at = next((i for i, arg in enumerate(args[1:], 1) if not arg.startswith("-")), len(args))
    return args[at + 1:at + 2] == ["run"] and os.path.basename(args[at]) == "sidecar"


def live_here(ws: Workspace) -> list[tuple[int, str]]:
    """(pid, instance id) of each live instance of this machine that serves `ws`, read
    through no link; OSError or SidecarError if its runtime cannot be read safely. The pids
    are as the instance files say: check `is_sidecar_run` before signalling one."""
    ws.check_runtime()  # nothing is read through a link, even to find a pid
    here = socket.gethostname()
    return [(seen.info.pid, seen.info.id) for seen in instances.seen(ws)
            if seen.live and seen.info.pid is not None and seen.info.pid > 0
            and seen.info.hostname == here]
