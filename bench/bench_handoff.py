"""Hand-off: from SIGKILL of the leading instance to the next one applying events."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import orjson
from bench_daemon import watch_deletes
from common import SIDECAR, drop, percentile, report, sandbox, wait_for_role


def leader_pid(root) -> int | None:
    for path in (root / ".context/runtime/instances").glob("*.json"):
        try:
            doc = orjson.loads(path.read_bytes())
        except ValueError:
            continue
        if doc.get("role") == "leader" and os.path.exists(f"/proc/{doc['pid']}"):
            return doc["pid"]
    return None


def wait_for_stand_bys(root, procs: list[subprocess.Popen], timeout: float = 30) -> None:
    """Until one instance leads and every other stands by: a hand-off, not a start-up."""
    deadline = time.monotonic() + timeout
    while (first := leader_pid(root)) is None and time.monotonic() < deadline:
        time.sleep(0.02)
    for proc in procs:
        if proc.pid != first:
            wait_for_role(root, proc.pid, "standby", timeout)


def first_applied_after(deleted: dict[str, float], killed: float, timeout: float = 10) -> float | None:
    """When the first inbox file was applied (deleted) after the kill; None within `timeout`."""
    deadline = killed + timeout
    while time.perf_counter() < deadline:
        if any(t > killed + 0.001 for t in list(deleted.values())[-50:]):
            break
        time.sleep(0.001)
    return min((t for t in list(deleted.values()) if t > killed), default=None)


def handoff_samples(kills: int, coordination_url: str | None = None) -> list[float]:
    """Seconds from each SIGKILL of the leader to the next event applied (by the stand-by)."""
    with sandbox("reconcileInterval = 2\nheartbeatInterval = 0.2\n", coordination_url) as (root, env):
        inbox = root / ".context/runtime/inbox"
        observer, clock = watch_deletes(inbox)
        procs = [subprocess.Popen([SIDECAR, "run", "--root", str(root)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]
        stop = threading.Event()

        def produce() -> None:
            i = 0
            while not stop.is_set():
                drop(inbox, f"{time.time_ns():020d}-{i}", orjson.dumps(
                    {"event": "tool-use", "session_id": f"h-{i % 20}", "host": "bench", "tool_name": "x"}))
                i += 1
                time.sleep(0.005)

        producer = threading.Thread(target=produce, daemon=True)
        waits = []
        try:
            wait_for_stand_bys(root, procs)
            producer.start()
            for _ in range(kills):
                time.sleep(0.5)
                pid = leader_pid(root)
                if pid is None:
                    continue
                os.kill(pid, signal.SIGKILL)
                killed = time.perf_counter()
                applied = first_applied_after(clock.deleted, killed)
                if applied is not None:
                    waits.append(applied - killed)
                for n, proc in enumerate(procs):
                    if proc.pid == pid:
                        proc.wait()
                        procs[n] = subprocess.Popen([SIDECAR, "run", "--root", str(root)], env=env,
                                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                        # The next kill measures a hand-off, not the replacement's start-up.
                        wait_for_role(root, procs[n].pid, "standby")
        finally:
            stop.set()
            for proc in procs:
                proc.terminate()
                proc.wait(30)
            observer.stop()
            observer.join()
    return waits


def handoff(kills: int = 15) -> None:
    waits = handoff_samples(kills)
    report("hand-off after SIGKILL of the leader: p50", f"{percentile(waits, 50) * 1000:.0f} ms",
           "stand-by retry interval 200 ms", f"{len(waits)} kills; contract: < 1 s")
    report("hand-off after SIGKILL of the leader: p99", f"{percentile(waits, 99) * 1000:.0f} ms")


if __name__ == "__main__":
    handoff()
