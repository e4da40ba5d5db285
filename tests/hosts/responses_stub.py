"""A loopback stand-in for the OpenAI Responses API, enough for Codex to run one turn offline."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _sse(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


class ResponsesStub:
    """`with ResponsesStub() as stub:`; `stub.url` is the base URL (ending in /v1)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                stub.requests.append({"path": self.path, "body": body})
                n = len(stub.requests)
                message = {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                           "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}
                data = (_sse({"type": "response.created", "response": {"id": f"resp_{n}"}})
                        + _sse({"type": "response.output_item.done", "output_index": 0, "item": message})
                        + _sse({"type": "response.completed", "response": {
                            "id": f"resp_{n}", "usage": {"input_tokens": 10, "output_tokens": 2,
                                                         "total_tokens": 12}}}))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                payload = json.dumps({"data": [], "models": []}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> "ResponsesStub":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
