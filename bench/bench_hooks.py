"""Follow-up hooks: due-to-start latency, and hooks.json save and reload at 10,000 entries."""

from __future__ import annotations

import os
import subprocess
import time

import orjson
from common import SIDECAR, daemon, drop, percentile, report, sandbox

BASH = "/bin/bash"
STAMP = 'echo "$EPOCHREALTIME" >> "$0"'


def due_samples(count: int, delay: int, coordination_url: str | None = None
                ) -> tuple[list[float], list[float]]:
    """Seconds from each follow-up's due time to its action's start, and the spawn-only
    floor's seconds."""
    with sandbox("reconcileInterval = 2\n", coordination_url) as (root, env):
        out = root / "starts.txt"
        hooks_file = root / ".context/runtime/hooks.json"
        doc = orjson.loads(hooks_file.read_bytes())
        doc["hooks"] = {"stamp": {"id": "stamp", "name": "stamp", "event": "session-end",
                                  "delaySeconds": delay, "promptFile": None,
                                  "action": [BASH, "-c", STAMP, str(out)], "enabled": True}}
        hooks_file.write_bytes(orjson.dumps(doc))
        # A hand-written command runs only once trusted, as `sidecar hooks trust` does.
        subprocess.run([SIDECAR, "hooks", "trust", "stamp", "--yes", "--root", str(root)],
                       env=env, check=True, capture_output=True)
        # Floor, same run: the bench itself starting the same command at a known moment.
        floor = []
        for _ in range(20):
            start = time.time()
            subprocess.run([BASH, "-c", STAMP, str(out)])
            floor.append(float(out.read_text().split()[-1]) - start)
        out.unlink()
        inbox = root / ".context/runtime/inbox"
        dues = []
        with daemon(root, env):
            for i in range(count):
                ts = time.time()
                drop(inbox, f"{time.time_ns():020d}-end-{i}", orjson.dumps(
                    {"event": "session-end", "session_id": f"due-{i}", "host": "bench", "ts": ts}))
                dues.append(ts + delay)
                time.sleep(0.15)
            deadline = time.time() + 30
            while time.time() < deadline and (not out.exists() or len(out.read_text().split()) < count):
                time.sleep(0.1)
        starts = sorted(float(x) for x in out.read_text().split())
        waits = [s - d for s, d in zip(starts, sorted(dues), strict=False)]
    return waits, floor


def due_to_start(count: int = 40, delay: int = 1) -> None:
    waits, floor = due_samples(count, delay)
    report("hook due -> action start: p50", f"{percentile(waits, 50) * 1000:.1f} ms",
           f"floor (spawn only) {percentile(floor, 50) * 1000:.1f} ms", "target <= 50 ms")
    report("hook due -> action start: p99", f"{percentile(waits, 99) * 1000:.1f} ms",
           f"floor p99 {percentile(floor, 99) * 1000:.1f} ms")


def save_and_reload(entries: int = 10_000) -> None:
    from sidecar.followups.seeds import default_doc
    from sidecar.followups.store import HookStore
    from sidecar.layout import Workspace

    with sandbox() as (root, env):
        ws = Workspace(root)
        doc = default_doc(time.time()).to_json()
        doc["pending"] = [
            {"id": f"post-task:claude-code:s{i}", "hookId": "post-task", "host": "claude-code",
             "sessionId": f"s{i}", "harnessSessionId": f"h{i}", "enqueuedAt": "2026-11-29T00:00:00.000Z",
             "dueAt": "2030-01-01T00:00:00.000Z", "retries": 0, "claimedBy": None}
            for i in range(entries)
        ]
        ws.hooks_file.write_bytes(orjson.dumps(doc))
        store = HookStore(ws)
        store.snapshot(time.time())
        runs = 20
        start = time.perf_counter()
        for _ in range(runs):
            store.change(time.time(), lambda d: None)
        save = (time.perf_counter() - start) / runs
        start = time.perf_counter()
        for _ in range(runs):
            os.utime(ws.hooks_file, ns=(time.time_ns(), time.time_ns()))
            store.snapshot(time.time())
        reload = (time.perf_counter() - start) / runs
        data = ws.hooks_file.read_bytes()
        start = time.perf_counter()
        for _ in range(runs):
            orjson.loads(data)
        parse_floor = (time.perf_counter() - start) / runs
        size = len(data) / 1e6
    report(f"hooks.json save at {entries:,} queued ({size:.1f} MB)", f"{save * 1000:.1f} ms",
           f"floor orjson parse {parse_floor * 1000:.1f} ms",
           f"{save / parse_floor:.1f}x floor (two fsync'd copies)")
    report(f"hooks.json reload at {entries:,} queued", f"{reload * 1000:.1f} ms",
           f"floor orjson parse {parse_floor * 1000:.1f} ms", f"{reload / parse_floor:.1f}x floor")


if __name__ == "__main__":
    due_to_start()
    save_and_reload()
