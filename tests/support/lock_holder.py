"""An outside process that holds every one of a workspace's own flock locks for its whole life,
so that a test can prove that something else (Redis) coordinates the sidecars serving it: with
these held, a sidecar on the file backend never leads, nor writes hooks.json or the bindings.

    with holding_locks(ws.root):
        ...  # Redis-coordinated daemons must still lead, one at a time

Run as a script (`python lock_holder.py WS_ROOT`) it takes each lock exclusively without
waiting, failing loudly if one is held already, prints "held", and lets go at SIGTERM.
Standard library only, flock(2) as sidecar/locks.py takes them (portalocker's default).
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# The workspace's lock files (`Workspace.lock(name)`): the leader's, hooks.json's and the
# session bindings'. Each instance's life lock (instance-<id>.lock) is its own, not shared.
LOCK_NAMES = ("leader", "hooks", "bindings")
HELD = "held"
START_TIMEOUT = 15.0


def lock_paths(ws_root: Path) -> list[Path]:
    return [ws_root / ".context" / "runtime" / "locks" / f"{name}.lock" for name in LOCK_NAMES]


def hold(ws_root: Path) -> int:
    """Take every lock, say so, and hold them until SIGTERM."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    handles = []
    for path in lock_paths(ws_root):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"lock_holder: {path} is held already by another process", file=sys.stderr)
            return 2
        handles.append(fd)
    print(HELD, flush=True)
    while True:
        signal.pause()


@contextmanager
def holding_locks(ws_root: Path) -> Iterator[subprocess.Popen[str]]:
    """Hold the workspace's locks from another process for the block; the process is stopped
    (and the locks let go) at its end. A lock held already fails with the holder's words."""
    holder = subprocess.Popen([sys.executable, "-S", __file__, os.fspath(ws_root)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stderr is not None
        line = holder.stdout.readline().strip()  # "held", or "" once it has exited
        if line != HELD:
            holder.wait(START_TIMEOUT)
            raise RuntimeError(f"the lock holder did not hold the locks of {ws_root} "
                               f"(exit {holder.returncode}): {holder.stderr.read().strip()}")
        yield holder
    finally:
        if holder.poll() is None:
            holder.terminate()
            try:
                holder.wait(START_TIMEOUT)
            except subprocess.TimeoutExpired:
                holder.kill()
                holder.wait()
        for stream in (holder.stdout, holder.stderr):
            if stream is not None:
                stream.close()


if __name__ == "__main__":
    sys.exit(hold(Path(sys.argv[1])))
