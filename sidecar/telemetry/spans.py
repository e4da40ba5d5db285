"""Spans from what happened to sessions: each session one trace (ids.py), its root span
`session` from its start to its completion, a `turn` span per turn, a `resume` span per run after
a resumed conversation completes, a `follow-up` span per firing. Tool uses and "waiting for you"
are events on the open turn's span (the run's, outside a turn).

Names follow the OpenTelemetry semantic conventions for generative AI (SEMCONV); what they have
no name for is `sidecar.*`. Built on the exporter's thread, never the ingestion's: a span is
made whole here (its ids, times, attributes and events chosen, not measured) and handed on.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, Status, StatusCode, TraceFlags

from sidecar.base.endreasons import HOST_EXITED, STALE
from sidecar.base.ids import harness_id
from sidecar.base.timeutil import iso, parse_ts
from sidecar.base.version import __version__
from sidecar.telemetry import history
from sidecar.telemetry.ids import span_id, trace_id
from sidecar.telemetry.items import TEXT_CHARS
from sidecar.telemetry.state import Events, Memory, Run, SpanEvent, Turn
from sidecar.vocabulary import EventKind, Fired, SessionChange

SEMCONV = "1.44.0"  # the semantic conventions' version whose GenAI names these are
SCOPE = InstrumentationScope("sidecar", __version__, f"https://opentelemetry.io/schemas/{SEMCONV}")
FAILED_ENDS = frozenset({STALE, HOST_EXITED})  # a run that ended so: its span's status is ERROR
MAX_NS = 2**63 - 1  # the latest time OTLP carries (fixed64, read as signed by some collectors)
# A turn's token growth (SessionChange.spent) by the GenAI attribute that carries it
TOKEN_ATTRIBUTES = {"input": "gen_ai.usage.input_tokens", "output": "gen_ai.usage.output_tokens",
                    "cacheRead": "gen_ai.usage.cache_read.input_tokens",
                    "cacheWrite": "gen_ai.usage.cache_creation.input_tokens"}

Recall = Callable[[str, str, float], tuple[float | None, bool]]


def resource(service_name: str) -> Resource:
    """The spans' resource: the service, its version, this machine (OTEL_RESOURCE_ATTRIBUTES,
    read by Resource.create, adds to it)."""
    return Resource.create({"service.name": service_name, "service.version": __version__,
                            "host.name": socket.gethostname()})


def _ns(ts: float) -> int:
    """Nanoseconds since the epoch, within what OTLP can carry (a host's clock, or an event's
    date, may say year 3000: one such span would make the encoder refuse its whole batch)."""
    return max(0, min(int(ts * 1e9), MAX_NS))


def _context(harness: str, span: int) -> SpanContext:
    return SpanContext(trace_id(harness), span, False, TraceFlags(TraceFlags.SAMPLED))


def _text(value: str) -> str:
    return value[:TEXT_CHARS]


class SpanBuilder:
    """Session changes and firings in, finished spans out; remembers runs in `memory`."""

    def __init__(self, res: Resource, memory: Memory | None = None,
                 recall: Recall = history.run_began) -> None:
        self.resource = res
        self.memory = memory or Memory()
        self.recall = recall  # a run's start from the record, where memory has none

    # -- session changes -----------------------------------------------------------------

    def change(self, workspace: str, change: SessionChange, tool: str | None = None) -> list[ReadableSpan]:
        """The spans `change` finishes (none for most: a turn's span at its end, the run's at
        the session's completion); `tool`: a tool use's tool name."""
        kind = change.kind
        if kind is None:
            return []
        run = self._run(workspace, change)
        spans: list[ReadableSpan] = []
        if kind == EventKind.TURN_START:
            if run.turn is not None:  # an earlier turn never said it ended
                spans.append(self._turn_span(run, run.turn, change, interrupted=True))
            run.turn = Turn(change.ts, change.turn_started_at or iso(change.ts))
            run.turns += 1
        elif kind in (EventKind.TURN_END, EventKind.TURN_FAILED):
            turn = self._open_turn(run, change) or Turn(self._turn_start(change), change.turn_started_at
                                                        or iso(change.ts))
            spans.append(self._turn_span(run, turn, change))
            run.turn = None
        elif kind == EventKind.SESSION_END:
            if run.turn is not None:
                spans.append(self._turn_span(run, run.turn, change, interrupted=True))
            spans.append(self._run_span(run, change))
            self.memory.end(run.harness_id)
        else:
            self._event(run, change, tool)
        return spans

    def _run(self, workspace: str, change: SessionChange) -> Run:
        hid = change.harness_session_id
        run = self.memory.run(hid)
        if run is not None:
            return run
        if self.memory.ended_before(hid):  # its root was sent: this change begins a new run
            start, resumed = change.ts, True
        elif change.kind == EventKind.SESSION_START and not change.turn_started_at:
            start, resumed = change.ts, False  # a session that never had a turn: a new one
        else:
            recalled, resumed = self.recall(workspace, hid, change.ts)
            start = recalled if recalled is not None and recalled <= change.ts else change.ts
        run = Run(hid, change.host, change.session_id, workspace, start, resumed)
        self.memory.begin(run)
        return run

    def _open_turn(self, run: Run, change: SessionChange) -> Turn | None:
        """The turn in progress: the one remembered, else the one the record says is open
        (a daemon restarted mid-turn), begun when the record says."""
        if run.turn is None and change.interrupted and change.turn_started_at:
            run.turn = Turn(self._turn_start(change), change.turn_started_at)
        return run.turn

    @staticmethod
    def _turn_start(change: SessionChange) -> float:
        began = parse_ts(change.turn_started_at)
        return began if began is not None and began <= change.ts else change.ts

    def _event(self, run: Run, change: SessionChange, tool: str | None) -> None:
        """A tool use, a question to the user, a start or reset within the run: an event on
        the open turn's span, else on the run's."""
        kind = change.kind
        if kind == EventKind.TOOL_USE:
            event = SpanEvent("gen_ai.tool.use", change.ts,
                              {"gen_ai.tool.name": _text(tool or "unknown")})
        elif kind == EventKind.NEEDS_INPUT:
            event = SpanEvent("sidecar.waiting_for_you", change.ts,
                              {"sidecar.input.kind": _text(change.reason) or "input",
                               "sidecar.input.message": _text(change.input_message)})
        else:
            event = SpanEvent(f"sidecar.{kind}", change.ts, {"sidecar.reason": _text(change.reason)})
        turn = self._open_turn(run, change) if kind != EventKind.SESSION_START else None
        (turn.events if turn is not None else run.events).add(event)

    # -- the spans -----------------------------------------------------------------------

    def _run_context(self, run: Run) -> SpanContext:
        """The run's span: the session's root for its first run, else the resumed run's."""
        if not run.resumed:
            return _context(run.harness_id, span_id(run.harness_id))
        return _context(run.harness_id, span_id(run.harness_id, "run", iso(run.start)))

    def _base(self, run: Run) -> dict[str, Any]:
        return {"gen_ai.agent.name": run.host, "gen_ai.conversation.id": run.session_id,
                "sidecar.host": run.host, "sidecar.workspace": run.workspace,
                "sidecar.session.id": run.harness_id}

    def _turn_span(self, run: Run, turn: Turn, change: SessionChange,
                   interrupted: bool = False) -> ReadableSpan:
        attributes = {**self._base(run), "gen_ai.operation.name": "invoke_agent"}
        status = Status(StatusCode.UNSET)
        if interrupted:
            attributes["sidecar.turn.interrupted"] = True
        elif change.kind == EventKind.TURN_FAILED:
            attributes["error.type"] = _text(change.reason) or "unknown"
            said = change.limit_message or change.reason or "the turn failed"
            status = Status(StatusCode.ERROR, _text(said))
        if not interrupted:
            attributes.update(spent_attributes(change.spent))
        if turn.events.dropped:
            attributes["sidecar.events.dropped"] = turn.events.dropped
        return ReadableSpan(
            "turn", _context(run.harness_id, span_id(run.harness_id, "turn", turn.key)),
            self._run_context(run), self.resource, attributes, _events(turn.events),
            status=status, start_time=_ns(turn.start), end_time=_ns(max(change.ts, turn.start)),
            instrumentation_scope=SCOPE)

    def _run_span(self, run: Run, change: SessionChange) -> ReadableSpan:
        reason = _text(change.reason) or "session-end"
        attributes = {**self._base(run), "sidecar.end_reason": reason, "sidecar.turns": run.turns}
        # What the end's own read found beyond the turns' (Claude Code writes a turn's last
        # answer after its Stop hook): its tokens here, so the trace's sum is the record's.
        growth = spent_attributes(change.spent)
        attributes.update((k, v) for k, v in growth.items() if k in TOKEN_ATTRIBUTES.values())
        total = (change.spent or {}).get("total")
        if isinstance(total, dict):
            attributes.update(_cost(total))
        status = Status(StatusCode.UNSET)
        if reason in FAILED_ENDS:
            attributes["error.type"] = reason
            status = Status(StatusCode.ERROR, "stale: swept after staleAfter with no event" if reason == STALE
                            else "host-exited: the host's process is gone")
        if run.events.dropped:
            attributes["sidecar.events.dropped"] = run.events.dropped
        parent = None
        if run.resumed:
            attributes["sidecar.resumed"] = True
            parent = _context(run.harness_id, span_id(run.harness_id))
        return ReadableSpan(
            "resume" if run.resumed else "session", self._run_context(run), parent, self.resource,
            attributes, _events(run.events), status=status, start_time=_ns(run.start),
            end_time=_ns(max(change.ts, run.start)), instrumentation_scope=SCOPE)

    # -- follow-ups ------------------------------------------------------------------------

    def fired(self, fired: Fired, now: float) -> ReadableSpan:
        """A follow-up's firing: a span in its session's trace, under and linked to the root."""
        hid = fired.harness_session_id or harness_id(fired.host, fired.session_id)
        end = fired.finished_at if fired.finished_at is not None else now
        began = parse_ts(fired.started_at)
        start = began if began is not None and began <= end else end
        root = _context(hid, span_id(hid))
        failed = fired.status.startswith("error")
        attributes: dict[str, Any] = {
            "gen_ai.conversation.id": fired.session_id, "sidecar.host": fired.host,
            "sidecar.workspace": fired.workspace, "sidecar.session.id": hid,
            "sidecar.hook.id": fired.hook_id, "sidecar.follow_up.outcome": _text(fired.status)}
        if failed:
            attributes["error.type"] = "follow-up-failed"
        return ReadableSpan(
            f"follow-up {fired.hook_id}",
            _context(hid, span_id(hid, "follow-up", fired.hook_id, fired.started_at or iso(end))),
            root, self.resource, attributes, (), [Link(root, {"sidecar.link": "session"})],
            status=Status(StatusCode.ERROR, _text(fired.status)) if failed else Status(StatusCode.UNSET),
            start_time=_ns(start), end_time=_ns(end), instrumentation_scope=SCOPE)


def _events(events: Events) -> list[Event]:
    return [Event(e.name, e.attributes, _ns(e.ts)) for e in events.kept]


def spent_attributes(spent: dict[str, Any] | None) -> dict[str, Any]:
    """A turn's figures (SessionChange.spent) as attributes: tokens, model, cost."""
    if not spent:
        return {}
    found: dict[str, Any] = {}
    tokens = spent.get("tokens")
    if isinstance(tokens, dict):
        for key, name in TOKEN_ATTRIBUTES.items():
            value = tokens.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                found[name] = value
    cost = spent.get("cost")
    if isinstance(cost, dict):
        model = cost.get("model")
        if isinstance(model, str) and model:
            found["gen_ai.request.model"] = found["gen_ai.response.model"] = model
        found.update(_cost(cost))
    return found


def _cost(cost: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    usd = cost.get("usd")
    if isinstance(usd, (int, float)) and not isinstance(usd, bool):
        found["sidecar.cost.usd"] = float(usd)
    source = cost.get("source")
    if isinstance(source, str):
        found["sidecar.cost.source"] = source
    return found
