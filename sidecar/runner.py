"""`python -S runner.py LOG -- ARGV...`: run one follow-up action, detached.

The daemon starts this in a session of its own, so the action does not depend on the
instance that started it: when that instance stops or dies, the action runs on, and whichever
instance leads next reads the outcome this writes (`{"exit": N}` or `{"error": why}`) into
`LOG.status`, by write-then-rename, when the action ends.

Before it runs anything it creates `LOG.started` (holding its pid and start time) with a hard
link, which fails if the file exists: a leader that finds a claim whose instance died before
recording the start creates that file first to give the firing up, so either the action runs
and is adopted, or it never runs and is recorded interrupted. Never both, never neither.

It imports nothing beyond the interpreter's start-up modules and runs without `site`: every
millisecond it takes to start delays the action.
"""

import os
import signal
import sys


def _json_string(text: str) -> str:
    out = []
    for ch in text:
        out.append("\\" + ch if ch in '"\\' else f"\\u{ord(ch):04x}" if ch < " " else ch)
    return '"' + "".join(out) + '"'


def write_atomic(path: str, text: str, exclusive: bool = False) -> bool:
    """Write `text` to `path` by write-then-rename; with `exclusive`, by a hard link that fails
    (returning False) if `path` exists."""
    temp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        if exclusive:
            os.link(temp, path)
        else:
            os.replace(temp, path)
        return True
    except FileExistsError:
        return False
    finally:
        if exclusive:
            os.unlink(temp)


def claim_start(token: str, content: str) -> bool:
    """Create `token` holding `content` (JSON), atomically; False if someone came first."""
    return write_atomic(token, content, exclusive=True)


def _start_time() -> str:
    try:
        with open("/proc/self/stat", "rb") as handle:
            data = handle.read()
        return data[data.rfind(b")") + 2:].split()[19].decode()
    except (OSError, IndexError):
        return "null"


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: runner.py LOG -- ARGV...\n")
        return 2
    log, command = argv[0], argv[2:]
    if not claim_start(f"{log}.started", f'{{"pid": {os.getpid()}, "start": {_start_time()}}}'):
        sys.stderr.write("sidecar runner: the firing was given up before it started\n")
        return 0
    # SIGTERM to the group (a timeout, `sidecar hooks kill-running`) is for the action: this
    # runner stays to record how it ended. (A handler, unlike SIG_IGN, is not inherited.)
    signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        pid = os.posix_spawnp(command[0], command, os.environ)  # same process group as this
    except OSError as exc:
        why = f"cannot start {command[0]!r}: {exc.strerror or exc}"
        write_atomic(f"{log}.status", f'{{"error": {_json_string(why)}}}')
        return 127
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    write_atomic(f"{log}.status", f'{{"exit": {os.waitstatus_to_exitcode(status)}}}')
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
