"""What OpenTelemetry export costs ingestion: drop → applied p50 and throughput with export on
(to an OTLP/HTTP receiver on loopback) beside off, in the same run (goal: at most 1.1x)."""

from __future__ import annotations

import resource
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from statistics import median

from bench_daemon import drain_time, latency_samples
from common import bytecode_cached, percentile, report


@contextmanager
def receiver() -> Iterator[tuple[str, list[int]]]:
    """A loopback collector that takes every POST /v1/traces (its sizes counted) and answers
    200, as a collector that keeps up does."""
    sizes: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            sizes.append(len(self.rfile.read(int(self.headers.get("Content-Length") or 0))))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", sizes
    finally:
        server.shutdown()
        server.server_close()


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def export_cost(rate: float = 200.0, count: int = 1000, events: int = 10_000, rounds: int = 2) -> None:
    """Off and on alternately, `rounds` times each (the first run of a kind warms nothing the
    other then finds warm): the median of each."""
    off_waits: list[float] = []
    on_waits: list[float] = []
    off_drains: list[float] = []
    on_drains: list[float] = []
    off_cpu: list[float] = []  # the daemon's CPU seconds for the drain (and `sidecar init`'s)
    on_cpu: list[float] = []
    missing = 0
    with bytecode_cached(), receiver() as (endpoint, sizes):
        on = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
        for _ in range(rounds):
            off_waits += latency_samples(rate, count)[0]
            waits, _, lost = latency_samples(rate, count, extra_env=on)
            on_waits, missing = on_waits + waits, missing + lost
            for drains, cpus, extra in ((off_drains, off_cpu, None), (on_drains, on_cpu, on)):
                before = children_cpu()
                drains.append(drain_time(events, extra_env=extra)[0])
                cpus.append(children_cpu() - before)
    off50, on50 = percentile(off_waits, 50) * 1000, percentile(on_waits, 50) * 1000
    report("otel: drop -> applied p50, export on", f"{on50:.2f} ms", f"off (same run) {off50:.2f} ms",
           f"{on50 / off50:.2f}x (goal <= 1.1x)")
    off_rate, on_rate = events / median(off_drains), events / median(on_drains)
    report("otel: throughput, export on", f"{on_rate:,.0f} events/s", f"off (same run) {off_rate:,.0f}/s",
           f"{off_rate / on_rate:.2f}x the time (goal <= 1.1x)")
    off_us, on_us = median(off_cpu) / events * 1e6, median(on_cpu) / events * 1e6
    report("otel: daemon CPU per event, export on", f"{on_us:.0f} us", f"off (same run) {off_us:.0f} us",
           f"{on_us / off_us:.2f}x (what the machine's load does not blur)")
    report("otel: spans' requests to the receiver", f"{len(sizes)} ({sum(sizes) / 1024:.0f} KiB)",
           "", f"{missing} events not seen applied" if missing else "")
