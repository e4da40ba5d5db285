"""An unprivileged workspace owner's attack on a root daemon: blind symlink toggling.

    python3 symlink_toggler.py RUNTIME SECONDS REL=TARGET [REL=TARGET ...]

For SECONDS, this swaps a runtime folder REL (like `inbox/rejected`, relative to RUNTIME,
the workspace's `.context/runtime`) with a symlink to its TARGET for a moment, and back,
then leaves the folders real for a few milliseconds, over and over, with
renameat2(RENAME_EXCHANGE) where the kernel has it (the folder and the link trade places in
one step) and with rename/symlink/unlink otherwise. Meanwhile it keeps dropping files into
the inbox: bad ones (not JSON) and valid session-start/session-end events, so the daemon
keeps reading, rejecting and writing session records, hook logs and rejections.

It is run by tests/daemon/test_privileges.py as the workspace's owner (not root), imports only the
standard library and runs under any python3. It never follows its own links (it cannot: the
targets are root's, mode 0700). At the end every folder is put back and a JSON summary is
printed: how many swaps and drops worked, and which way it swapped.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import random
import shutil
import sys
import tempfile
import time

AT_FDCWD = -100
RENAME_EXCHANGE = 2
_libc = ctypes.CDLL(None, use_errno=True)
_renameat2 = getattr(_libc, "renameat2", None)


def exchange(a: str, b: str) -> None:
    """Swap the two names atomically (renameat2 RENAME_EXCHANGE)."""
    if _renameat2 is None:
        raise OSError(errno.ENOSYS, "no renameat2 in this libc")
    if _renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), a)


def exchange_works() -> bool:
    probe = tempfile.mkdtemp(prefix="toggler-probe-")
    try:
        os.mkdir(os.path.join(probe, "a"))
        os.symlink("/nonexistent", os.path.join(probe, "b"))
        exchange(os.path.join(probe, "a"), os.path.join(probe, "b"))
        return os.path.islink(os.path.join(probe, "a"))
    except OSError:
        return False
    finally:
        shutil.rmtree(probe)  # the link removed, never followed


class Toggle:
    """One folder and the symlink it trades places with."""

    def __init__(self, runtime: str, rel: str, target: str, atomic: bool) -> None:
        self.path = os.path.join(runtime, rel)
        parent, name = os.path.split(self.path)
        self.target = target
        self.atomic = atomic
        # Dot names: the daemon takes them for producers' temporary files and leaves them be.
        self.spare = os.path.join(parent, f".{name}.swap")
        self.swaps = 0
        self.failures = 0

    def prepare(self) -> None:
        if self.atomic:
            os.symlink(self.target, self.spare)  # the link waits beside the folder

    def toggle(self) -> bool:
        try:
            if self.atomic:
                exchange(self.path, self.spare)
            elif os.path.islink(self.path):
                os.unlink(self.path)
                os.rename(self.spare, self.path)
            else:
                os.rename(self.path, self.spare)
                os.symlink(self.target, self.path)
            self.swaps += 1
            return True
        except OSError:
            self.failures += 1  # a parent is a link just now (the targets are root's): later
            return False

    def restore(self) -> None:
        """Put the real folder back at its place and remove the link."""
        if os.path.islink(self.path):
            if self.atomic:
                exchange(self.path, self.spare)
            else:
                os.unlink(self.path)
                os.rename(self.spare, self.path)
        if os.path.islink(self.spare):
            os.unlink(self.spare)


def drop(inbox: str, name: str, data: bytes) -> bool:
    """Write-then-rename into the inbox; False where the inbox is a link just now."""
    temp = os.path.join(inbox, f".{name}.tmp")
    try:
        with open(temp, "wb") as handle:
            handle.write(data)
        os.rename(temp, os.path.join(inbox, name))
        return True
    except OSError:
        return False


def event(kind: str, session: str) -> bytes:
    return json.dumps({"event": kind, "session_id": session, "host": "claude-code",
                       "ts": time.time()}).encode()


def main(argv: list[str]) -> int:
    runtime, seconds = argv[0], float(argv[1])
    atomic = exchange_works()
    toggles = []
    for pair in argv[2:]:
        rel, _, target = pair.partition("=")
        toggles.append(Toggle(runtime, rel, target, atomic))
    # Outer folders first when putting things back: an inner path goes through them.
    toggles.sort(key=lambda t: t.path.count(os.sep))
    for toggle in toggles:
        toggle.prepare()
    inbox = os.path.join(runtime, "inbox")
    drops = bad = n = 0
    deadline = time.monotonic() + seconds
    next_drop = 0.0
    try:
        while time.monotonic() < deadline:
            # A link for a moment, then real folders for a while: a daemon that checks the
            # folders first finds them real, and may then meet a link as it writes.
            toggle = random.choice(toggles)
            if toggle.toggle():
                if random.random() < 0.5:
                    time.sleep(random.random() / 2000)
                toggle.toggle()
            time.sleep(random.random() / 200)
            now = time.monotonic()
            if now >= next_drop:
                next_drop = now + 0.05
                n += 1
                bad += drop(inbox, f"{n:06d}-bad.json", b"not json")
                session = f"tog-{n}"
                drops += drop(inbox, f"{n:06d}-a-start.json", event("session-start", session))
                drops += drop(inbox, f"{n:06d}-b-end.json", event("session-end", session))
    finally:
        for toggle in toggles:
            toggle.restore()
    print(json.dumps({"atomic": atomic, "events": drops, "bad": bad,
                      "swaps": {t.path: t.swaps for t in toggles},
                      "failures": {t.path: t.failures for t in toggles}}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
