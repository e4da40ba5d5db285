"""The spans a session becomes (sidecar/telemetry/): built from the daemon's session changes
and firings, batched by the SDK's processor, read back from its in-memory exporter."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from sidecar.base.ids import harness_id
from sidecar.base.timeutil import iso
from sidecar.telemetry import ids
from sidecar.telemetry.export import Exporter
from sidecar.telemetry.items import Counts
from sidecar.telemetry.settings import OtelSettings
from sidecar.telemetry.state import MAX_EVENTS, Memory
from sidecar.vocabulary import EventKind, Fired, SessionChange

HOST, SESSION, WS = "claude-code", "conv-1", "/work/project"
HID = harness_id(HOST, SESSION)
T0 = 1_800_000_000.0


def change(kind: EventKind, at: float, reason: str = "", turn: float | None = None, **more) -> SessionChange:
    return SessionChange(kind, HOST, SESSION, HID, T0 + at, reason, turn_started_at=iso(T0 + turn)
                         if turn is not None else "", **more)


def spent(inp: int, out: int, usd: float, model: str = "claude-sonnet-4-5") -> dict:
    return {"tokens": {"input": inp, "output": out, "cacheRead": 7, "cacheWrite": 3},
            "cost": {"usd": usd, "source": "table", "model": model},
            "total": {"usd": usd * 2, "source": "table", "models": [model]}}


class Pipeline:
    """The exporter the daemon runs, its collector the SDK's in-memory exporter."""

    def __init__(self, memory: Memory | None = None) -> None:
        self.memory = InMemorySpanExporter()
        self.counts = Counts()
        self.exporter = Exporter(OtelSettings("http://127.0.0.1:9/v1/traces"), self.counts, self.memory)
        if memory is not None:
            self.exporter.builder.memory = memory
        self.exporter.builder.recall = lambda workspace, hid, at: (None, False)  # no record on disk

    def feed(self, *changes: SessionChange, tool: str | None = None) -> None:
        for c in changes:
            self.exporter.handle((WS, c, tool if c.kind == EventKind.TOOL_USE else None))

    def spans(self) -> dict[str, list]:
        self.exporter.processor.force_flush()
        found: dict[str, list] = {}
        for span in self.memory.get_finished_spans():
            found.setdefault(span.name, []).append(span)
        return found


@pytest.fixture
def pipeline() -> Pipeline:
    made = Pipeline()
    yield made
    made.exporter.close(2)


def test_a_session_of_two_turns_is_one_trace_under_its_root(pipeline):
    pipeline.feed(change(EventKind.SESSION_START, 0, "startup"),
                  change(EventKind.TURN_START, 1, turn=1))
    pipeline.feed(change(EventKind.TOOL_USE, 2, turn=1, interrupted=True), tool="Bash")
    pipeline.feed(change(EventKind.TURN_END, 5, turn=1, spent=spent(100, 20, 0.01)),
                  change(EventKind.TURN_START, 10, turn=10),
                  change(EventKind.NEEDS_INPUT, 11, "permission_prompt", turn=10, interrupted=True,
                         input_message="Allow Bash?"),
                  change(EventKind.TURN_END, 15, turn=10, spent=spent(300, 40, 0.03, "claude-opus-4-1")))
    assert "session" not in pipeline.spans()  # the root goes at the completion
    pipeline.feed(change(EventKind.SESSION_END, 20, "logout", spent=spent(0, 0, 0.02)))
    spans = pipeline.spans()

    [root], turns = spans["session"], sorted(spans["turn"], key=lambda s: s.start_time)
    assert root.context.trace_id == ids.trace_id(HID) and root.context.span_id == ids.span_id(HID)
    assert root.parent is None
    assert (root.start_time, root.end_time) == (int(T0 * 1e9), int((T0 + 20) * 1e9))
    assert root.attributes["gen_ai.conversation.id"] == SESSION
    assert root.attributes["sidecar.host"] == HOST and root.attributes["sidecar.workspace"] == WS
    assert root.attributes["sidecar.end_reason"] == "logout"
    assert root.attributes["sidecar.cost.usd"] == 0.04  # the session's total so far
    assert root.status.status_code is StatusCode.UNSET

    assert len(turns) == 2
    assert all(t.context.trace_id == root.context.trace_id and t.parent.span_id == root.context.span_id
               for t in turns)
    first, second = turns
    assert (first.start_time, first.end_time) == (int((T0 + 1) * 1e9), int((T0 + 5) * 1e9))
    assert first.attributes["gen_ai.usage.input_tokens"] == 100
    assert first.attributes["gen_ai.usage.output_tokens"] == 20
    assert first.attributes["gen_ai.usage.cache_read.input_tokens"] == 7
    assert first.attributes["gen_ai.usage.cache_creation.input_tokens"] == 3
    assert first.attributes["gen_ai.request.model"] == first.attributes["gen_ai.response.model"] == "claude-sonnet-4-5"
    assert first.attributes["sidecar.cost.usd"] == 0.01
    assert [(e.name, dict(e.attributes)) for e in first.events] == [
        ("gen_ai.tool.use", {"gen_ai.tool.name": "Bash"})]
    assert second.attributes["gen_ai.response.model"] == "claude-opus-4-1"
    assert [(e.name, e.attributes["sidecar.input.kind"], e.attributes["sidecar.input.message"])
            for e in second.events] == [("sidecar.waiting_for_you", "permission_prompt", "Allow Bash?")]
    assert pipeline.counts.exported == 3 and pipeline.counts.dropped == 0


def test_what_the_end_read_beyond_the_turns_is_on_the_root_so_the_trace_sums_to_the_record(pipeline):
    """Claude Code writes a turn's last answer after its Stop hook: only the end's read finds it."""
    pipeline.feed(change(EventKind.TURN_START, 1, turn=1),
                  change(EventKind.TURN_END, 5, turn=1, spent=spent(100, 20, 0.01)),
                  change(EventKind.SESSION_END, 9, "logout", spent=spent(30, 15, 0.005)))
    spans = pipeline.spans()
    [root], [turn] = spans["session"], spans["turn"]
    assert root.attributes["gen_ai.usage.input_tokens"] == 30
    assert root.attributes["gen_ai.usage.output_tokens"] == 15
    assert root.attributes["sidecar.cost.usd"] == 0.01  # the session's total, not the end's share
    assert sum(s.attributes["gen_ai.usage.output_tokens"] for s in (root, turn)) == 35


def test_a_failed_turn_is_an_error_with_its_kind(pipeline):
    pipeline.feed(change(EventKind.TURN_START, 0, turn=0),
                  change(EventKind.TURN_FAILED, 2, "rate_limit", turn=0,
                         limit_message="You've hit your limit · resets 5pm"))
    [turn] = pipeline.spans()["turn"]
    assert turn.status.status_code is StatusCode.ERROR
    assert turn.attributes["error.type"] == "rate_limit"
    assert "resets 5pm" in turn.status.description


@pytest.mark.parametrize("reason, said", [("stale", "stale"), ("host-exited", "host-exited")])
def test_a_swept_or_host_died_session_ends_its_root_in_error(pipeline, reason, said):
    pipeline.feed(change(EventKind.SESSION_START, 0), change(EventKind.TURN_START, 1, turn=1),
                  change(EventKind.SESSION_END, 9, reason, turn=1, interrupted=True))
    spans = pipeline.spans()
    [root], [turn] = spans["session"], spans["turn"]
    assert root.status.status_code is StatusCode.ERROR and said in root.status.description
    assert root.attributes["error.type"] == reason == root.attributes["sidecar.end_reason"]
    assert turn.attributes["sidecar.turn.interrupted"] is True  # the open turn ends with it
    assert turn.end_time == root.end_time


def test_a_follow_up_firing_is_a_span_in_the_sessions_trace_linked_to_its_root(pipeline):
    pipeline.feed(change(EventKind.SESSION_START, 0), change(EventKind.SESSION_END, 5))
    pipeline.exporter.handle(Fired(WS, "post-task", HOST, SESSION, HID, "error: exit 2", "/log",
                                   iso(T0 + 70), T0 + 75))
    [root], [fired] = pipeline.spans()["session"], pipeline.spans()["follow-up post-task"]
    assert fired.context.trace_id == root.context.trace_id
    assert fired.parent.span_id == root.context.span_id
    assert [link.context.span_id for link in fired.links] == [root.context.span_id]
    assert (fired.start_time, fired.end_time) == (int((T0 + 70) * 1e9), int((T0 + 75) * 1e9))
    assert fired.status.status_code is StatusCode.ERROR
    assert fired.attributes["sidecar.hook.id"] == "post-task"


def test_a_resumed_conversation_continues_its_trace_under_the_root(pipeline):
    pipeline.feed(change(EventKind.SESSION_START, 0), change(EventKind.SESSION_END, 5))
    pipeline.feed(change(EventKind.SESSION_START, 100, "resume"),
                  change(EventKind.TURN_START, 101, turn=101),
                  change(EventKind.TURN_END, 104, turn=101, spent=spent(5, 5, 0.001)),
                  change(EventKind.SESSION_END, 110))
    spans = pipeline.spans()
    [root], [resumed], [turn] = spans["session"], spans["resume"], spans["turn"]
    assert resumed.context.trace_id == root.context.trace_id == ids.trace_id(HID)
    assert resumed.parent.span_id == root.context.span_id
    assert resumed.context.span_id == ids.span_id(HID, "run", iso(T0 + 100))
    assert turn.parent.span_id == resumed.context.span_id
    assert (resumed.start_time, resumed.end_time) == (int((T0 + 100) * 1e9), int((T0 + 110) * 1e9))
    assert resumed.attributes["sidecar.resumed"] is True


def test_a_restarted_daemon_finds_the_resumed_run_in_the_record(pipeline):
    """A builder that never saw the first run (a daemon restarted) reads when the run began
    and that it was a resume from the record, and puts its span where the first would have."""
    pipeline.exporter.builder.recall = lambda workspace, hid, at: (T0 + 100, True)
    pipeline.feed(change(EventKind.TURN_START, 101, turn=101), change(EventKind.SESSION_END, 110))
    spans = pipeline.spans()
    assert "session" not in spans
    [resumed], [turn] = spans["resume"], spans["turn"]
    assert resumed.context.span_id == ids.span_id(HID, "run", iso(T0 + 100))
    assert resumed.parent.span_id == ids.span_id(HID)
    assert resumed.start_time == int((T0 + 100) * 1e9)
    assert turn.parent.span_id == resumed.context.span_id


def test_what_is_kept_between_events_is_bounded():
    pipeline = Pipeline(Memory(max_sessions=2))
    pipeline.feed(change(EventKind.TURN_START, 0, turn=0))
    for n in range(MAX_EVENTS + 10):
        pipeline.feed(change(EventKind.TOOL_USE, 1 + n / 1000, turn=0, interrupted=True), tool=f"t{n}")
    pipeline.feed(change(EventKind.TURN_END, 2, turn=0))
    [turn] = pipeline.spans()["turn"]
    assert len(turn.events) == MAX_EVENTS and turn.attributes["sidecar.events.dropped"] == 10
    builder = pipeline.exporter.builder
    for n in range(5):
        other = harness_id(HOST, f"other-{n}")
        builder.change(WS, SessionChange(EventKind.SESSION_START, HOST, f"other-{n}", other, T0))
    assert len(builder.memory.runs) == 2 and builder.memory.forgotten == 4
    pipeline.exporter.close(2)


def test_spans_past_the_processors_queue_are_dropped_and_counted():
    """While the processor holds its most (a collector slow to answer), further spans are
    dropped and counted, never queued without bound; a batch the collector refuses is counted
    as dropped with its error."""
    pipeline = Pipeline()
    pipeline.exporter.max_queue = 3
    for n in range(10):  # (within the processor's 1 s delay: nothing is sent meanwhile)
        pipeline.feed(change(EventKind.TURN_START, n, turn=n), change(EventKind.TURN_END, n + 0.5, turn=n))
    assert (pipeline.counts.handed, pipeline.counts.held_back) == (3, 7)
    pipeline.spans()
    assert (pipeline.counts.exported, pipeline.counts.dropped) == (3, 7)
    pipeline.memory.shutdown()  # the in-memory exporter refuses from now on
    pipeline.feed(change(EventKind.TURN_START, 20, turn=20), change(EventKind.TURN_END, 21, turn=20))
    pipeline.spans()
    assert (pipeline.counts.exported, pipeline.counts.dropped) == (3, 8)
    assert pipeline.counts.last_error
    pipeline.exporter.close(2)


def test_a_span_dated_year_3000_or_a_huge_reason_loses_no_other_span(pipeline):
    """One event with an impossible date must not make the encoder refuse its whole batch,
    and a host's 1 MB reason is kept at 500 characters."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    pipeline.feed(change(EventKind.TURN_START, 0, turn=0),
                  change(EventKind.TURN_END, 32_503_680_000 - T0, turn=0),  # 3000-01-01
                  change(EventKind.SESSION_END, 10, "x" * 1_000_000))
    spans = [s for found in pipeline.spans().values() for s in found]
    assert len(encode_spans(spans).resource_spans[0].scope_spans[0].spans) == 2  # encodable
    [root] = pipeline.spans()["session"]
    assert len(root.attributes["sidecar.end_reason"]) == 500
