"""`sidecar run`: the process. The step loop, the watches, signals, sd_notify, and nothing else.

Each workspace is a `WorkspaceServer`, stepped by the shared `StepLoop` whenever its deadline
comes or something wakes it (an inbox arrival, a change to hooks.json, a finished process). The
process has a fixed number of threads however many workspaces it serves: the loop's workers,
one folder watch, one process watch, the plugin runner, and this one, which looks at the
registry and handles signals.

Signal handlers only note the signal (signalflags.py): a flood of them re-enters no code,
and any number of SIGHUPs waiting is one reload.

The loop sleeps on the monotonic clock; a workspace's step works in wall-clock time, and its
deadline is turned into a monotonic one at once (`_step`).
"""

from __future__ import annotations

import errno
import logging
import threading
import time
from pathlib import Path

from sidecar import config as config_mod
from sidecar import jsonfile, layout
from sidecar.base.timeutil import now
from sidecar.config import Config, SettingsRead
from sidecar.coordination import current as coordination
from sidecar.coordination.base import Listening, workspace_key
from sidecar.coordination.instances import Identity
from sidecar.daemon import plugins as plugins_mod
from sidecar.daemon import setaside
from sidecar.daemon.companions import Companions
from sidecar.daemon.fdlimit import FDS_PER_WORKSPACE, files_needed, raise_fd_limit, workspaces_within
from sidecar.daemon.loop import StepLoop
from sidecar.daemon.plugins import PluginRunner
from sidecar.daemon.sdnotify import Notifier
from sidecar.daemon.setaside import SET_ASIDE_RETRY
from sidecar.daemon.settings import Settings, say_env_problems
from sidecar.daemon.signalflags import SignalFlags
from sidecar.daemon.watch import FolderWatch, InotifyWatch, folder_watch
from sidecar.daemon.workspace import WorkspaceServer
from sidecar.followups import globalhooks
from sidecar.inbox import folder as inbox
from sidecar.layout import Workspace
from sidecar.procwatch import Proc, ProcessWatch
from sidecar.telemetry import feed as telemetry

log = logging.getLogger("sidecar")

REGISTRY_INTERVAL = 2.0
SKIPPED_NAMED = 5  # registered folders that are not workspaces named one by one, at most
class Daemon:
    """The process: workspace servers, their watches and loop, signals, the registry."""

    def __init__(self, roots: list[Path] | None, config: Config, read: SettingsRead | None = None) -> None:
        self.fixed_roots = roots
        # Chosen once: instances of one workspace on different backends would not see each
        # other's locks, so a changed URL takes a restart (a reload says so).
        self.coordination = coordination.for_url(config.coordination_url)
        coordination.use(self.coordination)
        self.settings = Settings(config, read, self._settings_changed, self.coordination.shown)
        self.by_key: dict[str, WorkspaceServer] = {}  # (coordination's workspace keys)
        self.identity = Identity()
        self.stop = threading.Event()
        self.servers: dict[Path, WorkspaceServer] = {}
        self.watches: dict[WorkspaceServer, list[object]] = {}
        self.opened: set[WorkspaceServer] = set()
        self.skipped: set[Path] = set()  # registered folders that are not workspaces
        self.failing: dict[Path, str] = {}  # workspaces that cannot be served now, and why
        self.retiring: set[WorkspaceServer] = set()  # taken off the registry: handed over
        self.registry_error: str | None = None  # why the registry cannot be read, while so
        self.resync = False  # a workspace was handed over: it may have been registered again
        self.fd_limit = raise_fd_limit()
        self.folders: FolderWatch = folder_watch()
        self.loop: StepLoop[WorkspaceServer] = StepLoop(self._step, time.monotonic)
        self.plugins = PluginRunner(plugins_mod.load(), config.plugin_timeout)
        # OpenTelemetry export, where configured (chosen at start, like the coordination)
        self.telemetry = telemetry.start(config.otel, config.agent_env)
        self.companions = Companions(config.fleet, lambda: list(self.servers),  # `[fleet]`, `[web]`
                                     lambda: self.config.stale_after)
        self.procs = ProcessWatch(self._process_exited)
        self.proc_owners: dict[Proc, set[WorkspaceServer]] = {}
        self.proc_lock = threading.Lock()
        self.notifier = Notifier()
        self.signals = SignalFlags()  # set by the handlers, acted on by the main thread

    @property
    def config(self) -> Config:
        return self.settings.current()

    def wanted_roots(self) -> list[Path] | None:
        """The workspaces to serve; None while the registry cannot be read (said once for
        each reason): those served go on being served, and none is added or dropped."""
        if self.fixed_roots is not None:
            return self.fixed_roots
        try:
            roots = config_mod.load_registry()
        except config_mod.RegistryError as exc:
            if self.registry_error != str(exc):
                log.error("%s; serving what was served until it can be read", exc)
            self.registry_error = str(exc)
            return None
        if self.registry_error is not None:
            log.info("the registry can be read again")
            self.registry_error = None
        return roots

    def sync_workspaces(self) -> None:
        """Serve the workspaces wanted: start serving those that appeared, and stop serving
        those taken off the registry."""
        wanted = self.wanted_roots()
        if wanted is None:
            return
        self._retire(set(wanted))
        workspaces = self._workspaces(wanted)
        if len(workspaces) > workspaces_within(self.fd_limit):
            log.error("%d workspaces need about %d open files, but the limit is %d: raise it "
                      "(LimitNOFILE= in the service unit, or `ulimit -n`)", len(workspaces),
                      files_needed(len(workspaces)), self.fd_limit)
        for ws in workspaces:
            root = ws.root
            if root in self.servers:
                continue
            if len(self.servers) >= workspaces_within(self.fd_limit):
                # Taking its locks would leave no file free for the others' work.
                self._failing(root, OSError(errno.EMFILE, "too many open files"))
                continue
            try:
                self._start_serving(root, ws)
            except Exception as exc:  # one workspace that cannot be served stops no other
                self._failing(root, exc)
                continue
            if self.failing.pop(root, None) is not None:
                log.info("%s: can be served again", root)

    def _workspaces(self, wanted: list[Path]) -> list[Workspace]:
        """The wanted folders that are workspaces; the others are skipped, each said once
        (at most a few by name: a registry of thousands of dead entries is one line more)."""
        found, gone = [], []
        for root in wanted:
            ws = Workspace(root)
            if ws.context.is_dir():
                found.append(ws)
            elif root not in self.skipped:  # once, not at every look at the registry
                self.skipped.add(root)
                gone.append(root)
        for root in gone[:SKIPPED_NAMED]:
            log.warning("%s: registered but not a workspace (any more); skipped. Run "
                        "`sidecar init %s` to serve it, or `sidecar unregister %s`",
                        root, root, root)
        if len(gone) > SKIPPED_NAMED:
            log.warning("and %d more registered folders are not workspaces; skipped (`sidecar "
                        "status --all` names them)", len(gone) - SKIPPED_NAMED)
        return found

    def _retire(self, wanted: set[Path]) -> None:
        """Stop serving the workspaces taken off the registry: each is handed over by its own
        step (never while it is being stepped), as at a stop."""
        for root, server in list(self.servers.items()):
            if root not in wanted and server not in self.retiring:
                self.retiring.add(server)
                self.loop.wake(server)
        self.skipped &= wanted
        for root in [r for r in self.failing if r not in wanted]:
            del self.failing[root]

    def _too_many_files(self) -> str:
        return (f"too many open files: the limit is {self.fd_limit}, and each workspace needs "
                f"{FDS_PER_WORKSPACE}; raise LimitNOFILE= in the service unit (or `ulimit -n`)")

    def _failing(self, root: Path, exc: BaseException) -> None:
        why = str(exc)
        if isinstance(exc, OSError) and exc.errno == errno.EMFILE:
            why = self._too_many_files()
        if self.failing.get(root) != why:
            log.error("%s: cannot be served (retried every %gs): %s", root, REGISTRY_INTERVAL, why)
        self.failing[root] = why

    def _start_serving(self, root: Path, ws: Workspace) -> None:
        ws.ensure_runtime()
        server = WorkspaceServer(ws, self.settings.current, self.identity, self.plugins,
                                 self.stop.is_set, self.watch_process,
                                 watch_reliable=isinstance(self.folders, InotifyWatch)
                                 and self.coordination.implements.every_arrival_by_watch,
                                 fresh=self.settings.for_firing, read=self.settings.last_read,
                                 telemetry=self.telemetry)
        self.by_key[workspace_key(ws)] = server
        server.wake = lambda: self.loop.wake(server)
        self._watch_folders(server)
        self.servers[root] = server
        self.loop.add(server, time.monotonic())
        log.info("%s: serving", root)

    def _watch_folders(self, server: WorkspaceServer) -> None:
        """Watch the inbox for arrivals and the runtime folder for changes to hooks.json."""
        def on_inbox(name: str | None) -> None:
            if name is None or not inbox.is_temporary(name):
                server.notice_arrival()
                self._announce(server)

        def on_runtime(name: str | None) -> None:
            if name is None or name == "hooks.json":
                server.notice_hooks_change()
                self._announce(server)

        for handle in self.watches.pop(server, []):
            self.folders.remove(handle)
        handles: list[object] = []
        self.watches[server] = handles  # empty until both are watched: tried again at each step
        try:
            handles.append(self.folders.add(server.ws.inbox, on_inbox))
            handles.append(self.folders.add(server.ws.runtime, on_runtime))
        except Exception:
            for handle in handles:
                self.folders.remove(handle)
            handles.clear()
            raise

    def _announce(self, server: WorkspaceServer) -> None:
        """Tell the leader on another machine what this one's watch saw (its own watch never
        sees another machine's writes); a leader sees its own arrivals."""
        if not server.lead.leading:
            self.coordination.changed(server.ws)

    def _woken(self, key: str) -> None:
        """Another machine saw a workspace's files change ("": any may have, after a gap)."""
        servers = list(self.servers.values()) if not key else [self.by_key.get(key)]
        for server in servers:
            if server is not None and server.lead.leading:
                server.notice_arrival()

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

    def _step(self, server: WorkspaceServer, mono: float) -> float | None:
        """One step of one workspace, on a loop worker, at the monotonic time `mono`; returns
        when to step it again, on the monotonic clock (the step's own deadline is a wall-clock
        time: what is left of it is what counts), or None once it is no longer served."""
        at = now()
        if server in self.retiring:
            self._stop_serving(server)
            return None
        if server not in self.opened and not setaside.is_back(server.ws):
            return mono + SET_ASIDE_RETRY  # deleted: opening it would make it again
        try:
            jump = server.clock.stepped(at, mono)
            if jump:
                server.clock_stepped(jump, at)
            if server not in self.opened:
                server.open()
                self.opened.add(server)
            deadline = server.step(at)
            handles = self.watches.get(server, [])
            if not handles or any(self.folders.lost(h) for h in handles):
                self._watch_folders(server)  # its folder was replaced: watch the new one
                server.notice_arrival()  # and list it: files may have come meanwhile
                return time.monotonic()
        except Exception as exc:
            after = setaside.after_failure(server, exc, self._too_many_files())
            if after.deleted:
                self.opened.discard(server)  # opened anew once back
            return mono + after.retry_in
        return mono + (deadline - at)

    def _stop_serving(self, server: WorkspaceServer) -> None:
        try:
            server.close()
        except Exception:  # a tampered runtime, say: it is no longer served all the same
            server.log.exception("not closed cleanly as it stopped being served")
        for handle in self.watches.pop(server, []):
            self.folders.remove(handle)
        self.opened.discard(server)
        self.servers.pop(server.ws.root, None)
        self.by_key.pop(workspace_key(server.ws), None)
        self.retiring.discard(server)
        self.resync = True
        server.log.info("no longer registered; stopped serving it")

    def status_line(self) -> str:
        servers = list(self.servers.values())
        applied = sum(s.ingest.health.applied for s in servers)
        errors = sum(s.ingest.health.errors for s in servers)
        leading = sum(1 for s in servers if s.lead.leading)
        failing = f"; {len(self.failing)} cannot be served" if self.failing else ""
        if self.registry_error is not None:
            failing += "; the registry cannot be read"
        return (f"serving {len(servers)} workspace(s), leading {leading}; "
                f"{applied} events applied, {errors} errors{failing}")

    def _watchdog(self) -> None:
        """Ping systemd's watchdog while no workspace's step is stuck and the loop steps what
        is due (a loop that stopped stepping hangs no step, but serves nothing either)."""
        interval = self.notifier.watchdog_interval or 0.0
        period = interval / 2 if interval else 5.0
        while not self.stop.wait(period):
            if interval:
                limit = time.monotonic() - interval / 2
                stale = [s for s, since in self.loop.busy_since().items()
                         if max(since, s.ingest.progress) < limit]
                stalled = self.loop.stalled_for()
                if stale:
                    log.warning("watchdog: no progress in %s", ", ".join(str(s.ws.root) for s in stale))
                elif stalled > interval / 2:
                    log.warning("watchdog: the step loop left due work waiting %.0fs", stalled)
                else:
                    self.notifier.watchdog()
            self.notifier.status(self.status_line())

    def run(self) -> int:
        self.folders.start()
        self.loop.start()
        if isinstance(self.coordination, Listening):
            self.coordination.listen(self._woken)
        try:
            self.sync_workspaces()
            if not self.servers and not self.failing and self.fixed_roots is not None:
                log.error("no workspace to serve")  # (one that cannot be served now is retried)
                return 1
            self.companions.serve_web(self.config.web, sorted(self.servers), self.config.stale_after)
            self.notifier.ready(self.status_line())
            if self.notifier.enabled:
                threading.Thread(target=self._watchdog, name="watchdog", daemon=True).start()
            self._watch_registry()
        finally:
            self._shutdown()
        return 0

    def _watch_registry(self) -> None:
        """Until told to stop: reload on SIGHUP (once for any number waiting), and look at the
        registry, the settings files and the user's global hooks every REGISTRY_INTERVAL."""
        registry_sig = jsonfile.signature(layout.registry_file())
        global_sig = jsonfile.signature(globalhooks.path())
        next_look = time.monotonic() + REGISTRY_INTERVAL
        while not self.signals.wait(max(0.0, next_look - time.monotonic()), self.stop):
            if self.signals.reload:
                self.signals.reload = False  # before the reload: one sent during it counts
                self._reload_config()
                self.sync_workspaces()
                continue
            if time.monotonic() < next_look:
                continue
            next_look = time.monotonic() + REGISTRY_INTERVAL
            self.settings.fresh()  # config.toml or the environment file changed: read again
            changed = jsonfile.signature(globalhooks.path())
            if changed != global_sig:
                global_sig = changed
                for server in list(self.servers.values()):
                    server.wake()  # each leader takes up the user's changed global hooks
            sig = jsonfile.signature(layout.registry_file())
            if sig != registry_sig or self.failing or self.resync:
                self.resync = False
                registry_sig = sig
                self.sync_workspaces()

    def _shutdown(self) -> None:
        self.stop.set()
        self.notifier.stopping()
        self.loop.stop(timeout=30)  # a batch in hand is finished; nothing new starts
        busy = self.loop.busy_since()
        for server in list(self.opened):
            if server not in busy:  # one still stepping keeps its locks until the process ends
                server.close()
        self.folders.stop()
        self.procs.stop()
        self.plugins.stop()
        self.companions.stop()
        if self.telemetry is not None:
            self.telemetry.stop(timeout=5.0)  # what is queued is sent, for 5 s at most
        self.coordination.close()  # this instance's lease ends now, not at its expiry
        log.info("stopped")

    def _reload_config(self) -> None:
        monotonic_usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self.notifier.send("RELOADING=1", f"MONOTONIC_USEC={monotonic_usec}")
        self.settings.reload()
        self.notifier.send("READY=1", f"STATUS={self.status_line()}")

    def _settings_changed(self) -> None:
        """After each read of the settings (on any thread): every workspace rewrites its
        instance file at once, so `doctor` and `reload` see the read now, not a beat later."""
        for server in list(self.servers.values()):
            server.notice_settings_change()


def serve(roots: list[Path] | None, config: Config, read: SettingsRead | None = None) -> int:
    say_env_problems(config)
    daemon = Daemon(roots, config, read)
    daemon.signals.install()
    return daemon.run()
