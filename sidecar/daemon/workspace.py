"""Everything one instance does for one workspace, as a loop step: `step(now) -> deadline`.

Its lead (lead.py) says whether this instance leads the workspace or stands by; while it
leads, the step steps ingestion and the follow-ups, and a stand-by watches the hosts of its
own machine where the leader may run elsewhere. This is where a workspace's parts are wired
together; the daemon only runs the loop, the watches and the signals.

When the wall clock was stepped (the daemon's loop tells, clocksteps.py), `clock_stepped`
moves every wall-clock timer of the workspace, and the due times of its waiting follow-ups, by
as much.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import orjson

from sidecar import emit, safedir
from sidecar.base.endreasons import HOST_EXITED
from sidecar.base.errors import SidecarError
from sidecar.base.proc import process_space
from sidecar.base.wslog import WorkspaceLog
from sidecar.config import Config, SettingsRead
from sidecar.coordination import current as coordination
from sidecar.coordination.base import Conflict, LeaseLost, Unreachable
from sidecar.coordination.instances import Identity, Reportable
from sidecar.daemon.clocksteps import StepDetector
from sidecar.daemon.hostends import RecordedEnds, end_event
from sidecar.daemon.hostwatch import HostWatch
from sidecar.daemon.ingest import Ingestor
from sidecar.daemon.lead import STANDBY_RETRY, Lead
from sidecar.daemon.plugins import PluginRunner
from sidecar.followups.fire import FollowUps
from sidecar.followups.globalhooks import Copies
from sidecar.followups.queue import FollowUpQueue
from sidecar.followups.run import environment as followup_env
from sidecar.followups.store import HookStore
from sidecar.layout import Workspace
from sidecar.procwatch import Proc
from sidecar.sessions.model import Key
from sidecar.sessions.store import SessionStore
from sidecar.telemetry.feed import Feed
from sidecar.vocabulary import Fired, SessionChange

BEAT_MIN = 1.0  # seconds between instance-file writes while what they report keeps changing
HOST_LOOK = 2.0  # seconds between a stand-by's looks for the hosts on its own machine
# Seconds a host's exit waits before it ends its sessions: a hook it left running delivers
# the host's own end meanwhile (Claude Code 2.1.332's SessionEnd arrives ~50 ms after it exits).
HOST_EXIT_GRACE = 1.0


class WorkspaceServer:
    """One workspace, served by this instance: stand-by or leader."""

    def __init__(self, ws: Workspace, config: Callable[[], Config], identity: Identity,
                 plugins: PluginRunner | None = None, stopping: Callable[[], bool] = lambda: False,
                 watch: Callable[[Proc, WorkspaceServer], None] | None = None,
                 watch_reliable: bool = False, fresh: Callable[[], Config] | None = None,
                 read: Callable[[], SettingsRead | None] = lambda: None,
                 telemetry: Feed | None = None) -> None:
        self.ws = ws
        self.log = WorkspaceLog(ws.root)  # its lines begin with the root
        self.config = config
        # The settings read again first where their files changed (daemon/settings.py): what
        # a follow-up about to fire runs with.
        self.fresh_config = fresh or config
        self.identity = identity
        self.plugins = plugins
        self.telemetry = telemetry  # OpenTelemetry export, where configured (telemetry/)
        self.coordination = coordination.get()
        self.lead = Lead(ws, identity, self.coordination, self.log, self._take_over,
                         self._stop_writing, lambda: self.wake())
        self.sessions = SessionStore(ws)
        self.hook_store = HookStore(ws)
        self.queue = FollowUpQueue(self.hook_store, identity.id)
        self.global_hooks = Copies(self.hook_store, self.log)  # the owner's, as copies
        self.ingest = Ingestor(self.sessions, self.queue, config, self._report, stopping, watch_reliable)
        self.followups: FollowUps | None = None
        self.environment = followup_env.Reporter(ws, config, read)
        self.watch = watch  # the process watch: tells `notice_host_exit` when a host is gone
        # The live sessions' host processes, those whose pids mean something here
        self.hosts = HostWatch(self._watch_process, process_space(),
                               unknown_is_ours=self.coordination.implements.every_host_by_pid,
                               grace=HOST_EXIT_GRACE)
        # The live sessions of hosts that write their end down themselves (hostends.py)
        self.recorded = RecordedEnds(ws, self._live_sessions, lambda: config().sweep_interval)
        self.wake: Callable[[], None] = lambda: None  # the loop's: step this workspace now
        self.inbox_arrival = threading.Event()  # an event file arrived (the folder watch)
        self.next_beat = 0.0
        self.beaten = 0.0  # when the instance file was last written
        self.beat_now = False  # the settings were read again: say so at the next step
        self.reported: Reportable | None = None  # what it said then
        self.set_aside_for: str | None = None  # why the workspace is set aside, while it is
        self.clock = StepDetector()  # fed by the loop's step with both clocks' times
        self.next_host_look = 0.0  # a stand-by's next look for hosts on its machine

    # -- what the watches call -------------------------------------------------------------

    def notice_arrival(self) -> None:
        self.inbox_arrival.set()
        self.wake()

    def notice_hooks_change(self) -> None:
        self.wake()

    def notice_settings_change(self) -> None:
        self.beat_now = True
        self.wake()

    def notice_host_exit(self, proc: Proc) -> None:
        self.hosts.exited(proc)
        self.wake()

    # -- the step ----------------------------------------------------------------------------

    def open(self) -> None:
        self.ws.ensure_runtime()
        self.lead.join()

    def step(self, now: float) -> float:
        """Do what is due; when to step again. TamperedRuntime, nothing done: a linked runtime."""
        self.ws.check_runtime()
        leading = self.lead.step(now)
        self.set_aside_for = None  # served again: a new reason to set it aside is said anew
        if not leading:
            if not self.coordination.implements.every_host_by_pid:
                self._watch_hosts_here(now)
            return min(now + STANDBY_RETRY, self._beat_if_due(now))
        try:
            with safedir.holding(self.ws.runtime):  # a step opens dozens of files below it
                return self._lead(now)
        except (LeaseLost, Unreachable, Conflict) as exc:
            self.lead.step_down(str(exc))
            return min(now + STANDBY_RETRY, self._beat_if_due(now))

    def _lead(self, now: float) -> float:
        arrived = self.inbox_arrival.is_set()
        if arrived:
            self.inbox_arrival.clear()  # before listing: an arrival from now on is not lost
        self._take_up_global_hooks(now)  # before the batch: a hook just added hears it
        self._end_exited_hosts(now)
        self._end_recorded(now)
        deadline = min(self.ingest.step(now, arrived), self.recorded.due())
        exit_due = self.hosts.due_in()
        if exit_due is not None:  # an exit waits out its grace: step again when it is over
            deadline = min(deadline, now + exit_due)
        if self.followups is not None:
            due = self.followups.step(now)
            if due is not None:
                deadline = min(deadline, due)
        return min(deadline, self._beat_if_due(now))

    def _take_up_global_hooks(self, now: float) -> None:
        """The owner's global hooks, as this workspace's copies. What stops it (a full disk,
        a lock held too long) is said once and tried again at the next step; the step goes on
        (the batch is the workspace's own business), but for a runtime deleted or linked,
        which sets the workspace aside (setaside.py)."""
        try:
            self.global_hooks.step(now)
        except (LeaseLost, Unreachable, Conflict):
            raise  # not the copies' failure: this instance must stop leading
        except (SidecarError, OSError) as exc:
            self.ws.check_runtime()
            if not all(os.path.lexists(folder) for folder in self.ws.private_dirs()):
                raise
            if str(exc) != self.global_hooks.failed:
                self.log.warning("the global hooks cannot be taken up now: %s", exc)
            self.global_hooks.failed = str(exc)
        else:
            self.global_hooks.failed = None

    def clock_stepped(self, jump: float, now: float) -> None:
        """Every timer keeps the time it had left, and a waiting follow-up the delay it had
        left (a stand-by's queue is its leader's to move)."""
        self.log.info("the wall clock was stepped by %+.0fs; timers and due times follow", jump)
        self.next_beat += jump
        self.beaten += jump
        self.next_host_look += jump
        self.ingest.clock_stepped(jump)
        if self.followups is None:
            return
        self.followups.clock_stepped(jump)
        try:
            self.queue.shift_due(jump, now)
        except (SidecarError, OSError) as exc:
            self.ingest.health.error(self.ws.root, f"cannot move the follow-ups' due times by "
                                     f"the clock's step of {jump:+.0f}s: {exc}")

    def _take_over(self, now: float) -> None:
        """The lead was just taken: what this instance writes from now on is a leader's."""
        leadership = self.lead.leadership
        # Every write a leader makes is checked against its lead first (fencing), and its
        # claims are named for its term: a claim of an earlier term is another's, settled
        # by whoever leads now (a file lead cannot be lost while the process lives).
        self.sessions.fence = self.hook_store.fence = leadership.check
        if self.coordination.records(self.ws) is not None:
            self.hook_store.state = None  # read again from the record: others led meanwhile
        self.queue.instance_id = leadership.term or self.identity.id
        self.heartbeat(now)  # (a leader's beat clears the files of dead instances)
        self.hook_store.seed(now)
        self.followups = FollowUps(
            self.ws, self.queue, self.sessions, self.config, leadership.claim_lives,
            self._watch_process, self._fired, self.coordination, self.fresh_config)
        live = self.sessions.live_hosts()
        for key, pid, start, space in live:  # a host may have died meanwhile
            if self.hosts.watchable(space):
                self.hosts.follow(Proc(pid, start), key)
        self.recorded.begin([key for key, _, _, _ in live], now)
        self.ingest.start(now)

    def _stop_writing(self) -> None:
        """The lead is being given up: write nothing more. Running actions run on, detached,
        for the next leader to adopt (this instance too, if it leads again)."""
        if self.followups is not None:
            self.followups.stopping = True
        self.followups = None
        self.sessions.fence, self.hook_store.fence = self.sessions.no_lead, self.hook_store.no_lead

    # -- host processes ----------------------------------------------------------------------

    def _watch_process(self, proc: Proc) -> None:
        """An action's or a host's process: its exit wakes the loop (`notice_host_exit`), which
        records an action's outcome, and ends the sessions of a host (one the host watch holds)."""
        if self.watch is not None:
            self.watch(proc, self)

    def _watch_hosts_here(self, now: float) -> None:
        """A stand-by, where other machines serve the workspace too: the hosts that run on
        this machine are watched here, the one place where their pids mean something, and an
        exit is reported through the inbox for the leader to apply (wherever it runs)."""
        if now >= self.next_host_look:
            self.next_host_look = now + HOST_LOOK
            try:
                live = self.sessions.live_hosts()
            except (SidecarError, OSError):
                return  # looked at again at the next turn
            self.hosts.only({key: Proc(pid, start) for key, pid, start, space in live
                             if space is not None and space == self.hosts.space})
        self._end_exited_hosts(now)

    def _end_exited_hosts(self, now: float) -> None:
        """Report each session of a host that is gone as ended, through the inbox, so that its
        completion, follow-ups and plugin calls are those of any end (and a replay is safe)."""
        for proc, keys in self.hosts.ended():
            for host, session_id in keys:
                self.log.info("the host process %d of %s session %s is gone", proc.pid, host, session_id)
                event = {"event": "session-end", "session_id": session_id, "host": host,
                         "reason": HOST_EXITED, "ts": now, "hostPid": proc.pid,
                         "hostStart": proc.start, "hostSpace": self.hosts.space}
                emit.drop(str(self.ws.root), orjson.dumps(event))
                self.inbox_arrival.set()

    def _end_recorded(self, now: float) -> None:
        """Report each session its host's own record says has ended, through the inbox."""
        for (host, session_id), end in self.recorded.ended(now):
            self.log.info("%s records session %s as %s", host, session_id, end.reason)
            try:
                emit.drop(str(self.ws.root), orjson.dumps(end_event(host, session_id, end, now)))
            except (SidecarError, OSError) as exc:
                self.log.warning("the end of %s session %s cannot be reported: %s", host, session_id, exc)
                continue  # the next round finds it again
            self.inbox_arrival.set()

    def _live_sessions(self) -> list[Key]:
        try:
            with self.sessions.locked():
                return [key for key, _ in self.sessions.load_bindings().items()]
        except (SidecarError, OSError) as exc:  # StoreError, LockTimeout, Unreachable
            self.log.warning("the live sessions cannot be listed: %s", exc)
            return []

    def _beat_if_due(self, now: float) -> float:
        """Rewrite the instance file when what it reports changed (at most once a second) or
        `heartbeatInterval` passed; returns when to look again. Liveness is the life lock's,
        so an idle workspace costs one write a heartbeatInterval."""
        changed = self._reportable() != self.reported
        if now >= self.next_beat or self.beat_now or (changed and now >= self.beaten + BEAT_MIN):
            self.beat_now = False  # before the beat: a read during it is said at the next
            self.heartbeat(now)
            changed = False
        return self.beaten + BEAT_MIN if changed else self.next_beat

    def _reportable(self) -> Reportable:
        health = self.ingest.health
        state = self.hook_store.state
        return Reportable(self.lead.role, health.counters(),
                          health.last_error, state.error if state is not None else None,
                          self.plugins.counters() if self.plugins is not None else {},
                          self.environment.current(), self.lead.trouble,
                          self.telemetry.report() if self.telemetry is not None else None)

    def heartbeat(self, now: float) -> None:
        self.reported = self._reportable()
        self.lead.beat(self.reported)
        self.beaten = now
        self.next_beat = now + self.config().heartbeat_interval

    def set_aside(self, exc: BaseException | str, let_go: bool = False) -> None:
        """The workspace cannot be served safely now: said once, counted, retried. `let_go`:
        its lead too, without a word (its lock files were deleted: it is taken on new ones)."""
        if let_go and self.lead.leading:
            self.lead.step_down("")
        if self.set_aside_for != str(exc):
            self.set_aside_for = str(exc)
            self.ingest.health.error(self.ws.root, f"set aside: {exc}")

    def unexpected(self, exc: BaseException) -> None:
        """A bug or a surprise in a step: logged and counted; the loop goes on."""
        self.log.error("unexpected error; retrying in a second", exc_info=exc)
        self.ingest.health.error(self.ws.root, f"unexpected error: {exc}")

    def close(self) -> None:
        """Hand the workspace over at once. Running actions are not waited for, killed or
        repeated: they run detached, and the next leader adopts them."""
        if self.followups is not None:
            self.followups.stopping = True
        self.lead.close()

    # -- plugins ---------------------------------------------------------------------------

    def _report(self, changes: list[SessionChange]) -> None:
        self.hosts.note(changes)
        self.recorded.note(changes)
        if self.plugins is not None:
            self.plugins.session_changes(str(self.ws.root), changes)
        if self.telemetry is not None:  # appended only: never waits for the collector
            self.telemetry.session_changes(str(self.ws.root), changes)

    def _fired(self, fired: Fired) -> None:
        if self.plugins is not None:
            self.plugins.hook_fired(fired)
        if self.telemetry is not None:
            self.telemetry.hook_fired(fired)
