"""The daemon's fleet publisher: its sessions' rows to Redis, as they change, with a heartbeat.

A thread of its own keeps a `live.feed.Feed` over the workspaces the daemon serves (the feed
follows their files by inotify, as `top` does). A change is taken up 100 ms after the first
note of it, so a burst of events is one write: the rows whose JSON changed are set in the
machine's hash, the rows gone are deleted from it, and the machine's name is published on the
channel readers follow. Every heartbeat renews the machine's `alive` key; when that key was
missing (Redis restarted, or lost it) the whole hash is written again, so a Redis restart
recovers by itself. What is published is `rowjson.to_json`: a row's own facts, never a prompt
or a transcript.

Requests of other machines (cancel, fire now) are answered by a second thread
(fleet/answer.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from sidecar.coordination.url import masked, scrub
from sidecar.fleet import keys
from sidecar.fleet.answer import Answerer
from sidecar.fleet.settings import FleetSettings
from sidecar.live.feed import Feed
from sidecar.views import rowjson

log = logging.getLogger("sidecar")

COALESCE = 0.1  # seconds a change waits for the rest of its burst
RETRY = 1.0  # seconds between tries while Redis cannot be reached


class Publisher:
    """Publishes the rows of the workspaces `roots()` names, under the settings' machine."""

    def __init__(self, settings: FleetSettings, roots: Callable[[], list[Path]],
                 stale: Callable[[], float | None]) -> None:
        self.settings = settings
        self.roots = roots
        self.stale = stale
        self.client = keys.connect(settings.url)
        self.answerer = Answerer(settings, roots)
        self.stop_event = threading.Event()
        self.changed = threading.Event()
        self.published: dict[str, bytes] = {}  # field -> the JSON last written
        self.whole = True  # the hash must be written whole (at start, after Redis lost it)
        self.failing: str | None = None  # why Redis cannot be written, while so
        self.feed: Feed | None = None
        self.feed_roots: list[Path] | None = None
        self.thread = threading.Thread(target=self._run, name="fleet", daemon=True)

    def start(self) -> Publisher:
        log.info("fleet: publishing this machine's sessions as %s to %s",
                 self.settings.machine, masked(self.settings.url))
        self.thread.start()
        self.answerer.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop, and say at once that this machine no longer publishes (its heartbeat goes)."""
        self.stop_event.set()
        self.changed.set()
        self.answerer.stop(timeout)
        self.thread.join(timeout)
        if self.feed is not None:
            self.feed.stop()
        try:
            self.client.delete(keys.alive(self.settings.machine))
        except keys.FAILURES:
            pass
        self.client.close()

    # -- the thread ------------------------------------------------------------------------

    def _run(self) -> None:
        next_beat = 0.0
        while not self.stop_event.is_set():
            self._follow(sorted(self.roots()))
            if self.feed is not None and self.feed.pending():
                self.stop_event.wait(COALESCE)  # the rest of the burst
                self.feed.apply()
            try:
                if time.monotonic() >= next_beat:
                    self._beat()
                    next_beat = time.monotonic() + self.settings.heartbeat
                self._publish()
                self._recovered()
            except keys.FAILURES as exc:
                self._failed(exc)
                next_beat = 0.0
                self.stop_event.wait(RETRY)
                continue
            self.changed.wait(max(0.0, next_beat - time.monotonic()))
            self.changed.clear()

    def _follow(self, roots: list[Path]) -> None:
        """A feed over the workspaces served now (made again when they change)."""
        if roots == self.feed_roots:
            return
        if self.feed is not None:
            self.feed.stop()
        self.feed = Feed(roots)
        self.feed.follow(self.changed.set)  # before the load: no change falls between
        self.feed.load()
        self.feed_roots = roots

    def _beat(self) -> None:
        """Renew this machine's heartbeat; where it was gone, the rows go out whole."""
        machine = self.settings.machine
        ttl = max(1, int(self.settings.unreachable_after * 1000))
        with self.client.pipeline(transaction=False) as pipe:
            pipe.set(keys.alive(machine), repr(time.time()), px=ttl, get=True)
            # when, and after how long without a beat it is unreachable (its own heartbeat's)
            pipe.hset(keys.MACHINES, machine, f"{time.time()!r} {self.settings.unreachable_after!r}")
            before, _ = pipe.execute()
        if before is None:
            self.whole = True

    def _publish(self) -> None:
        if self.feed is None:
            return
        stale = self.stale()
        now = {keys.field(row.root, row.harness_id): orjson.dumps(rowjson.to_json(row, stale))
               for row in self.feed.rows.values()}
        machine = self.settings.machine
        if self.whole:
            changed, gone = now, list(self.published)
        else:
            changed = {f: data for f, data in now.items() if self.published.get(f) != data}
            gone = [f for f in self.published if f not in now]
        if not changed and not gone and not self.whole:
            return
        with self.client.pipeline(transaction=True) as pipe:
            if self.whole:
                pipe.delete(keys.rows(machine))
            elif gone:
                pipe.hdel(keys.rows(machine), *gone)
            if changed:
                pipe.hset(keys.rows(machine), mapping=changed)  # type: ignore[arg-type]
            pipe.publish(keys.CHANNEL, machine)
            pipe.execute()
        self.published = now
        self.whole = False

    def _failed(self, exc: BaseException) -> None:
        why = scrub(str(exc) or type(exc).__name__, self.settings.url)
        if self.failing != why:
            log.warning("fleet: cannot publish to %s (tried again every %gs): %s",
                        masked(self.settings.url), RETRY, why)
        self.failing = why
        self.whole = True

    def _recovered(self) -> None:
        if self.failing is not None:
            log.info("fleet: publishing to %s again", masked(self.settings.url))
            self.failing = None

