"""Spans sent in batches to an OTLP/HTTP collector, bounded in memory and in time.

The feed's thread (feed.py) builds each span (spans.py) and hands it to the SDK's
BatchSpanProcessor, which sends batches from a thread of its own. While the processor holds
MAX_QUEUE spans not yet sent (a collector slow or unreachable), further spans are dropped and
counted rather than queued; a send gives up after EXPORT_TIMEOUT seconds (the OTLP exporter's
retries included) and its spans are counted as dropped, with the collector's error.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from sidecar.base.timeutil import now
from sidecar.telemetry.items import Counts, Item
from sidecar.telemetry.settings import OtelSettings
from sidecar.telemetry.spans import SpanBuilder, resource
from sidecar.vocabulary import Fired

log = logging.getLogger("sidecar")

MAX_QUEUE = 2048  # spans held for sending, at most
BATCH = 512
DELAY_MS = 1000  # a batch goes at least this often while spans wait
EXPORT_TIMEOUT = 5.0  # seconds one send may take, its retries included
OTLP_LOGGER = "opentelemetry.exporter.otlp.proto.http.trace_exporter"


class _LastError(logging.Handler):
    """The OTLP exporter's own words for a failed send (it logs them rather than raise)."""

    def __init__(self, counts: Counts) -> None:
        super().__init__(logging.WARNING)
        self.counts = counts

    def emit(self, record: logging.LogRecord) -> None:
        self.counts.last_error = record.getMessage()[:300]
        self.counts.last_error_at = now()


class Counting(SpanExporter):
    """The exporter, its spans counted as taken or dropped (a failed batch is not retried
    beyond what the OTLP exporter does within EXPORT_TIMEOUT: the next batch goes on)."""

    def __init__(self, inner: SpanExporter, counts: Counts) -> None:
        self.inner = inner
        self.counts = counts
        self.failing = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # an exporter that raises loses its batch, nothing more
            self.counts.last_error, self.counts.last_error_at = str(exc)[:300], now()
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            self.counts.exported += len(spans)
            if self.failing:
                log.info("OpenTelemetry: the collector takes spans again")
            self.failing = False
        else:
            self.counts.failed += len(spans)
            if self.counts.last_error is None:
                self.counts.last_error, self.counts.last_error_at = "the collector refused the spans", now()
            if not self.failing:  # said once a failing spell, not at every batch
                log.warning("OpenTelemetry: %d span(s) dropped, the collector did not take them: %s",
                            len(spans), self.counts.last_error)
            self.failing = True
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class Exporter:
    """The span builder and the batch processor behind the feed."""

    def __init__(self, settings: OtelSettings, counts: Counts, inner: SpanExporter | None = None,
                 max_queue: int = MAX_QUEUE) -> None:
        self.counts = counts
        self.max_queue = max_queue
        self.builder = SpanBuilder(resource(settings.service_name))
        if inner is None:
            logger = logging.getLogger(OTLP_LOGGER)
            logger.addHandler(_LastError(counts))
            logger.propagate = False  # said once a spell by Counting, not at every retry
            inner = OTLPSpanExporter(endpoint=settings.endpoint, headers=dict(settings.headers),
                                     timeout=EXPORT_TIMEOUT)
        self.processor = BatchSpanProcessor(
            Counting(inner, counts), max_queue_size=max_queue, schedule_delay_millis=DELAY_MS,
            max_export_batch_size=BATCH, export_timeout_millis=EXPORT_TIMEOUT * 1000)

    def handle(self, item: Item) -> None:
        if isinstance(item, Fired):
            spans = [self.builder.fired(item, time.time())]
        else:
            workspace, change, tool = item
            spans = self.builder.change(workspace, change, tool)
        for span in spans:
            if self.counts.in_flight >= self.max_queue:
                self.counts.held_back += 1  # the processor would drop its oldest: drop this one
                continue
            self.counts.handed += 1
            self.processor.on_end(span)

    def close(self, timeout: float) -> None:
        """Send what is held, for `timeout` seconds at most: a collector that does not answer
        never holds a stopping daemon longer (what is left is lost with the process)."""
        closing = threading.Thread(target=self.processor.shutdown, name="otel-close", daemon=True)
        closing.start()
        closing.join(timeout)
