"""`make bench`: every benchmark, each figure beside a floor measured in the same run.

Benchmarks measure; they assert nothing. Pass names (emit, latency, throughput, status, hooks,
handoff, lifecycle, notify, otel, idle, many, top, web, statusline, redis, fleet) to run only some.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_daemon  # noqa: E402
import bench_emit  # noqa: E402
import bench_fleet  # noqa: E402
import bench_handoff  # noqa: E402
import bench_hooks  # noqa: E402
import bench_lifecycle  # noqa: E402
import bench_many  # noqa: E402
import bench_notify  # noqa: E402
import bench_otel  # noqa: E402
import bench_redis  # noqa: E402
import bench_statusline  # noqa: E402
import bench_top  # noqa: E402
import bench_web  # noqa: E402

# Each name and what it runs, in the order a full run takes them.
BENCHMARKS = {
    "emit": [bench_emit.main],
    "latency": [bench_daemon.latency],
    "throughput": [bench_daemon.throughput_and_scaling],
    "status": [bench_daemon.status_speed],
    "hooks": [bench_hooks.due_to_start, bench_hooks.save_and_reload],
    "handoff": [bench_handoff.handoff],
    "lifecycle": [bench_lifecycle.host_exit, bench_lifecycle.sigterm_handoff],
    "notify": [bench_notify.turn_end_notice],
    "otel": [bench_otel.export_cost],
    "idle": [lambda: bench_daemon.idle(60.0)],
    "many": [lambda: bench_many.many(1000)],
    "top": [lambda: bench_top.top(1000)],
    "web": [bench_web.web],
    "statusline": [bench_statusline.main],
    "redis": [bench_redis.main],
    "fleet": [bench_fleet.fleet],
}


def main() -> None:
    chosen = set(sys.argv[1:]) or set(BENCHMARKS)
    print(f"{'benchmark':<44} {'figure':<26} {'floor (same run)':<34} ratio / target")
    for name, runs in BENCHMARKS.items():
        if name in chosen:
            for run in runs:
                run()


if __name__ == "__main__":
    main()
