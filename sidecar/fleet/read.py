"""Every machine's sessions, as the fleet's Redis holds them: the `RowSource` (live/source.py)
that `sessions --fleet`, `top --fleet` and the web view read.

A row is another machine's word: each is read back by `rowjson.from_json`, which checks every
field, and one that is not a row is named in `errors` and left out. A machine whose heartbeat
key has expired (a beat and 1.5 s without one) is unreachable: its rows are kept as it last
published them, its name is in `unreachable` (with when it was last heard), and `errors` says
"laptop: unreachable since 22:41:13 (last heard 22:41:07)"; a view shows those rows as not live.

`follow` listens on the channel every publisher writes its name to, and looks at every
machine's heartbeat twice a second, so a machine that dies (and says nothing) is seen.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from sidecar import config as config_mod
from sidecar.base import words
from sidecar.base.errors import SidecarError
from sidecar.base.timeutil import iso
from sidecar.config import Config, ConfigError
from sidecar.coordination.url import masked, scrub
from sidecar.fleet import keys
from sidecar.fleet.fetch import NOT_UTF8, Fetched, fetch
from sidecar.fleet.settings import FleetSettings, resolve
from sidecar.layout import Workspace
from sidecar.live import timeline
from sidecar.live.changes import Changes
from sidecar.live.timeline import Gathered
from sidecar.views import rowjson
from sidecar.views.sessions import RowKey, SessionRow

if TYPE_CHECKING:
    from sidecar.live.source import RowSource

log = logging.getLogger("sidecar")

KEPT_READS = 64  # reads the view has not taken yet, at most (then every machine is read again)
LOOK_EVERY = 0.5  # seconds between looks at the heartbeats
ANSWER_WAIT = 5.0  # seconds an action waits for its machine's answer
REDIS = "redis"  # the errors' key for Redis itself


class FleetFeed:
    """Every machine's rows, keyed (machine, workspace, harness id)."""

    def __init__(self, settings: FleetSettings) -> None:
        self.settings = settings
        self.client = keys.connect(settings.url)
        self.rows: dict[RowKey, SessionRow] = {}
        self.errors: dict[str, str] = {}
        self.version = 0
        self.traces: set[RowKey] = set()  # (another machine's trace is not at hand)
        self.heard: dict[str, float] = {}  # machine -> when it last beat (its own clock)
        self.silent_after: dict[str, float] = {}  # machine -> its heartbeat key's life
        self.unreachable: dict[str, float] = {}  # machine -> when it was last heard
        self._alive: dict[str, bool] = {}
        self.changes: Changes[str] = Changes()
        self.raw = keys.connect(settings.url, decoded=False)  # what other machines wrote: fetch.py
        self._fetched: list[Fetched] = []  # read by the follow thread, taken by `apply`
        self._full = threading.Event()  # the next read is of every machine
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- reading (Redis is read on the follow thread; a view's thread only takes what was read) --

    def load(self) -> None:
        self._use(fetch(self.raw, self.settings.url, None, set(self.heard)))

    def _use(self, got: Fetched) -> None:
        """What was read, taken into the rows: memory only."""
        if got.error is not None:  # nothing is heard: nothing is shown as live
            if self.errors.get(REDIS) != got.error:
                self.errors[REDIS] = got.error
                self.version += 1
            self._reachability(dict.fromkeys(self.heard, False))
            self._mark_unreachable()
            return
        if self.errors.pop(REDIS, None) is not None:
            self.version += 1
        for key in [k for k in self.errors if k.startswith("name:")]:
            del self.errors[key]
        self.errors.update(got.bad)
        for gone in set(self.heard) - set(got.heard):  # taken off the fleet (its hash deleted)
            self._take(gone, {})
        self.heard = {name: _number(got.heard[name], 0) for name in got.heard}
        self.silent_after = {name: _number(got.heard[name], 1) for name in got.heard}
        for name, fields in got.published.items():
            self._take(name, fields)
        self._reachability(got.alive)
        self._mark_unreachable()

    def _take(self, machine: str, fields: dict[str, str | None]) -> None:
        """A machine's rows as its hash now holds them."""
        for key in [k for k in self.rows if k[0] == machine]:
            del self.rows[key]
        for where in [k for k in self.errors if k.startswith(f"row:{machine}:")]:
            del self.errors[where]
        for name, data in fields.items():
            try:
                if data is NOT_UTF8:
                    raise ValueError("not UTF-8")
                parsed = orjson.loads(data)
                if not isinstance(parsed, dict):
                    raise ValueError("not a JSON object")
                row = rowjson.from_json(parsed, machine)
            except ValueError as exc:
                self.errors[f"row:{machine}:{name}"] = f"{machine}: a row that cannot be read ({exc})"
                continue
            self.rows[row.key] = row
        self.version += 1

    def _reachability(self, alive: dict[str, bool]) -> None:
        if alive == self._alive:
            return
        self._alive = alive
        self.unreachable = {name: self.heard.get(name, 0.0) for name, up in alive.items() if not up}
        for key in [k for k in self.errors if k.startswith("machine:")]:
            del self.errors[key]
        for name, heard in self.unreachable.items():
            self.errors[f"machine:{name}"] = unreachable_text(name, heard, self.silent_after.get(name, 0.0))
        self.version += 1

    def _mark_unreachable(self) -> None:
        """An unreachable machine's rows say so (new rows: a view sees them change), and are
        no longer live anywhere they are shown; a machine heard again gets them back."""
        for key, row in self.rows.items():
            if row.reachable == (row.machine in self.unreachable):
                self.rows[key] = replace(row, reachable=not row.reachable)
                self.version += 1

    @property
    def machines(self) -> list[dict[str, Any]]:
        """Every machine: whether it is heard from, when it last was, since when it is not
        (`sessions --fleet --json` and the web view)."""
        return [{"name": name, "reachable": name not in self.unreachable,
                 "lastHeardAt": iso(heard) if heard else None,
                 "unreachableSince": iso(heard + self.silent_after.get(name, 0.0))
                 if name in self.unreachable and heard else None}
                for name, heard in sorted(self.heard.items())]

    def live(self, row: SessionRow) -> bool:
        """Whether the row's machine is heard from: an unreachable one's rows are as they were."""
        return row.machine not in self.unreachable

    # -- following -------------------------------------------------------------------------

    def follow(self, on_change: Callable[[], None]) -> None:
        self.changes.on_change = on_change
        self._thread = threading.Thread(target=self._listen, name="fleet-follow", daemon=True)
        self._thread.start()

    def _listen(self) -> None:
        """Follow the channel (a burst of names: one read), and look at the heartbeats every
        LOOK_EVERY; after a lost connection every machine is read again (what was published
        meanwhile was missed). Nothing ends it but `stop`."""
        while not self._stop.is_set():
            try:
                with self.raw.pubsub(ignore_subscribe_messages=True) as pubsub:  # type: ignore[no-untyped-call, unused-ignore]
                    pubsub.subscribe(keys.CHANNEL)
                    self._hand(None)
                    self._follow(pubsub)
            except keys.FAILURES:
                self._hand(None)  # (its answer says Redis cannot be read)
                self._stop.wait(LOOK_EVERY)
            except Exception:  # never a reader that stops: said, and tried again
                log.exception("the fleet's reader")
                self._stop.wait(LOOK_EVERY)

    def _follow(self, pubsub: Any) -> None:
        next_look = time.monotonic() + LOOK_EVERY
        while not self._stop.is_set():
            wanted: set[str] = set()
            message = pubsub.get_message(timeout=max(0.0, next_look - time.monotonic()))
            while message is not None:
                data = message.get("data")
                name = data.decode(errors="replace") if isinstance(data, bytes) else None
                if name:
                    wanted.add(name)
                message = pubsub.get_message(timeout=0)
            look = time.monotonic() >= next_look
            if wanted or look or self._full.is_set():
                self._hand(None if self._full.is_set() else wanted)
            if look:
                next_look = time.monotonic() + LOOK_EVERY

    def _hand(self, machines: set[str] | None) -> None:
        """Read (here, on the follow thread) and hand what was read to the view's `apply`."""
        self._full.clear()
        got = fetch(self.raw, self.settings.url, machines, set(self.heard))
        with self._lock:
            if len(self._fetched) >= KEPT_READS:  # the view is not taking them: read all again
                self._fetched.clear()
                self._full.set()
            else:
                self._fetched.append(got)
        self.changes.note("")

    def apply(self) -> bool:
        self.changes.take()
        with self._lock:
            fetched, self._fetched = self._fetched, []
        before = self.version
        for got in fetched:
            self._use(got)
        return self.version != before

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(LOOK_EVERY + 1)
        self.client.close()
        self.raw.close()

    # -- what a view does with a row -------------------------------------------------------

    def gather(self, row: SessionRow) -> Gathered | None:
        """This machine's session's files (when its workspace is registered here); None for another's."""
        if row.machine != self.settings.machine or row.root not in registered_roots():
            return None  # (a row's workspace is another machine's word: only this user's are read)
        return timeline.gather(Workspace(row.root), row)

    def act(self, row: SessionRow, what: str, now: float) -> str:
        """Ask the machine that owns the session to `cancel` or `fire` its follow-up; its answer.
        SidecarError when it refuses, or gives none within ANSWER_WAIT."""
        if row.machine in self.unreachable:
            raise SidecarError(unreachable_text(row.machine, self.heard.get(row.machine, 0.0),
                                                self.silent_after.get(row.machine, 0.0))
                               + ": nothing can be asked of it")
        token = secrets.token_hex(16)
        request = {"what": what, "workspace": str(row.root), "session": row.harness_id,
                   "token": token, "from": self.settings.machine}
        deadline = time.monotonic() + ANSWER_WAIT
        try:
            self.client.xadd(keys.actions(row.machine), request,  # type: ignore[arg-type]
                             maxlen=keys.ACTIONS_KEPT, approximate=True)
            answer = None
            while answer is None and time.monotonic() < deadline:
                answer = self.client.blpop([keys.reply(token)], timeout=1)
        except ValueError:  # an answer that is not UTF-8
            raise SidecarError(f"{row.machine} answered what is not an answer") from None
        except keys.FAILURES as exc:
            raise SidecarError(f"cannot reach the fleet's Redis {masked(self.settings.url)}: "
                               f"{scrub(str(exc), self.settings.url)}") from None
        if answer is None:
            raise SidecarError(f"no answer from {row.machine} within {ANSWER_WAIT:g} s")
        try:
            said = orjson.loads(answer[1])
        except ValueError:
            said = None
        if not isinstance(said, dict) or not isinstance(said.get("text"), str):
            raise SidecarError(f"{row.machine} answered what is not an answer")
        if said.get("ok") is not True:
            raise SidecarError(f"{row.machine}: {said['text']}")
        return f"{row.machine}: {said['text']}"


def registered_roots() -> list[Path]:
    """This user's registered workspaces (none, where the registry cannot be read)."""
    try:
        return config_mod.load_registry()
    except config_mod.RegistryError:
        return []


def _number(text: Any, index: int) -> float:
    """A number of the machines hash's "<last heard> <unreachable after>" (0 if none)."""
    try:
        return float(str(text).split()[index])
    except (IndexError, ValueError):
        return 0.0


def unreachable_text(machine: str, heard: float, after: float, now: float | None = None) -> str:
    """`laptop: unreachable since 22:41:13 (last heard 22:41:07)`."""
    now = time.time() if now is None else now
    if not heard:
        return f"{machine}: unreachable (never heard)"
    return (f"{machine}: unreachable since {words.local_time(heard + after, now)} "
            f"(last heard {words.local_time(heard, now)})")


def settings_from_config(config: Config) -> FleetSettings:
    found = resolve(config.fleet)
    if found is None:
        raise ConfigError('no fleet is configured: add [fleet] url = "redis://host:6379/0" to '
                          'config.toml (docs/fleet.md)')
    return found


def source_from_config(config: Config) -> FleetFeed:
    """The fleet's row source as config.toml's `[fleet]` names it; ConfigError without one."""
    return FleetFeed(settings_from_config(config))


if TYPE_CHECKING:
    def _a_row_source(feed: FleetFeed) -> RowSource:
        return feed  # the type checker holds FleetFeed to live/source.py's protocol
