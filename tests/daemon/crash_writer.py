"""Writes a state file atomically and dies (os._exit) right after system call number N,
for the crash-injection test."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from sidecar import jsonfile

STEPS = ("open", "write", "fsync", "fstat", "close", "replace")


def main() -> None:
    path, crash_after, payload = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
    calls = [0]
    originals = {name: getattr(os, name) for name in STEPS}

    def wrap(name):
        def step(*args, **kwargs):
            result = originals[name](*args, **kwargs)
            calls[0] += 1
            if calls[0] == crash_after:
                os._exit(9)  # like SIGKILL: no clean-up, no flush
            return result
        return step

    for name in STEPS:
        setattr(os, name, wrap(name))
    jsonfile.write_bytes_atomic(path, payload)
    os._exit(0)


if __name__ == "__main__":
    main()
