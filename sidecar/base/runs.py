"""Whether a follow-up's run has ended, from what its runner wrote, for every view.

The runner (followups/run/runner.py) writes `<log>.status`, `{"exit": code}` or `{"error":
why}`, as its action ends. The queue keeps the run until an instance records that outcome,
which none does while no daemon runs; and the pid the queue names means nothing on another
machine, or once reused. So a view tells a run that has ended from one still running by that
file, read without following a link, never by the pid.
"""

import os

from sidecar.base import files

MAX_STATUS = 4096  # bytes: `{"exit": 0}`, or an error's few words


def described(status: object) -> str:
    """The outcome a runner's status says: ok, or error: why (`interrupted` where it is not
    one a runner writes)."""
    if not isinstance(status, dict):
        return "error: interrupted"
    if "error" in status:
        return f"error: {status['error']}"
    code = status.get("exit")
    return "ok" if code == 0 else f"error: exit status {code}"


def ended(runtime: int, hook_id: object, log: object) -> str | None:
    """The outcome the runner of the firing logged at `log` wrote once its action ended; None
    while it runs, or where it cannot be read safely (`runtime`: the runtime folder's fd). Of
    `log` only its last part counts: the log is always in `logs/hooks/<hook>/` (layout.py)."""
    name = log.rsplit("/", 1)[-1] if type(log) is str else None
    if not (_plain(hook_id) and _plain(name)):
        return None
    try:
        folder = files.walk(runtime, "logs", "hooks", str(hook_id))
        try:
            fd = os.open(f"{name}.status", files.FILE, dir_fd=folder)
        finally:
            os.close(folder)
        # A runner writes a few bytes; a larger file was put there to stall the reader.
        return described(files.parse(files.read_open(fd, name, limit=MAX_STATUS)))
    except (OSError, ValueError):  # none yet (it runs), or not a runner's own
        return None


def ended_in(root: str, hook_id: object, log: object) -> str | None:
    """`ended`, for the workspace at `root`."""
    try:
        fd = files.open_root(root)
        try:
            runtime = files.walk(fd, ".context", "runtime")
        finally:
            os.close(fd)
    except OSError:
        return None
    try:
        return ended(runtime, hook_id, log)
    finally:
        os.close(runtime)


def _plain(name: object) -> bool:
    """One name in its folder: nothing that would reach past it."""
    return type(name) is str and name not in ("", ".", "..") and "/" not in name and "\0" not in name
