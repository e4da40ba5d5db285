"""`sidecar run`: serve workspaces until told to stop.

Per workspace, one thread: it registers this instance (a file, plus a lock held for life so
the kernel marks it dead when the process dies), then competes for the workspace's leader
lock. The leader applies the inbox in batches; the others stand by and retry the lock every
200 ms, so a successor takes over well within a second of the leader's death. watchdog only
wakes the leader; every pass lists the inbox, so files that arrived before start-up or that
the kernel's queue dropped are found by the reconcile timer.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from watchdog.events import (
    FileClosedEvent,
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from . import __version__, config as config_mod, inbox, jsonfile, locks, plugins as plugins_mod
from .config import Config
from .hooks import HookStore
from .layout import Workspace
from .plugins import PluginRunner
from .scheduler import Scheduler
from .sdnotify import Notifier
from .sessions import BatchResult, Effect, SessionStore, StoreError
from .timeutil import iso, now

log = logging.getLogger("sidecar")

BATCH_MAX = 2000  # events per batch: bounds memory and the time between state writes
STANDBY_RETRY = 0.2  # seconds between a stand-by's attempts at the leader lock
PRUNE_INTERVAL = 3600.0
REGISTRY_INTERVAL = 2.0


@dataclass
class Instance:
    """This process, as other processes and `status` see it."""

    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    pid: int = field(default_factory=os.getpid)
    started: float = field(default_factory=now)
    hostname: str = field(default_factory=socket.gethostname)


class InboxWatch(FileSystemEventHandler):
    """Wakes a workspace's server when an event file arrives; ignores everything else."""

    def __init__(self, wake: threading.Event) -> None:
        self.wake = wake

    def on_any_event(self, event: FileSystemEvent) -> None:
        path = event.dest_path if isinstance(event, FileMovedEvent) else event.src_path
        name = os.path.basename(os.fsdecode(path))
        if not inbox.is_temporary(name):
            self.wake.set()


class HooksFileWatch(FileSystemEventHandler):
    """Wakes the follow-up scheduler when hooks.json changes (a hand edit, `sidecar hooks`)."""

    def __init__(self, server: "WorkspaceServer") -> None:
        self.server = server

    def on_any_event(self, event: FileSystemEvent) -> None:
        path = event.dest_path if isinstance(event, FileMovedEvent) else event.src_path
        if os.path.basename(os.fsdecode(path)) == "hooks.json" and self.server.scheduler:
            self.server.scheduler.wake.set()



class WorkspaceServer:
    """Everything one instance does for one workspace."""

    def __init__(
        self,
        ws: Workspace,
        config: Config,
        instance: Instance,
        stop: threading.Event,
        plugins: PluginRunner | None = None,
    ) -> None:
        self.ws = ws
        self.config = config
        self.instance = instance
        self.stop = stop
        self.wake = threading.Event()
        self.store = SessionStore(ws)
        self.hook_store = HookStore(ws)
        self.plugins = plugins
        self.scheduler: Scheduler | None = None
        self.leader: IO[bytes] | None = None
        self.instance_lock: IO[bytes] | None = None
        self.counters = {"applied": 0, "rejected": 0, "errors": 0}
        self.last_error = ""
        self.retry_after: dict[str, float] = {}
        self.inherited = False  # the inbox may hold a batch a dead leader half-applied
        self.next_grace: float | None = None
        self.progress = time.monotonic()  # when its loop last went round (for the watchdog)
        self.thread = threading.Thread(target=self._run, name=f"ws:{ws.root}", daemon=True)

    # -- life cycle -----------------------------------------------------------------------

    @property
    def instance_file(self) -> Path:
        return self.ws.instances / f"{self.instance.id}.json"

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            self.ws.ensure_runtime()
            self.instance_lock = locks.try_lock(self.ws.lock(f"instance-{self.instance.id}"))
            self.heartbeat()
            next_beat = now() + self.config.heartbeat_interval
            while not self.stop.is_set():
                self.progress = time.monotonic()
                if self.leader is None:
                    self.leader = locks.try_lock(self.ws.lock("leader"))
                    if self.leader is None:
                        if now() >= next_beat:
                            self.heartbeat()
                            next_beat = now() + self.config.heartbeat_interval
                        self.stop.wait(STANDBY_RETRY)
                        continue
                    log.info("%s: leading (instance %s)", self.ws.root, self.instance.id)
                    self.heartbeat()
                    self._lead()
        except Exception:
            log.exception("%s: the workspace server failed", self.ws.root)
        finally:
            self._shutdown()

    def _shutdown(self) -> None:
        # Hand the workspace over at once; actions already running finish (or are recorded
        # interrupted) under this instance's claims, which stay valid while it lives.
        if self.scheduler is not None:
            self.scheduler.stop_firing()
        locks.release(self.leader)
        self.leader = None
        if self.scheduler is not None:
            self.heartbeat()
            self.scheduler.finish_running()
        try:
            self.instance_file.unlink()
        except FileNotFoundError:
            pass
        locks.release(self.instance_lock)
        lock_file = self.ws.lock(f"instance-{self.instance.id}")
        try:
            lock_file.unlink()
        except FileNotFoundError:
            pass

    def heartbeat(self) -> None:
        """Rewrite this instance's file: who it is, what it does, when it last did it."""
        doc = {
            "id": self.instance.id,
            "pid": self.instance.pid,
            "hostname": self.instance.hostname,
            "version": __version__,
            "startedAt": iso(self.instance.started),
            "heartbeatAt": iso(now()),
            "role": "leader" if self.leader is not None else "standby",
            "lastError": self.last_error,
            "hooksError": self.hook_store.state.error if self.hook_store.state else None,
            "plugins": self.plugins.counters() if self.plugins is not None else {},
            **self.counters,
        }
        try:
            jsonfile.write_json_atomic(self.instance_file, doc, durable=False)
        except OSError as exc:
            log.warning("%s: cannot write heartbeat: %s", self.ws.root, exc)

    # -- leading -----------------------------------------------------------------------------

    def _lead(self) -> None:
        cfg = self.config
        self.clean_dead_instances()
        self.hook_store.seed(now())
        self.scheduler = Scheduler(
            self.ws, self.hook_store, self.store, cfg, self.instance.id,
            lambda other: locks.is_held(self.ws.lock(f"instance-{other}")), self.plugins,
        )
        self.sweep()
        self.prune()
        # Apply what waits in the inbox before firing anything: a batch replayed after a crash
        # must find its queue entries before the scheduler could fire and remove them.
        self.inherited = True
        self.drain()
        self.inherited = False
        self.scheduler.start()
        t = now()
        next_reconcile = t
        next_sweep = t + cfg.sweep_interval
        next_prune = t + PRUNE_INTERVAL
        next_beat = t + cfg.heartbeat_interval
        while not self.stop.is_set():
            self.progress = time.monotonic()
            try:
                t = now()
                deadlines = [next_reconcile, next_sweep, next_prune, next_beat]
                if self.next_grace is not None:
                    deadlines.append(self.next_grace)
                timeout = max(0.0, min(deadlines) - t)
                woken = self.wake.wait(timeout)
                self.wake.clear()
                t = now()
                reconcile = t >= next_reconcile
                if woken or reconcile or (self.next_grace is not None and t >= self.next_grace):
                    self.drain()  # one listing serves a wake-up, the reconcile and a grace expiry
                if reconcile:
                    next_reconcile = t + cfg.reconcile_interval
                if t >= next_sweep:
                    self.sweep()
                    next_sweep = t + cfg.sweep_interval
                if t >= next_prune:
                    self.prune()
                    next_prune = t + PRUNE_INTERVAL
                if t >= next_beat:
                    self.heartbeat()
                    self.clean_dead_instances()
                    next_beat = t + cfg.heartbeat_interval
            except Exception as exc:  # a bug or a surprise must not end service: log, retry
                log.exception("%s: unexpected error; retrying in a second", self.ws.root)
                self._error(f"unexpected error: {exc}")
                self.stop.wait(1.0)

    def drain(self) -> None:
        """Apply everything in the inbox, in batches of at most BATCH_MAX."""
        arrivals = inbox.scan(self.ws)
        t = now()
        self.next_grace = None
        ready = []
        for arrival in arrivals:
            hold = self.retry_after.get(arrival.name)
            if hold is not None and hold > t:
                self._defer(hold)
                continue
            ready.append(arrival)
        for start in range(0, len(ready), BATCH_MAX):
            if self.stop.is_set() and start:
                break  # on SIGTERM: finish the batch in hand, leave the rest in the inbox
            self._batch(ready[start : start + BATCH_MAX])
            self.progress = time.monotonic()

    def _defer(self, at: float) -> None:
        self.next_grace = at if self.next_grace is None else min(self.next_grace, at)

    def _batch(self, arrivals: list[inbox.Arrival]) -> None:
        t = now()
        ready = []
        for arrival in arrivals:
            outcome = inbox.read(self.ws, arrival, t)
            if isinstance(outcome, inbox.Deferred):
                self._defer(outcome.retry_at)
            elif isinstance(outcome, inbox.Rejected):
                try:
                    if inbox.reject(self.ws, outcome, t):
                        self.counters["rejected"] += 1
                        log.warning("%s: rejected %s: %s", self.ws.root,
                                    inbox.printable(outcome.name), outcome.reason)
                except OSError as exc:
                    self._error(f"cannot set {outcome.name} aside: {exc}")
            elif outcome is not None:
                ready.append(outcome)
        if not ready:
            return
        try:
            result = self.store.apply_batch(ready, before_save=self._before_save,
                                            replay=self.inherited)
        except (StoreError, OSError, locks.LockTimeout) as exc:
            self._error(f"batch of {len(ready)} left in the inbox: {exc}")
            for event in ready:
                self.retry_after[event.file] = t + 1.0
            self._defer(t + 1.0)
            return
        self._finish(result, t)

    def _before_save(self, effects: list[Effect]) -> None:
        """Queue follow-up hooks durably before the sessions record that they were queued."""
        if self.scheduler is not None:
            self.scheduler.enqueue(effects)

    def _finish(self, result: BatchResult, t: float) -> None:
        inbox.remove(self.ws, result.applied)
        for name in result.applied:
            self.retry_after.pop(name, None)
        for name in result.retry:
            self.retry_after[name] = t + 1.0
            self._defer(t + 1.0)
        for error in result.errors:
            self._error(error)
        self.counters["applied"] += len(result.applied)
        if result.effects and self.plugins is not None:
            self.plugins.session_effects(str(self.ws.root), result.effects)
        if any(effect.kind in ("start", "reset") for effect in result.effects):
            self.sweep()

    def _error(self, message: str) -> None:
        self.counters["errors"] += 1
        self.last_error = message
        log.error("%s: %s", self.ws.root, message)

    def sweep(self) -> None:
        try:
            result = self.store.sweep(now(), self.config.stale_after)
        except (StoreError, OSError, locks.LockTimeout) as exc:
            self._error(f"stale sweep failed: {exc}")
            return
        for error in result.errors:
            self._error(error)
        if result.effects:
            log.info("%s: swept %d stale session(s)", self.ws.root, len(result.effects))
            if self.plugins is not None:
                self.plugins.session_effects(str(self.ws.root), result.effects)

    def prune(self) -> None:
        try:
            pruned = self.store.prune(now(), self.config.retention)
        except OSError as exc:
            self._error(f"retention pruning failed: {exc}")
            return
        if pruned:
            log.info("%s: pruned %d completed session(s) past retention", self.ws.root, pruned)

    def clean_dead_instances(self) -> None:
        """Remove the files of instances whose life lock is free: they are dead."""
        try:
            entries = list(os.scandir(self.ws.instances))
        except FileNotFoundError:
            return
        for entry in entries:
            if not entry.name.endswith(".json"):
                continue
            instance_id = entry.name[: -len(".json")]
            if instance_id == self.instance.id:
                continue
            lock_file = self.ws.lock(f"instance-{instance_id}")
            if not locks.is_held(lock_file):
                for path in (Path(entry.path), lock_file):
                    try:
                        path.unlink()
                    except FileNotFoundError:
                        pass


class Daemon:
    """The process: workspace servers, one watchdog observer, signals, the registry."""

    def __init__(self, roots: list[Path] | None, config: Config) -> None:
        self.fixed_roots = roots
        self.config = config
        self.instance = Instance()
        self.stop = threading.Event()
        self.reload = threading.Event()
        self.servers: dict[Path, WorkspaceServer] = {}
        self.observer = Observer()
        self.plugins = PluginRunner(plugins_mod.load(), config.plugin_timeout)
        self.notifier = Notifier()

    def wanted_roots(self) -> list[Path]:
        if self.fixed_roots is not None:
            return self.fixed_roots
        return config_mod.load_registry()

    def sync_workspaces(self) -> None:
        """Start serving workspaces that appeared (one taken off the registry is served on
        until the next start)."""
        wanted = []
        for root in self.wanted_roots():
            ws = Workspace(root)
            if ws.context.is_dir():
                wanted.append(root)
            elif root not in self.servers:
                log.warning("%s: not a workspace (no .context/); run `sidecar init %s`",
                            root, root)
        for root in wanted:
            if root in self.servers:
                continue
            ws = Workspace(root)
            ws.ensure_runtime()
            server = WorkspaceServer(ws, self.config, self.instance, self.stop, self.plugins)
            self.servers[root] = server
            self.observer.schedule(
                InboxWatch(server.wake),
                str(ws.inbox),
                recursive=False,
                event_filter=[FileCreatedEvent, FileMovedEvent, FileClosedEvent],
            )
            self.observer.schedule(
                HooksFileWatch(server),
                str(ws.runtime),
                recursive=False,
                event_filter=[FileModifiedEvent, FileMovedEvent, FileClosedEvent, FileCreatedEvent],
            )
            server.start()
            log.info("%s: serving", root)

    def install_signals(self) -> None:
        signal.signal(signal.SIGTERM, lambda *_: self.stop.set())
        signal.signal(signal.SIGINT, lambda *_: self.stop.set())
        signal.signal(signal.SIGHUP, lambda *_: self.reload.set())

    def status_line(self) -> str:
        applied = sum(s.counters["applied"] for s in self.servers.values())
        errors = sum(s.counters["errors"] for s in self.servers.values())
        leading = sum(1 for s in self.servers.values() if s.leader is not None)
        return (f"serving {len(self.servers)} workspace(s), leading {leading}; "
                f"{applied} events applied, {errors} errors")

    def _watchdog(self) -> None:
        """Ping systemd's watchdog while every workspace loop keeps going round."""
        interval = self.notifier.watchdog_interval or 0.0
        period = interval / 2 if interval else 5.0
        while not self.stop.wait(period):
            if interval:
                stale = [s for s in self.servers.values()
                         if time.monotonic() - s.progress > interval / 2]
                if stale:
                    log.warning("watchdog: no progress in %s", ", ".join(str(s.ws.root) for s in stale))
                else:
                    self.notifier.watchdog()
            self.notifier.status(self.status_line())

    def run(self) -> int:
        self.observer.start()
        try:
            self.sync_workspaces()
            if not self.servers and self.fixed_roots is not None:
                log.error("no workspace to serve")
                return 1
            self.notifier.ready(self.status_line())
            if self.notifier.enabled:
                threading.Thread(target=self._watchdog, name="watchdog", daemon=True).start()
            registry_sig = jsonfile.signature(config_mod.layout.registry_file())
            while not self.stop.wait(REGISTRY_INTERVAL):
                if self.reload.is_set():
                    self.reload.clear()
                    self._reload_config()
                    self.sync_workspaces()
                    continue
                sig = jsonfile.signature(config_mod.layout.registry_file())
                if sig != registry_sig:
                    registry_sig = sig
                    self.sync_workspaces()
        finally:
            self.stop.set()
            self.notifier.stopping()
            for server in self.servers.values():
                server.wake.set()
            for server in self.servers.values():
                server.thread.join(timeout=30)
            self.observer.stop()
            self.observer.join(timeout=5)
            self.plugins.stop()
            log.info("stopped")
        return 0

    def _reload_config(self) -> None:
        self.notifier.send("RELOADING=1", f"MONOTONIC_USEC={time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000}")
        try:
            self.config.__dict__.update(config_mod.load_config().__dict__)
            log.info("configuration reloaded")
        except config_mod.ConfigError as exc:
            log.error("configuration not reloaded: %s", exc)
        self.notifier.send("READY=1", f"STATUS={self.status_line()}")


def configure_logging(level: int = logging.INFO) -> None:
    """Plain lines on stderr: journald and launchd add their own timestamps."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    root = logging.getLogger("sidecar")
    root.handlers[:] = [handler]
    root.setLevel(level)


def serve(roots: list[Path] | None, config: Config) -> int:
    daemon = Daemon(roots, config)
    daemon.install_signals()
    return daemon.run()
