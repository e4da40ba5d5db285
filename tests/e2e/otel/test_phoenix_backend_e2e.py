"""The real backend the OpenTelemetry export tests stand on: spans sent by the plain
opentelemetry-sdk over OTLP/HTTP to a Phoenix of the test's own come back through Phoenix's REST
API as they were sent (parents, attributes, events, an ERROR status), and a Phoenix stopped and
started again on the same ports keeps what it had and takes spans again."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode, Tracer

from support.phoenix import PhoenixServer

pytestmark = pytest.mark.slow


@contextmanager
def tracer_to(phoenix: PhoenixServer, project: str = "default") -> Iterator[Tracer]:
    """A tracer whose every span is sent to Phoenix as it ends, flushed on leaving."""
    provider = TracerProvider(resource=Resource.create({"service.name": "phoenix-fixture-test",
                                                        "openinference.project.name": project}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=phoenix.traces_endpoint,
                                                                     timeout=5)))
    try:
        yield provider.get_tracer("tests")
    finally:
        provider.shutdown()


def test_spans_sent_over_otlp_http_are_read_back_as_sent(phoenix: PhoenixServer) -> None:
    with tracer_to(phoenix, "sessions-test") as tracer:
        with tracer.start_as_current_span("session", attributes={
                "gen_ai.conversation.id": "conv-1", "sidecar.host": "claude-code"}) as root:
            with tracer.start_as_current_span("turn", attributes={"gen_ai.usage.input_tokens": 12}) as turn:
                turn.add_event("tool", {"gen_ai.tool.name": "Bash"})
                turn.add_event("waiting for you")
            with tracer.start_as_current_span("turn") as failed:
                failed.set_status(Status(StatusCode.ERROR, "the model refused"))
            trace_id = format(root.get_span_context().trace_id, "032x")
            root_id = format(root.get_span_context().span_id, "016x")

    spans = phoenix.wait_for_spans(lambda found: len(found) == 3, project="sessions-test")
    by_name = {(s["name"], s["status"]): s for s in spans}
    session = by_name["session", "UNSET"]
    assert session["trace_id"] == trace_id and session["span_id"] == root_id
    assert session["parent_id"] is None
    assert session["attributes"]["gen_ai.conversation.id"] == "conv-1"
    assert session["attributes"]["sidecar.host"] == "claude-code"
    ok_turn, failed_turn = by_name["turn", "UNSET"], by_name["turn", "ERROR"]
    assert {ok_turn["parent_id"], failed_turn["parent_id"]} == {root_id}
    assert {ok_turn["trace_id"], failed_turn["trace_id"]} == {trace_id}
    assert ok_turn["attributes"]["gen_ai.usage.input_tokens"] == 12
    assert [(e["name"], e["attributes"]) for e in ok_turn["events"]] == [
        ("tool", {"gen_ai.tool.name": "Bash"}), ("waiting for you", {})]
    assert failed_turn["status_message"] == "the model refused"
    # Only the project the spans named holds them.
    assert phoenix.spans("default") == []
    assert "sessions-test" in phoenix.projects()


def test_a_restarted_phoenix_keeps_its_spans_and_takes_new_ones(phoenix: PhoenixServer) -> None:
    with tracer_to(phoenix) as tracer:
        tracer.start_span("before the stop").end()
    phoenix.wait_for_spans(lambda found: [s["name"] for s in found] == ["before the stop"])
    url = phoenix.url

    phoenix.stop()
    assert not phoenix.running
    with tracer_to(phoenix) as tracer:  # nobody listens: the exporter gives up, nothing raises
        tracer.start_span("while stopped").end()
    phoenix.start()

    assert phoenix.url == url
    with tracer_to(phoenix) as tracer:
        tracer.start_span("after the restart").end()
    spans = phoenix.wait_for_spans(lambda found: len(found) == 2)
    assert [s["name"] for s in spans] == ["before the stop", "after the restart"]
