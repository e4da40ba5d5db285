"""`python -S runner.py FD LOG -- ARGV...`: run one follow-up action, detached.

The daemon starts this in a session of its own, so the action does not depend on the instance
that started it: when that instance stops or dies, the action runs on, and whichever instance
leads next reads the outcome this writes (`{"exit": N}` or `{"error": why}`) into `LOG.status`,
by write-then-rename, when the action ends. FD is the log's folder, opened by the daemon without
following a link; every file here is made relative to it (`dir_fd=`), so a folder swapped for a
symlink meanwhile is never written through. The action does not inherit it.

Before it runs anything it creates `LOG.started` (holding its pid and start time) with a hard
link, which fails if the file exists: a leader that finds a claim whose instance died before
recording the start creates that file first to give the firing up, so either the action runs
and is adopted, or it never runs and is recorded interrupted. Never both, never neither.

In Redis mode (the environment holds `SIDECAR_RUN_LEASE`, the lease's key, and
`SIDECAR_COORDINATION_URL`; `SIDECAR_RUN_WAKE` optionally names a channel) it keeps a
liveness lease in Redis (lease.py) from before `LOG.started` is created until after
`LOG.status` is written, so a leader on another machine, where the pid means nothing, reads
lease, then status, then started: a start with neither a lease nor a status means the
machine died. None of these variables reaches the action: the URL may hold a password.

It imports nothing beyond the interpreter's start-up modules and sidecar's `base/proc.py` (the
one reader of /proc) and runs without `site`: every millisecond it takes to start delays the
action. In Redis mode it imports lease.py, and through it redis-py, from the folder the daemon
imports redis-py from (`SIDECAR_RUN_LIBRARY`), which `site` would have put on the path.
"""

import os
import signal
import sys
from contextlib import suppress

if not __package__:  # run as a script, without site: sys.path[0] is this file's own folder
    sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))))  # the folder the sidecar package is in
from sidecar.base import proc  # noqa: E402  (the pid's start and space, read as emit reads them)

TYPE_CHECKING = False  # typing itself is too slow to import here
if TYPE_CHECKING:
    from sidecar.followups.run.lease import Lease

LEASE_KEY = "SIDECAR_RUN_LEASE"
COORDINATION_URL = "SIDECAR_COORDINATION_URL"
# The daemon gives the URL (which may hold a password) on an inherited pipe instead, whose
# descriptor this names: a process's environment is readable by every process of its user
# (/proc/PID/environ), the action's too, and the pipe is read and closed before it starts.
COORDINATION_FD = "SIDECAR_COORDINATION_FD"
LEASE_WAKE = "SIDECAR_RUN_WAKE"
LEASE_LIBRARY = "SIDECAR_RUN_LIBRARY"  # the folder redis-py is imported from
LEASE_VARIABLES = (LEASE_KEY, COORDINATION_URL, COORDINATION_FD, LEASE_WAKE, LEASE_LIBRARY)
LEASE_WITHIN = 2.0  # seconds to reach Redis before the action runs without a lease


def _json_string(text: str) -> str:
    return '"' + "".join("\\" + ch if ch in '"\\' else f"\\u{ord(ch):04x}" if ch < " " else ch
                         for ch in text) + '"'


def write_atomic(folder: int, name: str, text: str, exclusive: bool = False) -> bool:
    """Write `text` to `name` in `folder` by write-then-rename; with `exclusive`, by a hard
    link that fails (returning False) if `name` exists."""
    temp = f".{name}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600, dir_fd=folder)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        if exclusive:
            os.link(temp, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
        else:
            os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
        return True
    except FileExistsError:
        return False
    finally:
        if exclusive:
            os.unlink(temp, dir_fd=folder)


def claim_start(folder: int, token: str, content: str) -> bool:
    """Create `token` holding `content` (JSON), atomically; False if someone came first."""
    return write_atomic(folder, token, content, exclusive=True)


def _coordination_url() -> str:
    """The URL from the daemon's pipe (read whole, then closed), else from the environment."""
    fd = os.environ.get(COORDINATION_FD, "")
    if not fd.isdigit():
        return os.environ.get(COORDINATION_URL, "")
    chunks = []
    try:
        while True:
            chunk = os.read(int(fd), 65536)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        return ""
    finally:
        with suppress(OSError):
            os.close(int(fd))
    return b"".join(chunks).decode("utf-8", "replace")


def take_lease(value: str) -> "Lease | None":
    """In Redis mode, the lease on `SIDECAR_RUN_LEASE`, kept until `Lease.end()`; None
    otherwise, or when Redis cannot be reached (said in the log): the action runs anyway,
    since a leader on this machine still tells by the pid whether it runs."""
    url = _coordination_url()
    if not (os.environ.get(LEASE_KEY) and url):
        return None
    library = os.environ.get(LEASE_LIBRARY)
    if library and library not in sys.path:
        sys.path.append(library)
    try:
        if __package__:
            from sidecar.followups.run import lease as leases
        else:  # run as a script, without site: sys.path[0] is this file's own folder
            import lease as leases  # type: ignore[import-not-found, no-redef]
    except ImportError as exc:
        sys.stderr.write(f"sidecar runner: no liveness lease in Redis (redis-py cannot be imported: {exc}); "
                         "the action runs, and only an instance on this machine can tell that it does\n")
        return None
    try:
        lease: Lease = leases.take(url, os.environ[LEASE_KEY], value,
                                   wake=os.environ.get(LEASE_WAKE) or None, within=LEASE_WITHIN)
    except leases.LeaseError as exc:  # its words name no password
        sys.stderr.write(f"sidecar runner: no liveness lease in Redis ({exc}); the action runs, "
                         "and only an instance on this machine can tell that it does\n")
        return None
    return lease


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--" or not argv[0].isdigit():
        sys.stderr.write("usage: runner.py FD LOG -- ARGV...\n")
        return 2
    folder, log, command = int(argv[0]), argv[1], argv[3:]
    os.set_inheritable(folder, False)  # the log's folder is the runner's, not the action's
    start, space = proc.start_time(os.getpid()), proc.process_space()
    started = (f'{{"pid": {os.getpid()}, "start": {"null" if start is None else start}, '
               f'"space": {"null" if space is None else _json_string(space)}}}')
    # The lease comes first: a leader elsewhere that sees `.started` must find it live.
    lease = take_lease(started)
    if not claim_start(folder, f"{log}.started", started):
        sys.stderr.write("sidecar runner: the firing was given up before it started\n")
        if lease is not None:
            lease.end(publish=False)
        return 0
    try:
        return run(folder, log, command)
    finally:
        if lease is not None:  # after `.status`: the lease's end says "read the status"
            lease.end()


def run(folder: int, log: str, command: list[str]) -> int:
    """Run the action and write its outcome into `LOG.status`."""
    env = {name: value for name, value in os.environ.items() if name not in LEASE_VARIABLES}
    # SIGTERM to the group (a timeout, `sidecar hooks kill-running`) is for the action: this
    # runner stays to record how it ended. (A handler, unlike SIG_IGN, is not inherited.)
    signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        pid = os.posix_spawnp(command[0], command, env)  # same process group as this
    except OSError as exc:
        why = f"cannot start {command[0]!r}: {exc.strerror or exc}"
        write_atomic(folder, f"{log}.status", f'{{"error": {_json_string(why)}}}')
        return 127
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    write_atomic(folder, f"{log}.status", f'{{"exit": {os.waitstatus_to_exitcode(status)}}}')
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
