"""A loopback stand-in for the OpenAI Responses API, enough for Codex to run one turn offline."""

from __future__ import annotations

from typing import Any

from .loopback import LoopbackStub, Reply, json_reply, sse_event


class ResponsesStub(LoopbackStub):
    """`with ResponsesStub() as stub:`; `stub.url` is the base URL (ending in /v1)."""

    base_path = "/v1"

    def reply(self, path: str, body: dict[str, Any]) -> Reply:
        if not body:  # GETs (model lists) and anything else that is not a turn
            return json_reply({"data": [], "models": []})
        n = len(self.requests)
        message = {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}
        events = [
            {"type": "response.created", "response": {"id": f"resp_{n}"}},
            {"type": "response.output_item.done", "output_index": 0, "item": message},
            {"type": "response.completed", "response": {
                "id": f"resp_{n}", "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}}},
        ]
        return "text/event-stream", b"".join(sse_event(e["type"], e) for e in events)
