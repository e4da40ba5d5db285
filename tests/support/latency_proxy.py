"""A TCP proxy that can make a link slow: what the server answers reaches the client `delay`
seconds late, and what the client sends reaches the server `request_delay` seconds late (each
chunk held for as long as the delay was when it arrived, in the order it arrived). Debian's
kernels here have no netem (`tc qdisc ... netem delay`), so a test's slow link is this proxy.

    proxy = LatencyProxy("10.201.0.1", ("127.0.0.1", server.port)).start()
    proxy.delay = 1.8           # from now on every answer is 1.8 s late
    proxy.request_delay = 1.8   # and every request (a slow link is slow both ways)
    proxy.delay = proxy.request_delay = 0   # pass-through again (what is held keeps its time)
    proxy.hold_requests(b":refused")  # from the first request naming it, hold every request...
    proxy.release()                   # ...until this: they then reach the server, in order
    proxy.close()

One event loop on a thread of the test process runs the proxy; the delays are read there when
a chunk arrives, so setting them from the test is enough. A connection's end is passed on the
same way: the server closing it (a CLIENT KILL) reaches the client after the answers it sent
before, as late as they are. A server that cannot be reached (stopped, killed) makes the proxy
close the client's connection at once, as a refused connection would end it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable

CHUNK = 65536
HOLD_POLL = 0.01  # seconds between looks whether held requests were released
START_TIMEOUT = 10.0


class LatencyProxy:
    def __init__(self, listen_host: str, upstream: tuple[str, int]) -> None:
        self.listen_host = listen_host
        self.upstream = upstream
        self.delay = 0.0  # seconds each answer is held; 0: pass-through
        self.request_delay = 0.0  # seconds each request is held
        self.hold_marker: bytes | None = None  # hold_requests(): what starts the hold
        self.holding = False  # requests arriving now are held until release()
        self.port = 0
        self.connections = 0  # accepted so far (a test can tell that clients came through)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name=f"latency-proxy-{listen_host}")
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> LatencyProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(START_TIMEOUT)
        return self

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.listen_host, 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _serve(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        server_out: asyncio.StreamWriter | None = None
        try:
            try:
                server_in, server_out = await asyncio.open_connection(*self.upstream)
            except OSError:
                return  # the server is down: the client's connection ends at once
            # Each direction closes the other end when it ends, so both end together.
            await asyncio.gather(
                self._relay(client_in, server_out, lambda: self.request_delay, self._held),
                self._relay(server_in, client_out, lambda: self.delay), return_exceptions=True)
        finally:
            for writer in (client_out, server_out):
                if writer is not None:
                    writer.close()
            self._tasks.discard(task)

    def hold_requests(self, marker: bytes | None = None) -> None:
        """Hold every request, on every connection, from the first one that contains
        `marker` (at once without one) until `release()`: what was sent before the hold
        reaches the server then, in order, however late that is."""
        self.hold_marker = marker
        self.holding = marker is None

    def release(self) -> None:
        self.hold_marker = None
        self.holding = False

    def _held(self, chunk: bytes) -> bool:
        """Whether a request arriving now is held (its arrival may start the hold)."""
        if self.hold_marker is not None and self.hold_marker in chunk:
            self.holding = True
        return self.holding

    async def _relay(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter,
                     delay: Callable[[], float],
                     held_now: Callable[[bytes], bool] = lambda chunk: False) -> None:
        """Read `source` as it comes (so nothing waits behind a held chunk) and pass each
        chunk on to `sink` once its own delay has passed, and, if it arrived while requests
        are held, once they are released; b"" stands for the connection's end, which closes
        `sink` in its turn."""
        loop = asyncio.get_running_loop()
        held: asyncio.Queue[tuple[float, bool, bytes]] = asyncio.Queue()

        async def read() -> None:
            try:
                while chunk := await source.read(CHUNK):
                    held.put_nowait((loop.time() + delay(), held_now(chunk), chunk))
            except OSError:
                pass  # a reset connection ends for the other side as a closed one does
            finally:
                held.put_nowait((loop.time() + delay(), held_now(b""), b""))

        reader = asyncio.create_task(read())
        try:
            while True:
                due, on_hold, chunk = await held.get()
                if due > loop.time():
                    await asyncio.sleep(due - loop.time())
                while on_hold and self.holding:
                    await asyncio.sleep(HOLD_POLL)
                if not chunk:
                    return
                sink.write(chunk)
                await sink.drain()
        finally:
            reader.cancel()
            sink.close()

    def close(self) -> None:
        """Stop listening, end every connection, and stop the loop's thread."""
        if not self._thread.is_alive():
            return

        async def stop() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._tasks):
                task.cancel()
            with contextlib.suppress(Exception):
                await asyncio.gather(*self._tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(START_TIMEOUT)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(START_TIMEOUT)
        self._loop.close()
