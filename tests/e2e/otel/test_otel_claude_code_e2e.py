"""Sessions as OpenTelemetry traces in a real backend: the real Claude Code CLI, offline against
its loopback stub, beside a daemon that exports to an Arize Phoenix of the test's own; what the
user would look at in Phoenix is read back through Phoenix's REST API.

- a session, a turn that runs a tool, and its post-task follow-up resuming it: one trace, the
  root span `session` (the host's session id as gen_ai.conversation.id), a `turn` span per turn
  with its tokens and the tool use as an event, the firing's span and the resumed run's span
  under the same root;
- a Claude Code killed with SIGKILL mid-turn: the root span's status is ERROR, host-exited.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from test_claude_code_e2e import claude_binary, claude_env, run_claude, write_claude_hooks

from helpers import read_json, run_cli, wait_until
from sidecar.base.ids import harness_id
from sidecar.config import DEFAULT_RESUME
from sidecar.telemetry.ids import trace_id
from stubs.anthropic_stub import AnthropicStub, ToolAnthropicStub
from stubs.host_exit import active_session, running_host
from stubs.lifecycle import post_task, prepare_post_task, set_resume, settled, trace_events
from stubs.loopback import Refusal
from support.phoenix import PhoenixServer

TOOL_PROMPT = "do the task with a tool"
TOKENS = ("input", "output", "cacheRead", "cacheWrite")
TOKEN_ATTRIBUTES = {"input": "gen_ai.usage.input_tokens", "output": "gen_ai.usage.output_tokens",
                    "cacheRead": "gen_ai.usage.cache_read.input_tokens",
                    "cacheWrite": "gen_ai.usage.cache_creation.input_tokens"}


class OwnIdsStub(ToolAnthropicStub):
    """As the real API does, each streamed answer has a message id of its own (the plain stub
    repeats one, and Claude Code's transcript counts a message id's usage once: the resumed
    turn's tokens would be read as none)."""

    answered = 0

    def reply(self, path: str, body: dict[str, Any]) -> Any:
        answer = super().reply(path, body)
        if not isinstance(answer, Refusal) and answer[0] == "text/event-stream":
            self.answered += 1
            return answer[0], answer[1].replace(b'"id": "msg_', b'"id": "msg_%d_' % self.answered)
        return answer


def export_to(config_home: Path, phoenix: PhoenixServer) -> None:
    """`[otel] endpoint` in config.toml, as a user configures it."""
    with open(config_home / "config.toml", "a") as config:
        config.write(f'[otel]\nendpoint = "{phoenix.url}"\n')


def trace_of(spans: list[dict[str, Any]], harness: str) -> list[dict[str, Any]]:
    """The spans of one session's trace."""
    wanted = format(trace_id(harness), "032x")
    return [s for s in spans if s["trace_id"] == wanted]


def children(spans: list[dict[str, Any]], parent: dict[str, Any], name: str | None = None) -> list[dict[str, Any]]:
    return [s for s in spans if s["parent_id"] == parent["span_id"] and name in (None, s["name"])]


def span_tokens(spans: list[dict[str, Any]]) -> dict[str, int]:
    """The token figures the spans carry, summed, by the record's names."""
    return {key: sum(s["attributes"].get(TOKEN_ATTRIBUTES[key], 0) for s in spans) for key in TOKENS}


def test_a_session_its_tool_use_and_its_follow_up_are_one_trace_in_phoenix(
        workspace, start_daemon, config_home, tmp_path, phoenix):
    claude = claude_binary()
    write_claude_hooks(workspace.root)
    prepare_post_task(workspace)
    set_resume(config_home, "claude-code", [str(claude), *DEFAULT_RESUME["claude-code"][1:]])
    export_to(config_home, phoenix)
    (tmp_path / "home").mkdir()

    with OwnIdsStub(TOOL_PROMPT, "true") as stub:
        env = claude_env(tmp_path / "home", stub.url)
        start_daemon(workspace.root, env=env)
        first = run_claude(claude, workspace.root, env, "-p", TOOL_PROMPT, "--allowedTools", "Bash")
        assert first.returncode == 0, first.stderr.decode()[-2000:]
        wait_until(lambda: settled(workspace), 120, 0.2)
    [firing] = post_task(workspace)["history"]
    assert firing["status"] == "ok"
    session_id = firing["sessionId"]
    harness = harness_id("claude-code", session_id)
    record = read_json(workspace.session_dir(harness) / "session.json")
    assert record["status"] == "completed"

    # The first run's root, the firing's span and the resumed run's span, each with its turns.
    spans = phoenix.wait_for_spans(lambda found: {"session", "resume", "follow-up post-task"}
                                   <= {s["name"] for s in trace_of(found, harness)}, timeout=60)
    trace = trace_of(spans, harness)
    [root] = [s for s in trace if s["parent_id"] is None]
    assert root["name"] == "session" and root["status"] == "UNSET"
    assert root["attributes"]["gen_ai.conversation.id"] == session_id
    assert root["attributes"]["sidecar.host"] == "claude-code"
    assert root["attributes"]["sidecar.workspace"] == str(workspace.root)

    first_turns = children(trace, root, "turn")
    assert first_turns, "the first run's turn has no span"
    tools = [e for turn in first_turns for e in turn["events"] if e["name"] == "gen_ai.tool.use"]
    assert [e["attributes"]["gen_ai.tool.name"] for e in tools] == ["Bash"]

    [follow_up] = children(trace, root, "follow-up post-task")
    assert follow_up["attributes"]["sidecar.follow_up.outcome"] == "ok"
    assert follow_up["status"] == "UNSET"
    [resumed] = children(trace, root, "resume")
    resumed_turns = children(trace, resumed, "turn")
    assert resumed_turns, "the resumed run's turn has no span"

    # The turns carry their tokens (the tool call's answer at least, written before the turn
    # ended), and the trace's add up to the session's, as Phoenix sums them per trace: what
    # Claude Code writes to its transcript after a turn's Stop is read at the session's end.
    assert span_tokens(first_turns)["output"] > 0
    assert span_tokens(trace) == {key: record["metadata"]["sidecar"]["tokens"].get(key, 0) for key in TOKENS}
    # Nothing was sent outside the session's trace.
    assert trace_of(spans, harness) == spans
    # The firing's span lasts from its start to its outcome: it holds the run it resumed.
    assert follow_up["start_time"] <= resumed["start_time"] <= resumed["end_time"] <= follow_up["end_time"]


def test_a_claude_code_killed_mid_turn_ends_its_trace_in_error(workspace, start_daemon, tmp_path, phoenix):
    claude = claude_binary()
    assert run_cli("integrate", "claude-code", cwd=workspace.root).returncode == 0
    (tmp_path / "home").mkdir()
    with AnthropicStub() as stub:
        stub.hold()
        env = claude_env(tmp_path / "home", stub.url)
        start_daemon(workspace.root, env={"OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.url})
        with running_host([claude, "-p", "a long task"], workspace.root, env) as run:
            record_path = wait_until(lambda: active_session(workspace, "claude-code"), 60, 0.1)
            wait_until(lambda: read_json(record_path)["metadata"]["sidecar"].get("hostPid"), 10)
            wait_until(lambda: "turn.start" in trace_events(record_path), 30, 0.05)  # mid-turn
            os.killpg(run.pid, signal.SIGKILL)
            wait_until(lambda: read_json(record_path)["status"] == "completed", 5, 0.02)
    record = read_json(record_path)
    assert record["metadata"]["sidecar"]["completionReason"] == "host-exited"

    harness = record["id"]
    spans = phoenix.wait_for_spans(lambda found: any(s["parent_id"] is None for s in trace_of(found, harness)))
    trace = trace_of(spans, harness)
    [root] = [s for s in trace if s["parent_id"] is None]
    assert root["name"] == "session"
    assert root["status"] == "ERROR" and "host-exited" in root["status_message"]
    assert root["attributes"]["sidecar.end_reason"] == "host-exited"
    assert root["attributes"]["gen_ai.conversation.id"] == record["metadata"]["hostSessionId"]
    # The turn the kill cut short is there, marked so, under the root.
    [turn] = children(trace, root, "turn")
    assert turn["attributes"].get("sidecar.turn.interrupted") is True
