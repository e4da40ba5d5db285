"""One daemon serving many workspaces: threads, files, idle CPU, start, status --all, SIGTERM.

The workspaces are made in process the way `sidecar init` makes them (a thousand `sidecar init`
runs would take minutes) and registered in a private config folder; the daemon serves the
registry with the default configuration.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import orjson
from common import SIDECAR, report, stop, time_command

from sidecar.followups.store import initialise
from sidecar.layout import Workspace


def make_workspaces(top: Path, count: int) -> list[Path]:
    roots = []
    for i in range(count):
        root = top / f"ws-{i:04d}"
        root.mkdir()
        initialise(Workspace(root), time.time())
        roots.append(root)
    (top / "config" / "workspaces.json").write_bytes(
        orjson.dumps({"workspaces": [str(r) for r in roots]}))
    return roots


def leaders(roots: list[Path], pid: int) -> int:
    """How many of the workspaces have this daemon registered as their leader."""
    count = 0
    for root in roots:
        for path in (root / ".context/runtime/instances").glob("*.json"):
            try:
                doc = orjson.loads(path.read_bytes())
            except (OSError, ValueError):
                continue
            if doc.get("pid") == pid and doc.get("role") == "leader":
                count += 1
                break
    return count


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_figures(pid: int) -> tuple[int, int, float]:
    threads = len(os.listdir(f"/proc/{pid}/task"))
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    rss = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) / 1024
    return threads, fds, rss


def many(count: int = 1000, idle_seconds: float = 30.0) -> None:
    if not Path("/proc/self/stat").exists():
        report(f"{count} workspaces", "skipped", "needs /proc")
        return
    top = Path(tempfile.mkdtemp(prefix="sidecar-bench-many-"))
    (top / "config").mkdir()
    env = {**os.environ, "SIDECAR_CONFIG_HOME": str(top / "config")}
    try:
        roots = make_workspaces(top, count)
        # Floor for status --all: the same command over a single registered workspace.
        one = top / "one-config"
        one.mkdir()
        (one / "workspaces.json").write_bytes(orjson.dumps({"workspaces": [str(roots[0])]}))
        status_floor = time_command([SIDECAR, "status", "--all"], runs=5,
                                    env={**env, "SIDECAR_CONFIG_HOME": str(one)})
        started = time.perf_counter()
        proc = subprocess.Popen([SIDECAR, "run"], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            while leaders(roots, proc.pid) < count and time.perf_counter() - started < 60:
                time.sleep(0.1)
            served_in = time.perf_counter() - started
            served = leaders(roots, proc.pid)
            report(f"{count} workspaces: all served after start", f"{served_in:.2f} s",
                   f"{served} of {count} led", "target < 5 s")
            time.sleep(2.0)  # let start-up work settle
            threads, fds, rss = process_figures(proc.pid)
            report(f"{count} workspaces: threads", f"{threads}", "floor 1 (a bare process)",
                   "target < 20")
            report(f"{count} workspaces: open files", f"{fds}",
                   f"{fds / count:.2f} per workspace")
            report(f"{count} workspaces: resident memory", f"{rss:.0f} MiB",
                   f"{rss / count * 1024:.0f} KiB per workspace")
            before = cpu_seconds(proc.pid)
            time.sleep(idle_seconds)
            used = cpu_seconds(proc.pid) - before
            report(f"{count} workspaces: idle CPU over {idle_seconds:.0f} s",
                   f"{100 * used / idle_seconds:.3f} %", "floor 0 % (sleeping)",
                   "target < 0.5 %")
            status_all = time_command([SIDECAR, "status", "--all"], runs=3, env=env)
            report(f"{count} workspaces: status --all", f"{status_all * 1000:.0f} ms",
                   f"one workspace {status_floor * 1000:.0f} ms",
                   f"{status_all / status_floor:.1f}x; target < 1 s")
        finally:
            stopped = stop(proc)
        report(f"{count} workspaces: SIGTERM to exit", f"{stopped * 1000:.0f} ms",
               "", "target < 1 s")
    finally:
        shutil.rmtree(top, ignore_errors=True)


def main() -> None:
    many()


if __name__ == "__main__":
    main()
