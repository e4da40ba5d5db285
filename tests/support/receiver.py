"""A loopback HTTP receiver for notices: it speaks ntfy's publish API (POST /topic, the
message as the body, Title/Priority/Tags headers) and takes a JSON webhook (POST of a JSON
document), recording each request with the monotonic time it arrived.

Its answer can be set per path: 200 (the default), another status, a hang (the request is
read, then nothing is answered until the receiver stops), or a 302 redirect to another URL.
A GET (what a client that follows a 302 sends) is recorded too. The `receiver` fixture (a
plugin of tests/conftest.py) is one started for the test and stopped after it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.monotonic() when it arrived
    method: str = "POST"

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    server: ThreadingHTTPServer
    received: list[Received] = field(default_factory=list)
    answers: dict[str, int | str] = field(default_factory=dict)  # path -> status, or "hang"
    redirects: dict[str, str] = field(default_factory=dict)  # path -> where a 302 points
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"http://{self.hostport}"

    @property
    def hostport(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{host}:{port}"

    def at(self, path: str) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.path == path]

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


def start() -> Receiver:
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            with receiver.lock:
                receiver.received.append(Received(self.path, dict(self.headers.items()), body,
                                                  time.monotonic(), self.command))
            if self.path in receiver.redirects:
                self.send_response(302)
                self.send_header("Location", receiver.redirects[self.path])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            answer = receiver.answers.get(self.path, 200)
            if answer == "hang":
                receiver.stopping.wait(60)
                return
            assert isinstance(answer, int)
            self.send_response(answer)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"id": "x"}')

        do_GET = do_POST  # noqa: N815 (http.server's name)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver = Receiver(server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = start()
    yield started
    started.stop()
