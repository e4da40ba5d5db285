"""The live path of the web view: ONE row source for every browser, and a change sent to each.

The source's watch thread only calls `_signal`, which hands over to the event loop
(call_soon_threadsafe); there `source.apply()` reads what changed, at most once per COALESCE
seconds, and each connected browser's queue gets one change: the keys of the rows that
changed (compared by identity: the source replaces a row it read again), or `all` when too
many did. Everything that reads `rows` runs on the loop, so no lock is needed.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from sidecar.live.source import RowSource
from sidecar.views.sessions import RowKey, SessionRow
from sidecar.web.rows import key_text

COALESCE = 0.1  # seconds between two changes sent: a burst of events is one change
MAX_KEYS = 500  # past this many changed rows, a change says "all"
KEEPALIVE = 15.0
BACKLOG = 20  # changes a browser may fall behind by before it is told to read all


class Hub:
    """The source, followed, and the browsers' queues of changes."""

    def __init__(self, source: RowSource) -> None:
        self.source = source
        self.clients: set[asyncio.Queue[dict[str, Any] | None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending = False
        self._last_sent = 0.0
        self._seen: dict[RowKey, SessionRow] = {}
        self._ready = False  # the first read is done: `apply` may run (on the loop)
        self._missed = False

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Follow the source, then read it whole (nothing changed between is lost)."""
        self._loop = loop
        self.source.follow(self._signal)
        self.source.load()
        self._seen = dict(self.source.rows)

    def ready(self) -> None:
        """On the loop, once `start` is done: changes are taken up from now on."""
        self._ready = True
        if self._missed:
            self._changed()

    def stop(self) -> None:
        self.source.stop()
        for queue in self.clients:
            queue.put_nowait(None)  # each stream ends

    def _signal(self) -> None:  # on the source's thread
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._changed)

    def _changed(self) -> None:
        if not self._ready:  # the first read is still going on, in a worker thread
            self._missed = True
            return
        if self._pending or self._loop is None:
            return
        self._pending = True
        wait = max(0.0, self._last_sent + COALESCE - time.monotonic())
        self._loop.call_later(wait, self._flush)

    def _flush(self) -> None:
        self._pending = False
        if not self.source.apply():
            return  # (a new folder before its record): the record that follows is not held back
        self._last_sent = time.monotonic()
        rows = self.source.rows
        changed = {k for k, row in rows.items() if self._seen.get(k) is not row}
        changed |= self._seen.keys() - rows.keys()
        changed |= self.source.traces
        self._seen = dict(rows)
        change: dict[str, Any] = {"feedVersion": self.source.version}
        if len(changed) > MAX_KEYS:
            change["all"] = True
        else:
            change["keys"] = sorted(key_text(k) for k in changed)
        for queue in self.clients:
            sent = change
            if queue.qsize() >= BACKLOG:  # a browser that does not keep up reads all again
                while not queue.empty():
                    queue.get_nowait()
                sent = {"feedVersion": self.source.version, "all": True}
            queue.put_nowait(sent)

    def subscribe(self) -> asyncio.Queue[dict[str, Any] | None]:
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.clients.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
        self.clients.discard(queue)
