"""The web view's ASGI app (Starlette): the page, its static files, the JSON API and the
Server-Sent Events stream, behind the token (guard.py).

Handlers run on the event loop, as the hub's apply does, so they read the source's rows with
no lock; what reads or changes files (a session's timeline, an action on its follow-up) runs
in a worker thread.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response, StreamingResponse
from starlette.routing import Route

from sidecar.base.errors import SidecarError
from sidecar.base.timeutil import now as wall_now
from sidecar.live.actions import ACTIONS
from sidecar.live.source import RowSource
from sidecar.web import rows
from sidecar.web.guard import Guard
from sidecar.web.live import KEEPALIVE, Hub
from sidecar.web.secret import csrf_for

STATIC = Path(__file__).parent / "static"
MAX_BODY = 4096


def json(data: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status, media_type="application/json")


class WebView:
    """The app's state: the hub (one source for every browser), the sorted rows, the tokens."""

    def __init__(self, source: RowSource, token: str, stale: float | None,
                 clock: Callable[[], float] = wall_now) -> None:
        self.hub = Hub(source)
        self.source = source
        self.sorted = rows.Sorted()
        self.token = token
        self.csrf = csrf_for(token, secrets.token_bytes(32))
        self.stale = stale
        self.clock = clock

    # -- pages -----------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        page = (STATIC / "index.html").read_text(encoding="utf-8")
        return HTMLResponse(page.replace("{{csrf}}", self.csrf))

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        # Only a file of the folder itself, by a plain name: no folder, no hidden file, no link.
        if name.startswith(".") or "/" in name or "\\" in name or name not in _listing():
            return Response("not found", 404, media_type="text/plain")
        path = STATIC / name
        if path.is_symlink() or not path.is_file():
            return Response("not found", 404, media_type="text/plain")
        return FileResponse(path)

    # -- the API ---------------------------------------------------------------------------

    async def sessions(self, request: Request) -> Response:
        try:
            query = rows.Query(dict(request.query_params))
        except ValueError as exc:
            return json({"error": str(exc)}, 400)
        ordered = self.sorted.of(self.source)
        return json(rows.listing(self.source, ordered, query, self.clock(), self.stale))

    async def session(self, request: Request) -> Response:
        key = rows.key_of(request.query_params.get("key", ""))
        row = None if key is None else self.source.rows.get(key)
        if row is None:
            return json({"error": "no such session (it may have been removed)"}, 404)
        try:
            gathered = await run_in_threadpool(self.source.gather, row)
        except (SidecarError, OSError) as exc:  # its files cannot be read: the row is still told
            return json({**rows.detail(row, None, self.clock(), self.stale), "error": str(exc)})
        return json(rows.detail(row, gathered, self.clock(), self.stale))

    async def act(self, request: Request) -> Response:
        body = await request.body()
        try:
            data = orjson.loads(body) if len(body) <= MAX_BODY else None
        except orjson.JSONDecodeError:
            data = None
        if not isinstance(data, dict) or data.get("what") not in ACTIONS \
                or not isinstance(data.get("key"), str):
            return json({"error": 'send {"key": K, "what": "cancel" | "fire"}'}, 400)
        key = rows.key_of(data["key"])
        row = None if key is None else self.source.rows.get(key)
        if row is None:
            return json({"error": "no such session (it may have been removed)"}, 404)
        try:
            said = await run_in_threadpool(self.source.act, row, data["what"], self.clock())
        except (SidecarError, OSError) as exc:
            return json({"error": str(exc)}, 409)
        return json({"said": said})

    async def events(self, request: Request) -> Response:
        queue = self.hub.subscribe()

        async def stream() -> AsyncIterator[bytes]:
            try:
                yield b"retry: 1000\n\n"
                while True:
                    try:
                        change = await asyncio.wait_for(queue.get(), KEEPALIVE)
                    except TimeoutError:
                        yield b": keepalive\n\n"
                        continue
                    if change is None:
                        return
                    yield b"event: change\ndata: " + orjson.dumps(change) + b"\n\n"
            finally:
                self.hub.unsubscribe(queue)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"X-Accel-Buffering": "no"})


def _listing() -> set[str]:
    try:
        return {path.name for path in STATIC.iterdir()}
    except OSError:
        return set()


def build(source: RowSource, token: str, stale: float | None, tls: bool,
          on_ready: Callable[[], None] = lambda: None) -> Guard:
    """The whole app: the routes, behind the guard. `on_ready` is called once the source is
    read and followed, before the first request is answered."""
    web = WebView(source, token, stale)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await run_in_threadpool(web.hub.start, asyncio.get_running_loop())
        web.hub.ready()
        on_ready()
        try:
            yield
        finally:
            web.hub.stop()

    app = Starlette(routes=[
        Route("/", web.index), Route("/static/{name}", web.static),
        Route("/api/sessions", web.sessions), Route("/api/session", web.session),
        Route("/api/events", web.events), Route("/api/act", web.act, methods=["POST"]),
    ], lifespan=lifespan)
    return Guard(app, token, web.csrf, tls)
