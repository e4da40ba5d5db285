"""`sidecar top` at 1,000 workspaces and 10,000 sessions: its first load, one changed record
taken up, one redraw, and `top` running live while 100 records a second are replaced (its CPU
share of a core, and how long from a record's change to the redraw that shows it), each beside
a floor measured in the same run.

The records are copies of ones sidecar's own ingestion wrote (tests/support/top_demo.py), ten
per workspace, each under its own folder name. Floors: reading and parsing the same 10,000
session.json files bare (open, read, orjson), and one of them alone; for the live run, the
feed alone (the same watches and reads, no screen) in a process of its own.

The live run: `top` runs headless (Textual's own driver, every frame composed as on a
terminal) in a child process, on the workspaces made here; this process replaces records as
the daemon does (a temporary file renamed over it, `updatedAt` now), at 100 a second, a
different record each time. The child counts its CPU (all its threads) over the same seconds
and notes when each changed record's redraw was done (CLOCK_MONOTONIC is the machine's).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson
import top_live
from common import report

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from sidecar.live.feed import Feed  # noqa: E402
from sidecar.top.table import Table  # noqa: E402
from support import top_demo  # noqa: E402

PER_WORKSPACE = 10
VISIBLE = 40  # lines a terminal shows of the list


def make(top: Path, count: int) -> tuple[list[Path], list[Path]]:
    demo = top_demo.build(top / "demo", time.time())
    templates = sorted(demo.sessions.glob("*/session.json"))
    hooks = demo.hooks_file.read_bytes()
    roots, records = [], []
    for i in range(count):
        root = top / f"ws-{i:04d}"
        sessions = root / ".context" / "runtime" / "sessions"
        sessions.mkdir(parents=True)
        (root / ".context" / "runtime" / "hooks.json").write_bytes(hooks)
        for j in range(PER_WORKSPACE):
            folder = sessions / f"s-{i:04d}-{j:02d}"
            folder.mkdir()
            record = orjson.loads(templates[j % len(templates)].read_bytes())
            record["id"] = folder.name  # as sidecar names a record's folder: by its id
            (folder / "session.json").write_bytes(orjson.dumps(record))
            records.append(folder / "session.json")
        roots.append(root)
    return roots, records


def bare_read(paths: list[Path]) -> float:
    start = time.perf_counter()
    for path in paths:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            orjson.loads(os.read(fd, 1 << 20))
        finally:
            os.close(fd)
    return time.perf_counter() - start


def median_of(runs: int, once) -> float:
    return statistics.median(once() for _ in range(runs))


def top(count: int = 1000) -> None:
    base = Path(tempfile.mkdtemp(prefix="sidecar-bench-top-"))
    try:
        roots, records = make(base, count)
        floor_all = median_of(3, lambda: bare_read(records))

        def load() -> float:
            feed = Feed(roots)
            start = time.perf_counter()
            feed.load()
            return time.perf_counter() - start

        first = median_of(3, load)
        report(f"top: first load, {len(records)} records", f"{first * 1000:.0f} ms",
               f"bare read+parse {floor_all * 1000:.0f} ms", f"{first / floor_all:.1f}x")

        feed = Feed(roots)
        feed.load()
        table = Table()
        table.update(feed.rows, feed.version)
        changed = records[len(records) // 2]
        data = changed.read_bytes()
        root = changed.parents[4]
        hid = changed.parent.name
        floor_one = median_of(50, lambda: bare_read([changed]))

        def one_change() -> float:
            os.replace(_written(changed, data), changed)  # as the daemon writes it
            start = time.perf_counter()
            feed._note(root, hid)  # what the folder watch calls
            feed.apply()
            table.update(feed.rows, feed.version)
            return time.perf_counter() - start

        applied = median_of(30, one_change)
        report("top: one changed record (read, row, re-sort)", f"{applied * 1e3:.2f} ms",
               f"bare read+parse of it {floor_one * 1e6:.0f} us", f"{applied / floor_one:.0f}x")

        now = time.time()

        def redraw() -> float:
            start = time.perf_counter()
            for index in range(VISIBLE):
                table.line(index, 150, now, frozenset({"MACHINE"}))
            return time.perf_counter() - start

        drawn = median_of(50, redraw)
        report(f"top: one redraw ({VISIBLE} visible lines)", f"{drawn * 1e3:.2f} ms",
               f"bare read+parse of 1 record {floor_one * 1e6:.0f} us",
               f"{drawn / floor_one:.1f}x")
        live(base, roots, records)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def live(base: Path, roots: list[Path], records: list[Path]) -> None:
    """`top` running while RATE records a second change, beside the feed alone doing the same."""
    floor_share, floor_delay, floor_p90 = top_live.run(base, "feed", roots, records)
    share, delay, p90 = top_live.run(base, "top", roots, records)
    changes = f"{len(records)} sessions, {top_live.RATE} changes/s"
    report(f"top: CPU, {changes}", f"{share * 100:.1f} % of a core",
           f"the feed alone {floor_share * 100:.1f} %",
           f"{share / floor_share:.1f}x the feed; {share / 0.15:.2f}x the 15 % target")
    report("top: a change to its redraw, p50", f"{delay * 1e3:.0f} ms",
           f"the feed alone, to its read {max(0.0, floor_delay) * 1e3:.1f} ms",
           f"{delay / 0.1:.2f}x the 100 ms target")
    report("top: a change to its redraw, p90", f"{p90 * 1e3:.0f} ms",
           f"the feed alone, to its read {max(0.0, floor_p90) * 1e3:.1f} ms",
           f"{p90 / 0.1:.2f}x the 100 ms target")


def _written(path: Path, data: bytes) -> Path:
    temp = path.with_name(".session.json.tmp")
    temp.write_bytes(data)
    return temp


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    top_live.child(sys.argv[2], Path(sys.argv[3]), float(sys.argv[4]))
elif __name__ == "__main__":
    print(f"{'benchmark':<44} {'figure':<26} {'floor (same run)':<34} ratio / target")
    top()
