"""`top` live at 10,000 sessions while records change (see bench_top.py): the child process that
runs it (or, for the floor, the feed alone), and the writer that changes records as the daemon
does. CPU is the child's own (getrusage: every thread), over the seconds the writer runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from sidecar.base.timeutil import iso
from sidecar.live.changes import Changes
from sidecar.live.feed import Feed
from sidecar.top.app import TopApp

RATE = 100  # records replaced a second
SECONDS = 10.0  # measured
WARM = 1.0  # seconds of changes before the measure starts (the first frames, the caches)


class Recorded(Changes[tuple[Path, str]]):
    """The feed's changes, noting which records each apply takes up (the bench matches them
    with the writes)."""

    taken: set[str] = set()

    def take(self) -> set[tuple[Path, str]]:
        noted = super().take()
        self.taken = {name for _, name in noted}
        return noted


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def child(mode: str, folder: Path, seconds: float) -> None:
    """Run `top` headless (mode "top") or the feed alone ("feed") on the roots listed in
    `folder/roots`; touch `folder/ready` once loaded; write `folder/<mode>.json`."""
    roots = [Path(line) for line in (folder / "roots").read_text().splitlines() if line]
    feed = Feed(roots)
    recorded = feed.changes = Recorded()
    shown: list[tuple[str, float]] = []
    figures: dict[str, float] = {}

    def note() -> None:
        at = time.monotonic()
        shown.extend((name, at) for name in recorded.taken)

    def measure(start: bool) -> None:
        figures["cpu_start" if start else "cpu_end"] = _cpu()
        figures["wall_start" if start else "wall_end"] = time.monotonic()

    if mode == "top":
        asyncio.run(_top(feed, folder, seconds, note, measure))
    else:
        woke = threading.Event()
        feed.follow(woke.set)
        feed.load()
        (folder / "ready").touch()
        ends = time.monotonic() + WARM + seconds
        started = False
        while (left := ends - time.monotonic()) > 0:
            if not started and left <= seconds:
                measure(True)
                started = True
            if woke.wait(min(left, 0.05)):
                woke.clear()
                feed.apply()
                note()
        measure(False)
        feed.stop()
    (folder / f"{mode}.json").write_text(json.dumps({**figures, "shown": shown}))


async def _top(feed: Feed, folder: Path, seconds: float, note: Callable[[], None],
               measure: Callable[[bool], None]) -> None:
    app = TopApp(feed)
    app.redrawn = note
    running = asyncio.create_task(app.run_async(headless=True, size=(160, 45)))
    while not app.table.items:  # loaded and shown
        await asyncio.sleep(0.01)
    (folder / "ready").touch()
    await asyncio.sleep(WARM)
    measure(True)
    await asyncio.sleep(seconds)
    measure(False)
    app.exit(0)
    await running


def _write(records: list[Path], seconds: float) -> dict[str, float]:
    """Replace RATE records a second, each a different one, as the daemon writes them; when
    each was written (monotonic), by its folder's name."""
    chosen = random.Random(36).sample(records, int(RATE * seconds))
    written: dict[str, float] = {}
    start = time.monotonic()
    for i, path in enumerate(chosen):
        pause = start + i / RATE - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        record = orjson.loads(path.read_bytes())
        record["updatedAt"] = iso(time.time())
        temp = path.with_name(".session.json.tmp")
        temp.write_bytes(orjson.dumps(record))
        os.replace(temp, path)
        written[path.parent.name] = time.monotonic()
    return written


def run(folder: Path, mode: str, roots: list[Path], records: list[Path]
        ) -> tuple[float, float, float]:
    """One child in `mode` under RATE changes a second: (its CPU share of a core, its p50 and
    p90 from a record's write to the frame that shows it, in seconds)."""
    (folder / "roots").write_text("\n".join(map(str, roots)))
    (folder / "ready").unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("bench_top.py")),
                             "--child", mode, str(folder), str(SECONDS)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not (folder / "ready").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"top did not start: {proc.stderr.read().decode() if proc.stderr else ''}")
        time.sleep(0.05)
    written = _write(records, WARM + SECONDS + 0.5)
    proc.wait(60)
    got = json.loads((folder / f"{mode}.json").read_text())
    share = (got["cpu_end"] - got["cpu_start"]) / (got["wall_end"] - got["wall_start"])
    first: dict[str, float] = {}
    for name, at in got["shown"]:
        first.setdefault(name, at)
    delays = [first[name] - at for name, at in written.items() if name in first]
    return share, statistics.median(delays), statistics.quantiles(delays, n=10)[-1]
