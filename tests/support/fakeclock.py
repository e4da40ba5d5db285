"""A wrong wall clock for every process of a test "machine" (support/netmachines.py), its
monotonic clock left real, as on a machine whose clock is set wrong or that NTP never reached:
libfaketime preloaded with `FAKETIME="+25h"` (or "-2m"...) and `FAKETIME_DONT_FAKE_MONOTONIC=1`.

Debian's libfaketime 0.9.10 breaks monotonic sleeps in that mode (see monotonic_sleep.c), so
a shim of a few lines, compiled here once per folder with the system's C compiler, is preloaded
before it. A test skips, saying why, where libfaketime or a compiler is missing
(tests/install-hosts.sh installs both).
"""

from __future__ import annotations

import glob
import shutil
import subprocess
from pathlib import Path

import pytest

# The multi-threaded build: the daemon reads the clock from several threads.
LIBFAKETIME = ("/usr/lib/*/faketime/libfaketimeMT.so.1", "/usr/lib/faketime/libfaketimeMT.so.1",
               "/usr/local/lib/faketime/libfaketimeMT.so.1")
SHIM = Path(__file__).with_name("monotonic_sleep.c")


def libfaketime() -> str:
    found = [path for pattern in LIBFAKETIME for path in sorted(glob.glob(pattern))]
    if not found:
        pytest.skip("libfaketime is not installed (tests/install-hosts.sh installs it: "
                    "apt-get install faketime libfaketime)")
    return found[0]


def sleep_shim(folder: Path) -> Path:
    """monotonic_sleep.c built into `folder` (once)."""
    built = folder / "monotonic_sleep.so"
    if built.exists():
        return built
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler (cc) to build the monotonic-sleep shim libfaketime needs "
                    "here (tests/install-hosts.sh installs gcc)")
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(built), str(SHIM), "-ldl"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the monotonic-sleep shim did not build:\n{done.stderr}")
    return built


def clock_env(offset: str, folder: Path) -> dict[str, str]:
    """The environment that puts a process's wall clock `offset` away from the real one
    ("+25h", "-2m", libfaketime's relative form) and leaves its monotonic clock real."""
    return {"LD_PRELOAD": f"{sleep_shim(folder)}:{libfaketime()}", "FAKETIME": offset,
            "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
