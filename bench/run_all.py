"""`make bench`: every benchmark, each figure beside a floor measured in the same run.

Benchmarks measure; they assert nothing. Pass names (emit, latency, throughput, status, hooks,
handoff, lifecycle, idle, many, top, statusline, redis) to run only some.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_daemon  # noqa: E402
import bench_emit  # noqa: E402
import bench_handoff  # noqa: E402
import bench_hooks  # noqa: E402
import bench_lifecycle  # noqa: E402
import bench_many  # noqa: E402
import bench_redis  # noqa: E402
import bench_statusline  # noqa: E402
import bench_top  # noqa: E402


def main() -> None:
    chosen = set(sys.argv[1:]) or {"emit", "latency", "throughput", "status", "hooks", "handoff",
                                   "lifecycle", "idle", "many", "top", "statusline",
                                   "redis"}
    print(f"{'benchmark':<44} {'figure':<26} {'floor (same run)':<34} ratio / target")
    if "emit" in chosen:
        bench_emit.main()
    if "latency" in chosen:
        bench_daemon.latency()
    if "throughput" in chosen:
        bench_daemon.throughput_and_scaling()
    if "status" in chosen:
        bench_daemon.status_speed()
    if "hooks" in chosen:
        bench_hooks.due_to_start()
        bench_hooks.save_and_reload()
    if "handoff" in chosen:
        bench_handoff.handoff()
    if "lifecycle" in chosen:
        bench_lifecycle.host_exit()
        bench_lifecycle.sigterm_handoff()
    if "idle" in chosen:
        bench_daemon.idle(60.0)
    if "many" in chosen:
        bench_many.many(1000)
    if "top" in chosen:
        bench_top.top(1000)
    if "statusline" in chosen:
        bench_statusline.main()
    if "redis" in chosen:
        bench_redis.main()


if __name__ == "__main__":
    main()
