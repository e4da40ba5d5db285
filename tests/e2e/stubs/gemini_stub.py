"""A loopback stand-in for the Gemini API, enough for Gemini CLI to run offline.

It answers the model router (`generateContent`) with the lowest complexity and every
`streamGenerateContent` with a short reply streamed as server-sent events, in one chunk (so
AfterAgent's `prompt_response` is exact).
"""

from __future__ import annotations

import json
from typing import Any

from .loopback import LoopbackStub, Reply, json_reply


def candidate(text: str) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"parts": [{"text": text}], "role": "model"},
                        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 3, "totalTokenCount": 13},
        "modelVersion": "gemini-stub",
    }


class GeminiStub(LoopbackStub):
    """`with GeminiStub() as stub:`; `stub.url` is the base URL for GOOGLE_GEMINI_BASE_URL."""

    def reply(self, path: str, body: dict[str, Any]) -> Reply:
        if ":streamGenerateContent" in path:
            return "text/event-stream", f"data: {json.dumps(candidate('Done.'))}\r\n\r\n".encode()
        if ":generateContent" in path:  # the model router asks for a JSON verdict
            verdict = {"complexity_reasoning": "a stub", "complexity_score": 1}
            return json_reply(candidate(json.dumps(verdict)))
        return json_reply({})
