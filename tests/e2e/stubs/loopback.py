"""A recording HTTP server on 127.0.0.1: the shared part of the model API stubs."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[str, bytes]  # content type, body


class Refusal(tuple):  # type: ignore[type-arg]
    """An error answer: `Refusal(429, {"retry-after": "5"}, body)` (JSON)."""

    def __new__(cls, status: int, headers: dict[str, str], body: Any) -> Refusal:
        return super().__new__(cls, (status, headers, json.dumps(body).encode()))


def json_reply(data: Any) -> Reply:
    return "application/json", json.dumps(data).encode()


def sse_event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


class LoopbackStub:
    """Records every request; subclasses say what to answer. Use as a context manager."""

    base_path = ""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        # While `held` is set, answers wait (a turn still running); `release()` lets them go.
        self.held = threading.Event()
        self.released = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, body: dict[str, Any]) -> None:
                with stub.lock:
                    stub.requests.append({"path": self.path, "body": body})
                if stub.held.is_set():
                    stub.released.wait(120)
                answer = stub.reply(self.path, body)
                if isinstance(answer, Refusal):
                    status, headers, data = answer
                    content_type = "application/json"
                else:
                    (content_type, data), status, headers = answer, 200, {}
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                self._answer(body if isinstance(body, dict) else {})

            def do_GET(self) -> None:
                self._answer({})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def reply(self, path: str, body: dict[str, Any]) -> Reply | Refusal:
        raise NotImplementedError

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{self.base_path}"

    def __enter__(self):
        self.thread.start()
        return self

    def hold(self) -> None:
        self.held.set()

    def release(self) -> None:
        self.released.set()

    def __exit__(self, *exc: Any) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()
