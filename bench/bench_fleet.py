"""The fleet: listing 3 machines x 1,000 sessions, as `sessions --fleet` (the command's wall
time) and as a view's `FleetFeed.load()`, beside floors of the same run: the bare round trips
that fetch the same three hashes (redis-py, no parsing), and `sessions --json` of the same
1,000 sessions read from this machine's files. The target: at most a second.

The rows are the real thing: 100 workspaces of 10 records each (bench_top's copies of records
sidecar's ingestion wrote), made into rows by the feed and into JSON by rowjson, published
under three machines' names as each daemon's publisher writes them. The Redis is a
`redis-server` of the bench's own.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import orjson
from bench_redis import redis_server
from bench_top import make
from common import SIDECAR, report

from sidecar.fleet import keys
from sidecar.fleet.read import FleetFeed
from sidecar.fleet.settings import FleetSettings
from sidecar.live.feed import Feed
from sidecar.views import rowjson

MACHINES = ("laptop", "dev-box", "ci-7")
TARGET = 1.0


def median_time(runs: int, once) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        once()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def publish(url: str, roots: list[Path]) -> int:
    feed = Feed(roots)
    feed.load()
    rows = {}
    for (_, root, hid), row in feed.rows.items():
        data = rowjson.to_json(row, None)  # each copy under its own folder's name, as its own
        data["harnessSessionId"] = data["sessionId"] = hid
        rows[keys.field(root, hid)] = orjson.dumps(data)
    client = keys.connect(url)
    for machine in MACHINES:
        client.hset(keys.rows(machine), mapping=rows)  # type: ignore[arg-type]
        client.set(keys.alive(machine), repr(time.time()), ex=3600)
        client.hset(keys.MACHINES, machine, f"{time.time()!r} 3.5")
    client.close()
    return len(rows)


def fleet(count: int = 100) -> None:
    binary = shutil.which("redis-server")
    if binary is None:
        report("fleet: skipped", "redis-server is not installed")
        return
    base = Path(tempfile.mkdtemp(prefix="sidecar-bench-fleet-"))
    try:
        with redis_server(binary) as url:
            roots, _ = make(base, count)
            per_machine = publish(url, roots)
            config = base / "config"
            config.mkdir()
            (config / "config.toml").write_text(f'[fleet]\nurl = "{url}"\n')
            env = {**os.environ, "SIDECAR_CONFIG_HOME": str(config)}
            total = per_machine * len(MACHINES)

            client = keys.connect(url)
            bare = median_time(9, lambda: [client.hgetall(keys.rows(m)) for m in MACHINES])
            client.close()

            def load() -> None:
                feed = FleetFeed(FleetSettings(url, "bench"))
                feed.load()
                assert len(feed.rows) == total, len(feed.rows)
                feed.client.close()

            loaded = median_time(5, load)
            report(f"fleet: FleetFeed load, {len(MACHINES)} x {per_machine} sessions",
                   f"{loaded * 1000:.0f} ms", f"bare HGETALL x3 {bare * 1000:.0f} ms",
                   f"{loaded / bare:.1f}x; target <= {TARGET * 1000:.0f} ms")

            def listed(*args: str) -> None:
                done = subprocess.run([SIDECAR, "sessions", "--json", *args], env=env,
                                      capture_output=True, check=False)
                assert done.returncode == 0, done.stderr

            local = median_time(3, lambda: listed(*[a for r in roots for a in ("--root", str(r))]))
            wall = median_time(3, lambda: listed("--fleet"))
            report(f"fleet: sessions --fleet, {len(MACHINES)} x {per_machine} sessions",
                   f"{wall * 1000:.0f} ms", f"sessions --json of {per_machine} local {local * 1000:.0f} ms",
                   f"{wall / local:.2f}x; target <= {TARGET * 1000:.0f} ms")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    print(f"{'benchmark':<44} {'figure':<26} {'floor (same run)':<34} ratio / target")
    fleet()
