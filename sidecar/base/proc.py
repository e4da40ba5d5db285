"""A process as the kernel tells it, read once for every command: `/proc/PID/stat`, whether a
process (its pid and start time) still lives, and which host ran a hook.

A process is named by its pid and its start time (clock ticks since boot): a pid the kernel
reused for another process is not the same process. Built-in modules only: `emit` reads the
hook's host here at the cost of a hook, where even `os` costs a seventh of a start (posixos.py).
"""

from __future__ import annotations

import posix
import sys

# System calls through `os` where something loaded it already (a test may stand in for one
# there), else through `posix`, as emit.py makes them.
os = sys.modules.get("os", posix)

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "busybox"})


def stat(pid: int) -> tuple[str, str, int, int] | None:
    """(name, state, parent pid, start time in clock ticks) from /proc; None where the process
    is gone or there is no /proc to read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
        end = data.rfind(b")")  # the name may hold spaces and parentheses
        fields = data[end + 2:].split()
        return (data[data.find(b"(") + 1:end].decode("utf-8", "replace"), fields[0].decode(),
                int(fields[1]), int(fields[19]))
    except (OSError, IndexError, ValueError):
        return None


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot; None if it is gone or unknown."""
    found = stat(pid)
    return None if found is None else found[3]


def is_alive(pid: int, start: int | None) -> bool:
    """Whether the process `pid` that started at `start` (None: any) still runs: kill(0), then
    its state and start time from /proc. Without /proc (macOS), kill(0) is all there is."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: it exists
    found = stat(pid)
    if found is None:
        return stat(posix.getpid()) is None  # no /proc here
    if found[1] == "Z":
        return False  # it has exited; only its parent has not collected it yet
    return start is None or found[3] == start


def host_process() -> tuple[int, int | None, str | None]:
    """The host whose hook this process is: the nearest ancestor that outlives the hook, its
    start time and its name (None where they cannot be read; the name tells the daemon which
    program ran the hook).

    Hosts run hooks through a shell (`sh -c`), which exits with the hook: when the parent is a
    shell, the host is the shell's parent. Elsewhere than Linux, the parent is all there is.
    """
    pid = os.getppid()
    found = stat(pid)
    if found is not None and found[0] in SHELLS and found[2] > 1:
        pid = found[2]
        found = stat(pid)
    return (pid, None, None) if found is None else (pid, found[3], found[0])


ANCESTRY_LIMIT = 32  # parents looked through: far more than any wrapper adds


def ancestors_among(pids: set[int]) -> dict[int, int]:
    """Which of `pids` are ancestors of this process, with their start times: a host that
    names its own pid in its hooks' environment is believed only where it is one."""
    found: dict[int, int] = {}
    pid = os.getppid()
    for _ in range(ANCESTRY_LIMIT):
        if pid <= 1 or len(found) == len(pids):
            break
        read = stat(pid)
        if read is None:
            break
        if pid in pids:
            found[pid] = read[3]
        pid = read[2]
    return found


def process_space() -> str | None:
    """Where a pid means something: this boot of this machine (its boot id), and this PID
    namespace. Another machine's daemon, or one in another namespace, must not look a process
    up by a pid from here."""
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as handle:
            boot = handle.read().strip().decode("ascii", "replace")
        space = os.readlink("/proc/self/ns/pid")  # `pid:[4026531836]`
    except OSError:
        return None
    return f"{boot}/{space[5:-1]}"
