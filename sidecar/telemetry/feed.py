"""The daemon's side of OpenTelemetry export: a bounded queue that the ingestion thread only
appends to, and the one thread that turns what it holds into spans (export.py).

The ingestion thread never waits here: a change is put on the queue without blocking, and a
full queue drops it, counted. Nothing of OpenTelemetry is imported unless export is configured
(`start`), and not at all where `agent-sidecar[otel]` is not installed (then every change is
counted as dropped, and `status` and `doctor` say why).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping
from importlib.util import find_spec
from typing import Any

from sidecar.base.timeutil import iso
from sidecar.telemetry.items import TEXT_CHARS, Counts, Exporting, Item
from sidecar.telemetry.settings import OtelSettings, resolve
from sidecar.vocabulary import EventKind, Fired, SessionChange

log = logging.getLogger("sidecar")

QUEUE_SIZE = 4096  # changes and firings waiting for the exporter's thread
# What the extra brings, looked up before anything of it is imported
OTEL_MODULES = ("opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http.trace_exporter")
PAUSE = 0.1  # seconds the feed's thread lets changes gather once it has emptied the queue
NOT_INSTALLED = "agent-sidecar[otel] is not installed (pip install 'agent-sidecar[otel]')"

class Feed:
    """Changes and firings in (from any thread, never blocking); the feed's own thread makes
    the exporter (`make`: its imports and set-up cost the daemon's start nothing) and turns each
    item into spans. Without `make` (the extra is missing), everything is dropped."""

    def __init__(self, settings: OtelSettings, make: Callable[[Counts], Exporting] | None = None,
                 error: str | None = None, size: int = QUEUE_SIZE) -> None:
        self.settings = settings
        self.make = make
        self.error = error  # why nothing can be exported at all
        self.counts = Counts()
        self.exporter: Exporting | None = None
        self.ready = threading.Event()  # the exporter is made (or could not be)
        self.items: queue.Queue[Item | None] = queue.Queue(size)
        self.worker = threading.Thread(target=self._work, name="otel-feed", daemon=True)
        if make is not None:
            self.worker.start()
        else:
            self.ready.set()

    def session_changes(self, workspace: str, changes: list[SessionChange]) -> None:
        for change in changes:
            if change.kind is None:
                continue
            tool = None
            if change.kind == EventKind.TOOL_USE and change.payload is not None:
                payload = change.payload
                found = payload.get("tool_name") or payload.get("toolName") or payload.get("tool")
                tool = found if isinstance(found, str) else None
            self._put((workspace, _without_payload(change), tool))

    def hook_fired(self, fired: Fired) -> None:
        self._put(fired)

    def _put(self, item: Item) -> None:
        if self.make is None or self.error is not None:
            self.counts.queue_dropped += 1
            return
        try:
            self.items.put_nowait(item)
        except queue.Full:
            self.counts.queue_dropped += 1

    def _work(self) -> None:
        assert self.make is not None
        try:
            self.exporter = self.make(self.counts)
        except Exception as exc:  # an SDK that cannot start: said, and every span dropped
            log.exception("OpenTelemetry: the exporter cannot start")
            self.error = f"the exporter cannot start: {exc}"
            return
        finally:
            self.ready.set()
        while True:
            item = self.items.get()
            if item is None:
                return
            try:
                self.exporter.handle(item)
            except Exception:  # a bug here must never stop the daemon, nor this thread
                log.exception("OpenTelemetry: a span could not be built")
                self.counts.held_back += 1
            # Once the queue is empty, a pause lets changes gather: the ingestion's puts then
            # wake no one, and this thread takes the interpreter's lock in a few bursts a
            # second rather than at every change (handing it on after each item cost the
            # daemon twice the CPU: bench/bench_otel.py).
            if self.items.empty():
                time.sleep(PAUSE)

    def stop(self, timeout: float = 5.0) -> None:
        """Send what is queued, within `timeout` seconds; what is left is dropped."""
        deadline = time.monotonic() + timeout
        if self.worker.is_alive():
            try:
                self.items.put(None, timeout=timeout)
            except queue.Full:
                pass
            self.worker.join(max(0.0, deadline - time.monotonic()))
        if self.exporter is not None:
            self.exporter.close(max(0.0, deadline - time.monotonic()))

    def report(self) -> dict[str, Any]:
        """What the instance file says of the export (status, doctor)."""
        counts = self.counts
        error = self.error or counts.last_error
        at = None if self.error or counts.last_error_at is None else iso(counts.last_error_at)
        return {"endpoint": self.settings.endpoint, "exported": counts.exported,
                "dropped": counts.dropped, "queued": self.items.qsize(), "error": error,
                "errorAt": at}


def _without_payload(change: SessionChange) -> SessionChange:
    """The change without the host's payload: a queue of whole payloads could hold gigabytes
    (an event may be 1 MiB). Its fields copied as they are (a frozen dataclass: what
    dataclasses.replace does, without a tenth of the cost to the ingestion thread)."""
    copied = object.__new__(SessionChange)
    fields = dict(change.__dict__)
    fields["payload"] = None
    # The host's words are kept at what a span keeps of them: a 1 MiB reason is not queued.
    for name in ("reason", "input_message", "limit_message", "last_message"):
        if len(fields[name]) > TEXT_CHARS:
            fields[name] = fields[name][:TEXT_CHARS]
    copied.__dict__.update(fields)
    return copied


def installed() -> bool:
    """Whether the `otel` extra is there (looked up, not imported)."""
    try:
        return all(find_spec(name) is not None for name in OTEL_MODULES)
    except (ImportError, ValueError):
        return False


def start(otel: Mapping[str, Any], env_file: Mapping[str, str],
          environ: Mapping[str, str] | None = None) -> Feed | None:
    """The feed, where `[otel]` or the OTLP variables ask for export; None (and nothing of
    OpenTelemetry imported) where nothing does."""
    settings = resolve(otel, env_file, os.environ if environ is None else environ)
    if settings is None:
        return None
    if not installed():
        log.warning("OpenTelemetry export to %s is configured, but %s", settings.endpoint, NOT_INSTALLED)
        return Feed(settings, error=NOT_INSTALLED)

    def make(counts: Counts) -> Exporting:
        from sidecar.telemetry.export import Exporter

        return Exporter(settings, counts)

    log.info("OpenTelemetry: sessions are exported as traces to %s (from %s)", settings.endpoint,
             settings.source)
    return Feed(settings, make)
