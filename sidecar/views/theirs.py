"""The user's own status line command, run before sidecar's (`status --line --then COMMAND`):
forked by hand, given the same input, and never waited on past its time. Imported only where
a status line has one (views/line.py), with nothing but the standard library's C parts.
"""

import os
import select
import time

THEIRS_TIMEOUT = 5.0  # seconds the user's own status line command may take
KILL = 9  # SIGKILL (the signal module costs more to import than the whole line)


def run_theirs(command: str, data: bytes, timeout: float = THEIRS_TIMEOUT) -> str:
    """The user's own status line command, run as Claude Code runs it (`sh -c`, the same
    standard input), and what it printed (its last newline dropped). Forked by hand: the
    subprocess module costs more to import than the whole line. It gets `timeout` seconds in
    all, to read its input, print and exit; then it is killed, with whatever it started (its
    own process group), and what it printed so far is shown. Being a group of its own, it
    outlives this process if this is killed first: a death signal (prctl) would need ctypes,
    and would reach the shell alone, not what it started; so the documentation says so."""
    into, out = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its stdin and stdout are the pipes, stderr stays the caller's
        try:
            os.setpgid(0, 0)
            import _signal  # type: ignore[import-not-found]  # (in the child only)

            _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)  # Python ignores it; sh does not
            os.dup2(into[0], 0)
            os.dup2(out[1], 1)
            for fd in (*into, *out):
                os.close(fd)
            os.execv("/bin/sh", ["sh", "-c", command])
        finally:
            os._exit(127)
    try:
        os.setpgid(pid, pid)  # as the child does: whichever runs first
    except OSError:
        pass  # it has set it itself and run its command already
    os.close(into[0])
    os.close(out[1])
    deadline = time.monotonic() + timeout
    try:
        printed, closed = _exchange(into[1], out[0], data, deadline)
    finally:
        os.close(out[0])
    # Killed before it is reaped: until then its group cannot be another's. Its output still
    # open at the deadline means something of it runs on, if not the shell itself (a child it
    # left behind holds it).
    if not closed or not _exited(pid, deadline):
        try:
            os.killpg(pid, KILL)  # too slow for a status bar: it and what it started
        except OSError:
            pass
        os.waitpid(pid, 0)
    return printed.decode("utf-8", "replace").removesuffix("\n")


def _exchange(into: int, out: int, data: bytes, deadline: float) -> tuple[bytes, bool]:
    """Give `data` to `into` and read `out` until it is closed, at once (a command may print
    before it reads) and never waiting past `deadline` (one may never read, or never close).
    What it read, and whether `out` was closed by then."""
    os.set_blocking(into, False)
    left, chunks = memoryview(data), []
    writing = [into]
    closed = False
    try:
        while (wait := deadline - time.monotonic()) > 0:
            if writing and not left:
                os.close(writing.pop())  # all given: it reads the end of its input
            readable, writable, _ = select.select([out], writing, [], wait)
            if writable:
                try:
                    left = left[os.write(into, left[:65536]):]
                except BlockingIOError:
                    pass
                except OSError:  # it closed its input unread: its output still counts
                    left = left[:0]
            if readable:
                chunk = os.read(out, 65536)
                if not chunk:
                    closed = True
                    break
                chunks.append(chunk)
    finally:
        for fd in writing:
            os.close(fd)
    return b"".join(chunks), closed


def _exited(pid: int, deadline: float) -> bool:
    """Whether the child exited (and was reaped) by `deadline`."""
    pause = 0.001
    while True:
        if os.waitpid(pid, os.WNOHANG)[0]:
            return True
        if time.monotonic() + pause > deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
