"""Hand-off: from SIGKILL of the leading instance to the next one applying events."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import orjson
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


MARK = ".bench-kill-"  # a kill's marker in the inbox: a dotfile, never read by sidecar


class KillClock:
    """Where each kill fell among the inbox's deletions. A marker file, created right after
    the kill (a dotfile: sidecar never reads it, nor wakes for it), goes into the same inotify
    queue as the deletions, which the kernel keeps in order: only a deletion read after the
    marker was made after the kill (the dying leader's last ones can be read after the kill).
    inotify directly, not watchdog: through watchdog, some kills' markers were reported 240-300
    ms late while the new leader's own log showed it applying events from 14 ms on."""

    def __init__(self, inbox: Path) -> None:
        from inotify_simple import INotify, flags

        self.inotify = INotify()
        self.inotify.add_watch(str(inbox), flags.CREATE | flags.DELETE)
        self.flags = flags
        self.lock = threading.Lock()
        self.marked: dict[str, bool] = {}  # marker name -> read from the queue yet
        self.after: dict[str, float] = {}  # marker name -> its first deletion after
        self.stopped = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while not self.stopped.is_set():
            for event in self.inotify.read(timeout=100):
                at = time.perf_counter()
                with self.lock:
                    if event.mask & self.flags.CREATE and event.name in self.marked:
                        self.marked[event.name] = True
                    elif event.mask & self.flags.DELETE and not event.name.startswith(MARK):
                        for name, seen in self.marked.items():
                            if seen and name not in self.after:
                                self.after[name] = at

    def mark(self, inbox: Path, n: int) -> str:
        name = f"{MARK}{n}"
        with self.lock:
            self.marked[name] = False
        (inbox / name).touch()
        return name

    def first_deletion_after(self, name: str, timeout: float = 10) -> float | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if name in self.after:
                    return self.after[name]
            time.sleep(0.001)
        return None

    def close(self) -> None:
        self.stopped.set()
        self.reader.join()
        self.inotify.close()



def handoff_samples(kills: int, coordination_url: str | None = None) -> list[float]:
    """Seconds from each SIGKILL of the leader to the next event applied (by the stand-by)."""
    with sandbox("reconcileInterval = 2\nheartbeatInterval = 0.2\n", coordination_url) as (root, env):
        inbox = root / ".context/runtime/inbox"
        clock = KillClock(inbox)
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
            for kill in range(kills):
                time.sleep(0.5)
                pid = leader_pid(root)
                if pid is None:
                    continue
                os.kill(pid, signal.SIGKILL)
                killed = time.perf_counter()
                applied = clock.first_deletion_after(clock.mark(inbox, kill))
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
            clock.close()
    return waits


def handoff(kills: int = 15) -> None:
    waits = handoff_samples(kills)
    report("hand-off after SIGKILL of the leader: p50", f"{percentile(waits, 50) * 1000:.0f} ms",
           "stand-by retry interval 200 ms", f"{len(waits)} kills; contract: < 1 s")
    report("hand-off after SIGKILL of the leader: p99", f"{percentile(waits, 99) * 1000:.0f} ms")


if __name__ == "__main__":
    handoff()
