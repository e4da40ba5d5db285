"""`sidecar run`: the process. Threads, file watches, signals, sd_notify, and nothing else.

Each workspace is a `WorkspaceServer` stepped by a thread of its own: step, then sleep until
the deadline the step returned or until something wakes it (an inbox arrival, a change to
hooks.json, a finished action, a signal). Signal handlers only set flags.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from pathlib import Path

from watchdog.events import (
    FileClosedEvent,
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from . import config as config_mod
from . import inbox, jsonfile, layout
from . import plugins as plugins_mod
from .config import Config
from .instances import Identity
from .layout import TamperedRuntime, Workspace
from .plugins import PluginRunner
from .procwatch import Proc, ProcessWatch
from .sdnotify import Notifier
from .server import WorkspaceServer
from .timeutil import now

log = logging.getLogger("sidecar")

REGISTRY_INTERVAL = 2.0
SET_ASIDE_RETRY = 2.0  # how often a workspace set aside (a tampered runtime) is looked at again


def _name(event: FileSystemEvent) -> str:
    path = event.dest_path if isinstance(event, FileMovedEvent) else event.src_path
    return os.path.basename(os.fsdecode(path))


class InboxWatch(FileSystemEventHandler):
    """Wakes a workspace's server when an event file arrives; ignores everything else."""

    def __init__(self, server: WorkspaceServer) -> None:
        self.server = server

    def on_any_event(self, event: FileSystemEvent) -> None:
        if not inbox.is_temporary(_name(event)):
            self.server.notice_arrival()


class HooksFileWatch(FileSystemEventHandler):
    """Wakes a workspace's server when hooks.json changes (a hand edit, `sidecar hooks`)."""

    def __init__(self, server: WorkspaceServer) -> None:
        self.server = server

    def on_any_event(self, event: FileSystemEvent) -> None:
        if _name(event) == "hooks.json":
            self.server.notice_hooks_change()


class Daemon:
    """The process: workspace servers, one watchdog observer, signals, the registry."""

    def __init__(self, roots: list[Path] | None, config: Config) -> None:
        self.fixed_roots = roots
        self.config = config  # replaced whole on reload, never changed in place
        self.identity = Identity()
        self.stop = threading.Event()
        self.reload = threading.Event()
        self.servers: dict[Path, WorkspaceServer] = {}
        self.threads: dict[Path, threading.Thread] = {}
        self.skipped: set[Path] = set()  # registered folders that are not workspaces
        self.failing: dict[Path, str] = {}  # workspaces that cannot be served now, and why
        self.observer = Observer()
        self.plugins = PluginRunner(plugins_mod.load(), config.plugin_timeout)
        self.procs = ProcessWatch(self._process_exited)
        self.proc_owners: dict[Proc, set[WorkspaceServer]] = {}
        self.proc_lock = threading.Lock()
        self.notifier = Notifier()

    def current_config(self) -> Config:
        return self.config

    def wanted_roots(self) -> list[Path]:
        if self.fixed_roots is not None:
            return self.fixed_roots
        return config_mod.load_registry()

    def sync_workspaces(self) -> None:
        """Start serving workspaces that appeared (one taken off the registry is served on
        until the next start)."""
        for root in self.wanted_roots():
            if root in self.servers:
                continue
            ws = Workspace(root)
            if not ws.context.is_dir():
                if root not in self.skipped:  # once, not at every look at the registry
                    self.skipped.add(root)
                    log.warning("%s: registered but not a workspace (any more); skipped. Run "
                                "`sidecar init %s` to serve it, or `sidecar unregister %s`",
                                root, root, root)
                continue
            try:
                self._start_serving(root, ws)
            except Exception as exc:  # one workspace that cannot be served stops no other
                if self.failing.get(root) != str(exc):
                    log.error("%s: cannot be served (retried every %gs): %s", root,
                              REGISTRY_INTERVAL, exc)
                self.failing[root] = str(exc)
                continue
            if self.failing.pop(root, None) is not None:
                log.info("%s: can be served again", root)

    def _start_serving(self, root: Path, ws: Workspace) -> None:
        ws.ensure_runtime()
        server = WorkspaceServer(ws, self.current_config, self.identity, self.plugins,
                                 self.stop.is_set, self.watch_process)
        watches = []
        try:
            watches.append(self.observer.schedule(
                InboxWatch(server), str(ws.inbox), recursive=False,
                event_filter=[FileCreatedEvent, FileMovedEvent, FileClosedEvent]))
            watches.append(self.observer.schedule(
                HooksFileWatch(server), str(ws.runtime), recursive=False,
                event_filter=[FileModifiedEvent, FileMovedEvent, FileClosedEvent,
                              FileCreatedEvent]))
        except Exception:
            for watch in watches:
                self.observer.unschedule(watch)
            raise
        self.servers[root] = server
        thread = threading.Thread(target=self._serve, args=(server,), name=f"ws:{root}",
                                  daemon=True)
        self.threads[root] = thread
        thread.start()
        log.info("%s: serving", root)

    def watch_process(self, proc: Proc, server: WorkspaceServer) -> None:
        """Tell `server` when `proc` exits (one watch however many workspaces ask)."""
        with self.proc_lock:
            self.proc_owners.setdefault(proc, set()).add(server)
        self.procs.watch(proc)

    def _process_exited(self, proc: Proc) -> None:
        with self.proc_lock:
            owners = self.proc_owners.pop(proc, set())
        for server in owners:
            server.notice_host_exit(proc)

    def _serve(self, server: WorkspaceServer) -> None:
        """Step one workspace until the process stops."""
        try:
            server.open(now())
            while not self.stop.is_set():
                try:
                    deadline = server.step(now())
                except TamperedRuntime as exc:  # set aside; the other workspaces go on
                    server.set_aside(exc)
                    deadline = now() + SET_ASIDE_RETRY
                except Exception as exc:  # a bug or a surprise must not end service
                    server.unexpected(exc)
                    deadline = now() + 1.0
                server.wake.wait(max(0.0, deadline - now()))
                server.wake.clear()
        except Exception:
            log.exception("%s: the workspace server failed", server.ws.root)
        finally:
            server.close(now())

    def install_signals(self) -> None:
        signal.signal(signal.SIGTERM, lambda *_: self.stop.set())
        signal.signal(signal.SIGINT, lambda *_: self.stop.set())
        signal.signal(signal.SIGHUP, lambda *_: self.reload.set())

    def status_line(self) -> str:
        servers = list(self.servers.values())
        applied = sum(s.ingest.health.applied for s in servers)
        errors = sum(s.ingest.health.errors for s in servers)
        leading = sum(1 for s in servers if s.leader is not None)
        failing = f"; {len(self.failing)} cannot be served" if self.failing else ""
        return (f"serving {len(servers)} workspace(s), leading {leading}; "
                f"{applied} events applied, {errors} errors{failing}")

    def _watchdog(self) -> None:
        """Ping systemd's watchdog while every workspace loop keeps going round."""
        interval = self.notifier.watchdog_interval or 0.0
        period = interval / 2 if interval else 5.0
        while not self.stop.wait(period):
            if interval:
                stale = [s for s in self.servers.values()
                         if time.monotonic() - s.progress > interval / 2]
                if stale:
                    log.warning("watchdog: no progress in %s",
                                ", ".join(str(s.ws.root) for s in stale))
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
            self._watch_registry()
        finally:
            self._shutdown()
        return 0

    def _watch_registry(self) -> None:
        registry_sig = jsonfile.signature(layout.registry_file())
        while not self.stop.wait(REGISTRY_INTERVAL):
            if self.reload.is_set():
                self.reload.clear()
                self._reload_config()
                self.sync_workspaces()
                continue
            sig = jsonfile.signature(layout.registry_file())
            if sig != registry_sig or self.failing:
                registry_sig = sig
                self.sync_workspaces()

    def _shutdown(self) -> None:
        self.stop.set()
        self.notifier.stopping()
        for server in self.servers.values():
            server.wake.set()
        for thread in self.threads.values():
            thread.join(timeout=30)
        self.observer.stop()
        self.observer.join(timeout=5)
        self.procs.stop()
        self.plugins.stop()
        log.info("stopped")

    def _reload_config(self) -> None:
        monotonic_usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self.notifier.send("RELOADING=1", f"MONOTONIC_USEC={monotonic_usec}")
        try:
            self.config = config_mod.load_config()
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
