"""`sidecar top` at 1,000 workspaces and 10,000 sessions: its first load, one changed record
taken up, and one redraw, each beside a floor measured in the same run.

The records are copies of ones sidecar's own ingestion wrote (tests/support/top_demo.py), ten
per workspace, each under its own folder name. Floors: reading and parsing the same 10,000
session.json files bare (open, read, orjson), and one of them alone.
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
from common import report

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from sidecar.top import view  # noqa: E402
from sidecar.views.feed import Feed  # noqa: E402
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
            shutil.copyfile(templates[j % len(templates)], folder / "session.json")
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
        table = view.Table()
        table.update(feed.rows.values(), feed.version)
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
            table.update(feed.rows.values(), feed.version)
            return time.perf_counter() - start

        applied = median_of(30, one_change)
        report("top: one changed record (read, row, re-sort)", f"{applied * 1e3:.2f} ms",
               f"bare read+parse of it {floor_one * 1e6:.0f} us", f"{applied / floor_one:.0f}x")

        now = time.time()

        def redraw() -> float:
            start = time.perf_counter()
            for index in range(VISIBLE):
                table.line(index, 150, now)
            return time.perf_counter() - start

        drawn = median_of(50, redraw)
        report(f"top: one redraw ({VISIBLE} visible lines)", f"{drawn * 1e3:.2f} ms",
               f"bare read+parse of 1 record {floor_one * 1e6:.0f} us",
               f"{drawn / floor_one:.1f}x")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _written(path: Path, data: bytes) -> Path:
    temp = path.with_name(".session.json.tmp")
    temp.write_bytes(data)
    return temp


if __name__ == "__main__":
    print(f"{'benchmark':<44} {'figure':<26} {'floor (same run)':<34} ratio / target")
    top()
