"""A loopback OTLP/HTTP collector of traces: it takes POST /v1/traces (protobuf), decodes each
request with opentelemetry-proto and keeps its spans as plain dicts, so a test reads what a
real collector would have been sent. The `otlp` fixture (a plugin of tests/conftest.py) is one
started for the test and stopped after it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return None if kind is None else getattr(value, kind)


def _attributes(items: Any) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


def decode(body: bytes) -> list[dict[str, Any]]:
    """The spans of one export request, each with its resource's attributes."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append({
                    "name": span.name, "traceId": span.trace_id.hex(), "spanId": span.span_id.hex(),
                    "parentSpanId": span.parent_span_id.hex(), "start": span.start_time_unix_nano,
                    "end": span.end_time_unix_nano, "attributes": _attributes(span.attributes),
                    "status": {"code": span.status.code, "message": span.status.message},
                    "events": [{"name": e.name, "attributes": _attributes(e.attributes)} for e in span.events],
                    "links": [{"traceId": link.trace_id.hex(), "spanId": link.span_id.hex()}
                              for link in span.links],
                    "resource": resource, "scope": scope_spans.scope.name,
                })
    return spans


@dataclass
class Collector:
    server: ThreadingHTTPServer
    spans: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, str]] = field(default_factory=list)  # each request's headers
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def named(self, name: str) -> list[dict[str, Any]]:
        with self.lock:
            return [span for span in self.spans if span["name"] == name]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start() -> Collector:
    collector: Collector

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            spans = decode(body)
            with collector.lock:
                collector.spans.extend(spans)
                collector.requests.append(dict(self.headers.items()))
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    collector = Collector(server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return collector


@pytest.fixture
def otlp() -> Iterator[Collector]:
    started = start()
    yield started
    started.stop()
