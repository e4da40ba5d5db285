"""pid 1 of a test's "machine" (tests/support/machines.py), run as `python -S machine_init.py
STATUS_FILE HOSTNAME ARGV...` inside a new PID and UTS namespace.

It names the machine, starts ARGV as its one child (pid 2 in the namespace), and reaps every
process of the machine, the orphans a daemon's detached actions leave it too, so none stays a
zombie. ARGV's exit status is written to STATUS_FILE; the machine runs on while any process of
it does (an action outlives the daemon that started it, as on a real machine), then ends.
Standard library only.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys


def main() -> int:
    status_file, hostname, *argv = sys.argv[1:]
    if hostname:
        socket.sethostname(hostname)
    child = subprocess.Popen(argv)
    status = 0
    while True:
        try:
            pid, wait_status = os.wait()
        except ChildProcessError:  # nothing runs on the machine any more
            return status
        if pid == child.pid:
            status = os.waitstatus_to_exitcode(wait_status)
            partial = f"{status_file}.part"
            with open(partial, "w") as handle:
                handle.write(f"{status}\n")
            os.replace(partial, status_file)


if __name__ == "__main__":
    sys.exit(main())
