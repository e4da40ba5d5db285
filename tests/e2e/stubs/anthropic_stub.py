"""A loopback stand-in for the Anthropic messages API, enough for Claude Code to run offline.

Every request is recorded; every answer is a short streamed text reply.
"""

from __future__ import annotations

import json
from typing import Any

from .loopback import LoopbackStub, Refusal, Reply, json_reply, sse_event


def message_stream(model: str, message_id: str, block: dict[str, Any], delta: dict[str, Any],
                   stop_reason: str) -> bytes:
    """A streamed answer of one content block: `block` opened, `delta` into it, then stopped."""
    events = [
        {"type": "message_start", "message": {
            "id": message_id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
         "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    ]
    return b"".join(sse_event(event["type"], event) for event in events)


def text_stream(text: str, model: str) -> bytes:
    return message_stream(model, "msg_stub", {"type": "text", "text": ""},
                          {"type": "text_delta", "text": text}, "end_turn")


class AnthropicStub(LoopbackStub):
    """`with AnthropicStub() as stub:`; `stub.url` is the base URL."""

    def reply(self, path: str, body: dict[str, Any]) -> Reply:
        if not path.startswith("/v1/messages") or "count_tokens" in path:
            return json_reply({"input_tokens": 10})
        model = body.get("model", "claude-stub")
        if body.get("stream"):
            return "text/event-stream", text_stream("All done.\nDONE", model)
        return json_reply({
            "id": "msg_stub", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": "All done."}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5}})


class LimitedAnthropicStub(AnthropicStub):
    """Refuses the first `refusals` message requests as the API refuses a usage limit: HTTP
    429, a `rate_limit_error` body whose message is the next of `messages`, and
    `x-should-retry: false` (so Claude Code gives the turn up at once instead of retrying)."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__()
        self.messages = list(messages)
        self.refused: list[dict[str, Any]] = []

    def reply(self, path: str, body: dict[str, Any]) -> Reply | Refusal:
        if path.startswith("/v1/messages") and "count_tokens" not in path:
            with self.lock:
                message = self.messages.pop(0) if self.messages else None
                if message is not None:
                    self.refused.append(body)
            if message is not None:
                return Refusal(429, {"x-should-retry": "false"}, {
                    "type": "error", "error": {"type": "rate_limit_error", "message": message}})
        return super().reply(path, body)


def tool_stream(model: str, command: str) -> bytes:
    """An answer that calls the Bash tool with `command` (stop_reason tool_use)."""
    arguments = json.dumps({"command": command, "description": "Run a command"})
    return message_stream(model, "msg_tool",
                          {"type": "tool_use", "id": "toolu_stub1", "name": "Bash", "input": {}},
                          {"type": "input_json_delta", "partial_json": arguments}, "tool_use")


class ToolAnthropicStub(AnthropicStub):
    """Asks to run `command` with the Bash tool once a prompt holds `trigger`, then answers
    text once the tool's result has come back."""

    def __init__(self, trigger: str, command: str) -> None:
        super().__init__()
        self.trigger, self.command = trigger, command

    def reply(self, path: str, body: dict[str, Any]) -> Reply | Refusal:
        sent = json.dumps(body.get("messages", []))
        if path.startswith("/v1/messages") and body.get("stream") and self.trigger in sent \
                and "tool_result" not in sent:
            return "text/event-stream", tool_stream(body.get("model", "claude-stub"), self.command)
        return super().reply(path, body)
