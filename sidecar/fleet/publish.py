"""The daemon's fleet publisher: its sessions' rows to Redis, as they change, with a heartbeat.

A thread of its own keeps a `live.feed.Feed` over the workspaces the daemon serves (the feed
follows their files by inotify, as `top` does). A change is taken up 100 ms after the first
note of it, so a burst of events is one write: the rows whose JSON changed are set in the
machine's hash, the rows gone are deleted from it, and the machine's name is published on the
channel readers follow. Every heartbeat renews the machine's `alive` key; when that key was
missing (Redis restarted, or lost it) the whole hash is written again, so a Redis restart
recovers by itself. What is published is `rowjson.to_json`: a row's own facts, never a prompt
or a transcript.

A machine's name is held by one daemon at a time: its heartbeat key holds the daemon's owner id
(keys.claim: set where absent, renewed only by its holder, deleted at stop only by it). A second
daemon under the same name (a `sidecar run` beside the service, a second user of a dev box)
publishes and answers nothing, says so in its log, and takes the name over once the holder's
heartbeat expires. Any other error (inotify's limits, a record that cannot be taken up) is
logged once and tried again: the thread never ends before the daemon does.

Requests of other machines (cancel, fire now) are answered by a second thread
(fleet/answer.py).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
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


def owner_id() -> str:
    """Who holds a machine's name: "<host> <uid> <pid> <random>" (`status` reads the first
    three: whether the holder is a daemon of its own)."""
    return f"{socket.gethostname()} {os.getuid()} {os.getpid()} {secrets.token_hex(6)}"


class Publisher:
    """Publishes the rows of the workspaces `roots()` names, under the settings' machine."""

    def __init__(self, settings: FleetSettings, roots: Callable[[], list[Path]],
                 stale: Callable[[], float | None]) -> None:
        self.settings = settings
        self.roots = roots
        self.stale = stale
        self.client = keys.connect(settings.url)
        self.owner = owner_id()
        self.holding = threading.Event()  # this daemon holds the machine's name now
        self.held_by: str | None = None  # who else holds it, while it is so (said once)
        self.answerer = Answerer(settings, roots, self.holding)
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
            if self.holding.is_set():  # never another daemon's heartbeat
                keys.release(self.client, self.settings.machine, self.owner)
        except keys.FAILURES:
            pass
        self.client.close()

    # -- the thread ------------------------------------------------------------------------

    def _run(self) -> None:
        next_beat = 0.0
        while not self.stop_event.is_set():
            try:
                self._take_up()  # (inotify's limits, EMFILE: an OSError that is not Redis's)
                try:
                    next_beat = self._send(next_beat)
                except keys.FAILURES as exc:
                    self._failed(exc)
                    next_beat = 0.0
                    self.stop_event.wait(RETRY)
                    continue
            except Exception as exc:  # noqa: BLE001  # the publisher outlives any one error
                self._broken(exc)
                next_beat = 0.0
                self.stop_event.wait(RETRY)
                continue
            self.changed.wait(max(0.0, next_beat - time.monotonic()))
            self.changed.clear()

    def _take_up(self) -> None:
        """Follow the workspaces served now, and take up a burst of changes."""
        self._follow(sorted(self.roots()))
        if self.feed is not None and self.feed.pending():
            self.stop_event.wait(COALESCE)  # the rest of the burst
            self.feed.apply()

    def _send(self, next_beat: float) -> float:
        """Beat when due, publish what changed; the next beat's time."""
        if time.monotonic() >= next_beat:
            self._beat()
            next_beat = time.monotonic() + self.settings.heartbeat
        if self.holding.is_set():
            self._publish()
        self._recovered()
        return next_beat

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
        """Claim or renew this machine's name; where it was not held (first, after another
        holder, or Redis lost it) the rows go out whole."""
        machine = self.settings.machine
        ttl = max(1, int(self.settings.unreachable_after * 1000))
        held = keys.claim(self.client, machine, self.owner, ttl)
        if held not in ("", self.owner):
            self._held_elsewhere(held)
            return
        if held == "" or not self.holding.is_set():
            self.whole = True
        if self.held_by is not None:
            log.info("fleet: the fleet name %s is free again: publishing this daemon's sessions",
                     machine)
            self.held_by = None
        self.holding.set()
        # when, and after how long without a beat it is unreachable (its own heartbeat's)
        self.client.hset(keys.MACHINES, machine, f"{time.time()!r} {self.settings.unreachable_after!r}")

    def _held_elsewhere(self, holder: str) -> None:
        self.holding.clear()
        if self.held_by is None:
            log.warning("fleet: %s (held by %s); this daemon neither publishes nor answers "
                        "requests, and takes the name over when its holder's heartbeat stops",
                        keys.held_words(self.settings.machine), holder.rsplit(" ", 1)[0])
        self.held_by = holder

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

    def _broken(self, exc: Exception) -> None:
        why = f"{type(exc).__name__}: {exc}"
        if self.failing != why:
            log.error("fleet: the publisher failed (tried again every %gs): %s", RETRY, why,
                      exc_info=exc)
        self.failing = why
        self.whole = True
        if self.feed is not None:  # made again at the next try: its state is not trusted
            self.feed.stop()
        self.feed, self.feed_roots = None, None

    def _recovered(self) -> None:
        if self.failing is not None:
            log.info("fleet: publishing to %s again", masked(self.settings.url))
            self.failing = None

