"""Hand-off: from SIGKILL of the leading instance to the next one applying events."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import orjson
from bench_daemon import watch_deletes
from common import SIDECAR, drop, percentile, report, sandbox


def leader_pid(root) -> int | None:
    for path in (root / ".context/runtime/instances").glob("*.json"):
        try:
            doc = orjson.loads(path.read_bytes())
        except ValueError:
            continue
        if doc.get("role") == "leader" and os.path.exists(f"/proc/{doc['pid']}"):
            return doc["pid"]
    return None


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
            time.sleep(1.0)
            producer.start()
            for _ in range(kills):
                time.sleep(0.5)
                pid = leader_pid(root)
                if pid is None:
                    continue
                os.kill(pid, signal.SIGKILL)
                killed = time.perf_counter()
                deadline = killed + 10
                while time.perf_counter() < deadline:
                    if any(t > killed + 0.001 for t in list(clock.deleted.values())[-50:]):
                        break
                    time.sleep(0.001)
                after = [t for t in list(clock.deleted.values()) if t > killed]
                if after:
                    waits.append(min(after) - killed)
                for n, proc in enumerate(procs):
                    if proc.pid == pid:
                        proc.wait()
                        procs[n] = subprocess.Popen([SIDECAR, "run", "--root", str(root)], env=env,
                                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
