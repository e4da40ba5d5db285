"""The daemon: drop-to-applied latency, throughput, backlog scaling, idle cost, status speed."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
from common import (
    SIDECAR,
    bytecode_cached,
    daemon,
    drop,
    percentile,
    report,
    sandbox,
    session_events,
    time_command,
)
from watchdog.events import FileDeletedEvent, FileSystemEventHandler
from watchdog.observers import Observer

FAST = "reconcileInterval = 2\nheartbeatInterval = 5\n"


class DeleteClock(FileSystemEventHandler):
    """Records when each inbox file disappears: the daemon deletes a file once applied."""

    def __init__(self) -> None:
        self.deleted: dict[str, float] = {}
        self.done = threading.Event()
        self.expected = 0

    def on_deleted(self, event) -> None:
        self.deleted[os.path.basename(event.src_path)] = time.perf_counter()
        if len(self.deleted) >= self.expected:
            self.done.set()


def watch_deletes(inbox: Path) -> tuple[Observer, DeleteClock]:
    clock = DeleteClock()
    observer = Observer()
    observer.schedule(clock, str(inbox), recursive=False, event_filter=[FileDeletedEvent])
    observer.start()
    return observer, clock


def latency_samples(rate: float, count: int, coordination_url: str | None = None,
                    extra_env: dict[str, str] | None = None) -> tuple[list[float], list[float], int]:
    """Drop-to-applied waits of `count` events dropped at `rate`, the watch-only floor's
    waits (seconds), and how many events were not seen applied (`extra_env`: the daemon's)."""
    with sandbox(FAST, coordination_url) as (root, env):
        env.update(extra_env or {})
        inbox = root / ".context/runtime/inbox"
        observer, clock = watch_deletes(inbox)
        # Floor: the same drop and the same watch, with the bench deleting the file itself.
        floor = []
        for i in range(200):
            clock.expected = len(clock.deleted) + 1
            clock.done.clear()
            path = drop(inbox, f"floor-{i}", b"{}")
            start = time.perf_counter()
            os.unlink(path)
            clock.done.wait(2)
            floor.append(clock.deleted[path.name] - start)
        clock.deleted.clear()
        with daemon(root, env):
            clock.expected = count
            clock.done.clear()
            dropped: dict[str, float] = {}
            interval = 1.0 / rate
            next_at = time.perf_counter()
            sessions = max(1, count // 25)
            payloads = [p for s in range(sessions) for p in session_events(f"lat-{s}", time.time())]
            for i, payload in enumerate(payloads[:count]):
                while time.perf_counter() < next_at:
                    time.sleep(max(0.0, next_at - time.perf_counter()))
                name = f"{time.time_ns():020d}-{i}"
                drop(inbox, name, payload)
                dropped[f"{name}.json"] = time.perf_counter()
                next_at += interval
            clock.done.wait(30)
        observer.stop()
        observer.join()
        waits = [clock.deleted[n] - t for n, t in dropped.items() if n in clock.deleted]
    return waits, floor, count - len(waits)


def latency(rate: float = 200.0, count: int = 2000) -> None:
    with bytecode_cached():
        waits, floor, missing = latency_samples(rate, count)
    writes = event_writes_floor(400)
    f50 = percentile(floor, 50) * 1000
    p50, p99 = percentile(waits, 50) * 1000, percentile(waits, 99) * 1000
    w50, w99 = percentile(writes, 50) * 1000, percentile(writes, 99) * 1000
    report(f"latency at {rate:.0f} events/s: p50", f"{p50:.2f} ms",
           f"floor watch only {f50:.2f} / writes {w50:.2f} ms", "target <= 2 ms")
    report(f"latency at {rate:.0f} events/s: p99", f"{p99:.2f} ms",
           f"floor p99 {percentile(floor, 99) * 1000:.2f} / writes {w99:.2f} ms", "target <= 8 ms")
    if missing:
        report("latency: events not seen applied", str(missing))


def event_writes_floor(count: int) -> list[float]:
    """The seconds of what one event's batch must write, bare, `count` times: its trace line
    appended, its session's record and the bindings each replaced, durably (five fsyncs: the
    two files, the two temporary files, and the two folders, the same as a batch's)."""
    import shutil
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="sidecar-bench-writes-"))
    try:
        (top / "session").mkdir()
        (top / "hooks").mkdir()
        session = os.open(top / "session", os.O_RDONLY | os.O_DIRECTORY)
        hooks = os.open(top / "hooks", os.O_RDONLY | os.O_DIRECTORY)
        samples = []
        for i in range(count):
            start = time.perf_counter()
            written = []
            trace = os.open("trace.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600,
                            dir_fd=session)
            os.write(trace, orjson.dumps({"line": i}, option=orjson.OPT_APPEND_NEWLINE))
            written.append(trace)
            for folder in (session, hooks):
                temp = os.open(".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600, dir_fd=folder)
                os.write(temp, orjson.dumps({"n": i, "pad": "x" * 400}))
                written.append(temp)
            for fd in written:
                os.fsync(fd)
                os.close(fd)
            for folder, name in ((session, "session.json"), (hooks, "host-sessions.json")):
                os.replace(".tmp", name, src_dir_fd=folder, dst_dir_fd=folder)
            os.fsync(session)
            os.fsync(hooks)
            samples.append(time.perf_counter() - start)
        os.close(session)
        os.close(hooks)
        return samples
    finally:
        shutil.rmtree(top, ignore_errors=True)


def drain_time(events: int, extra_env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """Seconds to apply a backlog of `events`, and two floors over copies of the same backlog:
    reading, parsing and deleting the files; and that plus the state a drain must leave on
    disk, written bare (see `durable_floor`). `extra_env`: the daemon's."""
    with sandbox(FAST) as (root, env):
        env.update(extra_env or {})
        inbox = root / ".context/runtime/inbox"
        base = time.time()
        names = []
        for s in range(events // 25):
            for i, payload in enumerate(session_events(f"bk-{s}", base + s)):
                names.append(drop(inbox, f"{s:08d}-{i:02d}", payload))
        # Floors, same run: a copy of the backlog read, parsed and deleted bare; and another
        # with the state written. Copies, not links: deleting a file's last name is what
        # frees it (about 80 us for one written back to disk, 6 us for one that never was),
        # and each of the three must pay for its own.
        aside, durable = root / "aside", root / "durable"
        for folder in (aside, durable):
            folder.mkdir()
            for path in names:
                (folder / path.name).write_bytes(path.read_bytes())
        os.sync()  # each timing starts with every backlog on disk, and nothing else to write
        start = time.perf_counter()
        for entry in sorted(os.listdir(aside)):
            orjson.loads((aside / entry).read_bytes())
            os.unlink(aside / entry)
        floor = time.perf_counter() - start
        os.sync()
        state_floor = durable_floor(durable, root / "state")
        os.sync()
        return drained(root, env), floor, state_floor


def drained(root: Path, env: dict[str, str]) -> float:
    """Seconds from a daemon's start until it has emptied the workspace's inbox."""
    inbox = root / ".context/runtime/inbox"
    proc = subprocess.Popen([SIDECAR, "run", "--root", str(root)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    start = time.perf_counter()
    try:
        while any_event(inbox):
            time.sleep(0.02)
        return time.perf_counter() - start
    finally:
        proc.terminate()
        proc.wait(60)


def any_event(inbox: Path) -> bool:
    """Whether an event file is left (stopping at the first: a full listing of 50,000 names
    every few milliseconds would take a core from the daemon measured)."""
    with os.scandir(inbox) as entries:
        return any(entry.name.endswith(".json") for entry in entries)


def durable_floor(events: Path, state: Path, batch: int = 2000) -> float:
    """Seconds to do bare what a drain must, with its guarantees and nothing else: for each
    batch, read and parse its events; for each session (its 25 events), make its folder,
    append its trace lines and write its record to a temporary file; fsync them all, put the
    records in place, fsync the folders; then delete the events. No rules, no bindings."""
    start = time.perf_counter()
    inbox = os.open(events, os.O_RDONLY | os.O_DIRECTORY)
    state.mkdir()
    sessions = os.open(state, os.O_RDONLY | os.O_DIRECTORY)
    names = sorted(os.listdir(inbox))
    for first in range(0, len(names), batch):
        done, written = names[first:first + batch], []
        for s in range(0, len(done), 25):
            parsed = []
            for name in done[s:s + 25]:
                fd = os.open(name, os.O_RDONLY, dir_fd=inbox)
                parsed.append(orjson.loads(os.read(fd, 1 << 20)))
                os.close(fd)
            folder_name = done[s].split("-")[0]
            os.mkdir(folder_name, 0o700, dir_fd=sessions)
            folder = os.open(folder_name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=sessions)
            trace = os.open("trace.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600,
                            dir_fd=folder)
            os.write(trace, b"".join(orjson.dumps(p, option=orjson.OPT_APPEND_NEWLINE) for p in parsed))
            temp = os.open(".session.json.tmp", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600,
                           dir_fd=folder)
            os.write(temp, orjson.dumps(parsed, option=orjson.OPT_INDENT_2))
            written.append((folder, trace, temp))
        for _folder, trace, temp in written:
            for fd in (trace, temp):
                os.fsync(fd)
                os.close(fd)
        for folder, _trace, _temp in written:
            os.replace(".session.json.tmp", "session.json", src_dir_fd=folder, dst_dir_fd=folder)
        for folder, _trace, _temp in written:
            os.fsync(folder)
            os.close(folder)
        for name in done:
            os.unlink(name, dir_fd=inbox)
    os.close(inbox)
    os.close(sessions)
    return time.perf_counter() - start


def throughput_and_scaling() -> None:
    small_events, large_events = 5_000, 50_000
    with bytecode_cached():  # as installed: the daemon's start compiles nothing
        small, small_floor, _ = drain_time(small_events)
        large, large_floor, large_durable = drain_time(large_events)
    rate, floor_rate = large_events / large, large_events / large_floor
    report("throughput (fsync'd state, 25-event sessions)", f"{rate:,.0f} events/s",
           f"floor read+parse+delete {floor_rate:,.0f}/s",
           f"{rate / floor_rate:.2f}x floor (target >= 0.5x; includes start-up)")
    report("throughput: beside the durable floor", f"{rate:,.0f} events/s",
           f"floor with the state written {large_events / large_durable:,.0f}/s",
           f"{large_durable / large:.2f}x the durable floor")
    report("backlog 50,000 vs 5,000: time ratio", f"{large / small:.2f}x",
           f"{large:.1f} s vs {small:.1f} s; floor {large_floor / small_floor:.2f}x",
           "target <= 11x")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def idle(seconds: float) -> None:
    if not Path("/proc/self/stat").exists():
        report("idle", "skipped", "needs /proc")
        return
    with sandbox() as (root, env):  # default timers, as a user runs it
        with daemon(root, env) as proc:
            time.sleep(2)
            before = cpu_seconds(proc.pid)
            time.sleep(seconds)
            used = cpu_seconds(proc.pid) - before
            rss = rss_mib(proc.pid)
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        time.sleep(1)
        floor_rss = rss_mib(sleeper.pid)
        sleeper.kill()
        sleeper.wait()
    report(f"idle CPU over {seconds:.0f} s", f"{100 * used / seconds:.3f} %", "floor 0 % (sleeping)",
           "target < 0.5 %")
    report("idle resident memory", f"{rss:.1f} MiB", f"floor bare python {floor_rss:.1f} MiB")


# The full command (typer's), as `status` answered before the launcher answered it without
# typer: run through the same interpreter, so the two differ only in what they load.
FULL_STATUS = "import sys; from sidecar.cli.main import main; sys.exit(main(sys.argv[1:]))"


def status_speed(counts: tuple[int, ...] = (1_000, 100_000)) -> None:
    """`sidecar status` of one workspace of `count` completed sessions, beside `python -S -c
    pass` and `python -c pass` and beside the full command, bytecode cached as installed."""
    record = {"status": "completed", "traceCount": 3, "metadata": {"host": "claude-code"}}
    with bytecode_cached():
        for count in counts:
            with sandbox() as (root, env):
                base = root / ".context/runtime/sessions"
                for i in range(count):
                    folder = base / f"{i:08d}-0000-0000-0000-000000000000"
                    folder.mkdir()
                    (folder / "session.json").write_bytes(orjson.dumps({**record, "id": folder.name}))
                status = [SIDECAR, "status", "--root", str(root)]
                full = [sys.executable, "-c", FULL_STATUS, "status", "--root", str(root)]
                for command in (status, full):  # bytecode cached before timing
                    subprocess.run(command, env=env, capture_output=True)
                runs = 30 if count <= 10_000 else 10
                bare = time_command([sys.executable, "-S", "-c", "pass"], runs=runs, env=env)
                floor = time_command([sys.executable, "-c", "pass"], runs=runs, env=env)
                took = time_command(status, runs=runs, env=env)
                as_json = time_command([*status, "--json"], runs=runs, env=env)
                whole = time_command(full, runs=runs, env=env)
                floors = f"floor -S {bare * 1000:.1f} / -c pass {floor * 1000:.1f} ms"
                target = "target <= 3x -S" if count <= 1_000 else "target <= 250 ms"
                report(f"status at {count:,} completed sessions", f"{took * 1000:.1f} ms", floors,
                       f"{took / bare:.2f}x -S ({target})")
                report(f"status --json at {count:,}", f"{as_json * 1000:.1f} ms", floors,
                       f"{as_json / bare:.2f}x -S")
                report(f"status at {count:,}: full command (typer)", f"{whole * 1000:.1f} ms",
                       floors, f"{whole / bare:.2f}x -S; the fast one {whole / took:.1f}x faster")


def main() -> None:
    which = set(sys.argv[1:]) or {"latency", "throughput", "idle", "status"}
    if "latency" in which:
        latency()
    if "throughput" in which:
        throughput_and_scaling()
    if "status" in which:
        status_speed()
    if "idle" in which:
        idle(60.0)


if __name__ == "__main__":
    main()
