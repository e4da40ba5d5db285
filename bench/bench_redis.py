"""Redis coordination beside file coordination: drop-to-applied, a backlog's throughput,
hand-off after SIGKILL of the leader, and follow-up due-to-start, each measured in both modes
in the same run (in Redis mode, Redis is the store of record and the files its copy).

Each Redis figure is printed beside the file figure of the same run and their ratio (the goal:
within 2x of file mode), with the floor the file-mode benchmark already prints. The Redis is a
`redis-server` of the bench's own, on a free loopback port, without persistence.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench_daemon import FAST, drained, latency_samples
from bench_handoff import handoff_samples
from bench_hooks import due_samples
from common import bytecode_cached, drop, percentile, report, sandbox, session_events

GOAL = 2.0  # a Redis figure within this many times the file figure of the same run
READY_TIMEOUT = 10.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def answers(port: int) -> bool:
    """Whether a Redis answers PING on the port (its inline protocol: no client library)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def redis_server(binary: str) -> Iterator[str]:
    """A redis-server of the bench's own; yields its URL, and stops it afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="sidecar-bench-redis-"))
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(folder)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while not answers(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {port}")
            time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


def compare(name: str, unit: str, redis_value: float, file_value: float, floor: str) -> None:
    """One row: the Redis figure, the file figure of the same run, the floor, the ratio."""
    ratio = redis_value / file_value if file_value > 0 else float("inf")
    digits = 0 if unit == "ms" and file_value >= 10 else 2
    report(f"redis: {name}", f"{redis_value:.{digits}f} {unit} (file {file_value:.{digits}f} {unit})",
           floor, f"{ratio:.2f}x file (goal <= {GOAL:g}x)")


def ms(values: list[float], pct: float) -> float:
    return percentile(values, pct) * 1000 if values else float("nan")


def latency(url: str, rate: float, events: int, rounds: int) -> None:
    file_waits: list[float] = []
    redis_waits: list[float] = []
    floor: list[float] = []
    missing = [0, 0]
    for _ in range(rounds):
        waits, floor_waits, lost = latency_samples(rate, events, None)
        file_waits += waits
        floor += floor_waits
        missing[0] += lost
        waits, _, lost = latency_samples(rate, events, url)
        redis_waits += waits
        missing[1] += lost
    for pct in (50, 99):
        compare(f"drop -> applied at {rate:.0f}/s p{pct}", "ms", ms(redis_waits, pct),
                ms(file_waits, pct), f"floor (watch only) p{pct} {ms(floor, pct):.2f} ms")
    if any(missing):
        report("redis: events not seen applied", f"{missing[1]} (file {missing[0]})")


def drain_seconds(events: int, url: str | None) -> float:
    """Seconds a daemon takes, from its start, to apply a backlog of `events` (25-event
    sessions) and empty the inbox."""
    with sandbox(FAST, url) as (root, env):
        inbox = root / ".context/runtime/inbox"
        base = time.time()
        for s in range(events // 25):
            for i, payload in enumerate(session_events(f"tp-{s}", base + s)):
                drop(inbox, f"{s:08d}-{i:02d}", payload)
        return drained(root, env)


def throughput(url: str, events: int, rounds: int) -> None:
    file_seconds = redis_seconds = 0.0
    for _ in range(rounds):
        file_seconds += drain_seconds(events, None)
        redis_seconds += drain_seconds(events, url)
    file_rate, redis_rate = events * rounds / file_seconds, events * rounds / redis_seconds
    # A rate: the ratio is file over Redis, so that above 1 means slower in Redis mode too.
    report(f"redis: throughput, a backlog of {events:,}", f"{redis_rate:,.0f} events/s "
           f"(file {file_rate:,.0f} events/s)", "includes start-up",
           f"{file_rate / redis_rate:.2f}x file's time (goal <= {GOAL:g}x)")


def handoff(url: str, kills: int, rounds: int) -> None:
    file_waits: list[float] = []
    redis_waits: list[float] = []
    for _ in range(rounds):
        file_waits += handoff_samples(kills)
        redis_waits += handoff_samples(kills, url)
    for pct in (50, 99):
        compare(f"hand-off after SIGKILL p{pct}", "ms", ms(redis_waits, pct), ms(file_waits, pct),
                f"stand-by retry 200 ms; {len(redis_waits)}/{len(file_waits)} kills")


def due_to_start(url: str, follow_ups: int, rounds: int) -> None:
    file_waits: list[float] = []
    redis_waits: list[float] = []
    floor: list[float] = []
    for _ in range(rounds):
        waits, spawns = due_samples(follow_ups, 1)
        file_waits += waits
        floor += spawns
        redis_waits += due_samples(follow_ups, 1, url)[0]
    for pct in (50, 99):
        compare(f"hook due -> action start p{pct}", "ms", ms(redis_waits, pct),
                ms(file_waits, pct), f"floor (spawn only) p{pct} {ms(floor, pct):.1f} ms")


def main(rate: float = 200.0, events: int = 500, kills: int = 5, follow_ups: int = 15,
         rounds: int = 2, backlog: int = 5_000) -> None:
    """Each measurement alternates file and Redis mode `rounds` times, pooling the samples:
    on a shared machine, a burst of load then falls on both modes rather than on one."""
    binary = shutil.which("redis-server")
    if binary is None:
        report("redis coordination", "skipped", "needs redis-server on PATH")
        return
    with redis_server(binary) as url, bytecode_cached():
        latency(url, rate, events, rounds)
        throughput(url, backlog, rounds)
        handoff(url, kills, rounds)
        due_to_start(url, follow_ups, rounds)


if __name__ == "__main__":
    main()
