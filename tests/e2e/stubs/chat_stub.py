"""A loopback stand-in for an OpenAI-compatible chat completions API (opencode's provider)."""

from __future__ import annotations

import json
import time
from typing import Any

from .loopback import LoopbackStub, Refusal, Reply, json_reply


def chunk(delta: dict[str, Any], finish: str | None = None, usage: bool = False) -> bytes:
    data: dict[str, Any] = {
        "id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": int(time.time()),
        "model": "stub-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage:
        data["usage"] = {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
    return f"data: {json.dumps(data)}\n\n".encode()


class ChatStub(LoopbackStub):
    """`with ChatStub() as stub:`; `stub.url` is the base URL (ending in /v1)."""

    base_path = "/v1"

    def reply(self, path: str, body: dict[str, Any]) -> Reply:
        if not path.endswith("/chat/completions"):
            return json_reply({"data": []})
        stream = (chunk({"role": "assistant", "content": "Done."}) + chunk({}, "stop")
                  + chunk({}, None, usage=True) + b"data: [DONE]\n\n")
        return "text/event-stream", stream


class LimitedChatStub(ChatStub):
    """Refuses every turn while `refusing` is set, the way an OpenAI-compatible API refuses a
    rate limit: HTTP 429 with a `rate_limit_exceeded` body (`retry-after-ms` keeps opencode's
    own retries short)."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message
        self.refusing = True
        self.refused = 0

    def reply(self, path: str, body: dict[str, Any]) -> Reply | Refusal:
        if body and self.refusing:
            with self.lock:
                self.refused += 1
            return Refusal(429, {"retry-after-ms": "50"}, {"error": {
                "message": self.message, "type": "requests", "code": "rate_limit_exceeded"}})
        return super().reply(path, body)


class ToolCallChatStub(ChatStub):
    """Answers a turn that offers a `bash` tool by calling it with `command`; once the tool's
    result (or refusal) is back, and for any other request (a title), answers as ChatStub."""

    def __init__(self, command: str) -> None:
        super().__init__()
        self.command = command

    def reply(self, path: str, body: dict[str, Any]) -> Reply:
        tools = [t.get("function", {}).get("name") for t in body.get("tools") or []]
        answered = any(m.get("role") == "tool" for m in body.get("messages") or [])
        if not path.endswith("/chat/completions") or "bash" not in tools or answered:
            return super().reply(path, body)
        call = {"index": 0, "id": "call_stub_1", "type": "function", "function": {
            "name": "bash", "arguments": json.dumps({"command": self.command,
                                                     "description": "Print a word"})}}
        stream = (chunk({"role": "assistant", "tool_calls": [call]}) + chunk({}, "tool_calls")
                  + chunk({}, None, usage=True) + b"data: [DONE]\n\n")
        return "text/event-stream", stream
