"""A loopback stand-in for the OpenAI Responses API, enough for Codex to run one turn offline."""

from __future__ import annotations

import time
from typing import Any

from .loopback import LoopbackStub, Refusal, Reply, json_reply, sse_event


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


class LimitedResponsesStub(ResponsesStub):
    """Refuses the first `refusals` turns the way the API refuses a ChatGPT plan at its usage
    limit: HTTP 429, `usage_limit_reached` with `resets_at`, and the `x-codex-primary-*`
    headers Codex reads; Codex then prints "... try again at <time>." and ends the turn."""

    def __init__(self, refusals: int, resets_in: float) -> None:
        super().__init__()
        self.refusals = refusals
        self.resets_in = resets_in
        self.refused = 0

    def reply(self, path: str, body: dict[str, Any]) -> Reply | Refusal:
        if body:
            with self.lock:
                refuse = self.refused < self.refusals
                self.refused += refuse
            if refuse:
                reset = int(time.time() + self.resets_in)
                return Refusal(429, {"x-codex-primary-used-percent": "100",
                                     "x-codex-primary-window-minutes": "300",
                                     "x-codex-primary-reset-at": str(reset)},
                               {"error": {"type": "usage_limit_reached", "plan_type": "plus",
                                          "message": "The usage limit has been reached",
                                          "resets_at": reset}})
        return super().reply(path, body)
