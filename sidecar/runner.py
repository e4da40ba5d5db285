"""`python -m sidecar.runner LOG -- ARGV...`: run one follow-up action, detached.

The daemon starts this in a session of its own, so the action does not depend on the
instance that started it: when that instance stops or dies, the action runs on, and whichever
instance leads next reads the outcome this writes (`{"exit": N}` or `{"error": why}`) into
`LOG.status`, by write-then-rename, when the action ends.

Before it runs anything it creates `LOG.started` (holding its pid and start time) with a hard
link, which fails if the file exists: a leader that finds a claim whose instance died before
recording the start creates that file first to give the firing up, so either the action runs
and is adopted, or it never runs and is recorded interrupted. Never both, never neither.
"""

import json
import os
import signal
import subprocess
import sys


def write_status(path: str, status: dict[str, object]) -> None:
    temp = f"{path}.{os.getpid()}.tmp"
    with open(temp, "w") as handle:
        json.dump(status, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


def claim_start(token: str, content: dict[str, object]) -> bool:
    """Create `token` holding `content`, atomically; False if someone created it first."""
    temp = f"{token}.{os.getpid()}.tmp"
    with open(temp, "w") as handle:
        json.dump(content, handle)
    try:
        os.link(temp, token)
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(temp)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: python -m sidecar.runner LOG -- ARGV...\n")
        return 2
    log, command = argv[0], argv[2:]
    status_file = f"{log}.status"
    from sidecar.procwatch import start_time

    if not claim_start(f"{log}.started", {"pid": os.getpid(), "start": start_time(os.getpid())}):
        sys.stderr.write("sidecar runner: the firing was given up before it started\n")
        return 0
    # SIGTERM to the group (a timeout, `sidecar hooks kill-running`) is for the action: this
    # runner stays to record how it ended. (A handler, unlike SIG_IGN, is not inherited.)
    signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        # Same process group as this runner: killing the group ends both.
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    except OSError as exc:
        write_status(status_file, {"error": f"cannot start {command[0]!r}: {exc.strerror or exc}"})
        return 127
    code = proc.wait()
    write_status(status_file, {"exit": code})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
