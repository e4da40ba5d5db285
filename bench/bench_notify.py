"""A turn's end to its "finished" notice: how soon a notify hook on `turn-end` reaches a
webhook after the host's Stop is dropped, beside a floor measured in the same run (the same
JSON posted to the same receiver by a fresh `python -I` process, as the notice's sender is
started)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson
from common import SIDECAR, daemon, drop, percentile, report, sandbox

POST = ("import sys, urllib.request; urllib.request.urlopen(urllib.request.Request(sys.argv[1], "
        "data=b'{}', headers={'Content-Type': 'application/json'}), timeout=10).read()")


class Arrivals(BaseHTTPRequestHandler):
    """Records when each POST arrived (perf_counter), by its path."""

    seen: dict[str, float] = {}
    changed = threading.Condition()

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.end_headers()
        with self.changed:
            self.seen.setdefault(self.path, time.perf_counter())
            self.changed.notify_all()

    def log_message(self, *args: object) -> None:
        pass


def arrived(path: str, timeout: float = 30) -> float | None:
    deadline = time.monotonic() + timeout
    with Arrivals.changed:
        while path not in Arrivals.seen and time.monotonic() < deadline:
            Arrivals.changed.wait(deadline - time.monotonic())
        return Arrivals.seen.get(path)


def turn_end_notice(count: int = 20) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Arrivals)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    floor, waits = [], []
    try:
        for i in range(count):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-I", "-c", POST, f"{url}/floor-{i}"], check=True)
            floor.append(time.perf_counter() - start)
        with sandbox("reconcileInterval = 2\n") as (root, env):
            subprocess.run([SIDECAR, "hooks", "add", "finished", "--event", "turn-end", "--notify",
                            f"{url}/finished", "--root", str(root)],
                           env=env, check=True, capture_output=True)
            inbox = root / ".context/runtime/inbox"
            with daemon(root, env):
                for i in range(count):
                    Arrivals.seen.pop("/finished", None)
                    session = f"turn-{i}"
                    for kind in ("session-start", "turn-start"):
                        drop(inbox, f"{time.time_ns():020d}-{kind}-{i}", orjson.dumps(
                            {"event": kind, "session_id": session, "host": "claude-code",
                             "ts": time.time()}))
                    time.sleep(0.3)  # the turn under way before it ends
                    start = time.perf_counter()
                    drop(inbox, f"{time.time_ns():020d}-stop-{i}", orjson.dumps(
                        {"event": "turn-end", "session_id": session, "host": "claude-code",
                         "ts": time.time()}))
                    at = arrived("/finished")
                    if at is not None:
                        waits.append(at - start)
    finally:
        server.shutdown()
    if not waits:
        report("turn-end -> finished notice", "no notice arrived")
        return
    f50, w50 = percentile(floor, 50), percentile(waits, 50)
    report("turn-end -> finished notice: p50", f"{w50 * 1000:.0f} ms",
           f"floor (python -I posts it) {f50 * 1000:.0f} ms, {w50 / f50:.2f}x", "target <= 1 s")
    report("turn-end -> finished notice: max", f"{max(waits) * 1000:.0f} ms",
           f"{len(waits)} of {count} arrived")
