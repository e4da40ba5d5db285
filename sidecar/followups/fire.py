"""Firing one workspace's due follow-ups, as a loop step: `step(now) -> next deadline`.

Each step takes over what other instances left (recovery), sees which running actions ended
and records their outcome, enforces `actionTimeout`, asks the scheduler what is due, claims
it, gathers the session's facts and acts on the verdict. An action is started detached
(`sidecar.runner`, a session of its own) and its process is written into the queue entry at
once, so it never depends on this instance: when this instance stops, the next leader adopts
it and records its real outcome. Nothing here waits for an agent.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import orjson

from sidecar import jsonfile, owner, safedir
from sidecar.base import outcome, timeutil
from sidecar.base.errors import SidecarError
from sidecar.base.outcome import Outcome
from sidecar.base.timeutil import iso, parse_ts
from sidecar.base.wslog import WorkspaceLog
from sidecar.config import Config, ConfigError
from sidecar.coordination import current as coordination
from sidecar.coordination.base import Coordination, LeaseLost, Unreachable
from sidecar.followups import budgethold, prompts, trust
from sidecar.followups.decide import decide, next_due
from sidecar.followups.model import FOLLOW_UP_EVENTS, Hook, QueueEntry, Run
from sidecar.followups.notify import notices
from sidecar.followups.notify.targets import Notify
from sidecar.followups.queue import Claimed, FollowUpQueue, Settled
from sidecar.followups.room import Room
from sidecar.followups.run import actions, environment, logtail, remote
from sidecar.followups.run.actions import ActionError, Firing, build_argv, working_folder
from sidecar.layout import Workspace, confined
from sidecar.procwatch import Proc, is_alive
from sidecar.sessions.store import SessionStore
from sidecar.vocabulary import EventKind, Fired, FollowUpEvent, Verdict

RECOVERY_INTERVAL = 30.0  # how often claims left by other instances are looked for
NOTICE_CONCURRENCY = 8  # notices sent at once: apart from `concurrency`, which is the agents'
SENDER = [sys.executable, "-I", "-m", "sidecar.followups.notify.send"]  # -I: nothing of the cwd's
REMOTE_POLL = 0.5  # how often an action that may run on another machine is looked at
WAIT_POLL = 0.01  # `fire_now`'s look at a running action, where nothing else wakes it


@dataclass
class Running:
    """An action this instance holds the claim of, running detached."""

    entry: QueueEntry
    proc: Proc
    log: Path
    deadline: float  # when actionTimeout runs out
    kill_at: float | None = None  # once timed out: when SIGKILL follows the SIGTERM
    # Adopted where its process cannot be watched (another machine may run it): its runner's
    # lease in the coordination service says whether it runs; it is never signalled.
    remote: bool = False

    @property
    def notice(self) -> bool:
        return bool(notices.notice_of(self.entry))


class FollowUps:
    """Fires one workspace's due follow-up hooks while this instance leads it."""

    def __init__(self, ws: Workspace, queue: FollowUpQueue, sessions: SessionStore,
                 config: Callable[[], Config], is_alive_instance: Callable[[str], bool],
                 watch: Callable[[Proc], None] = lambda proc: None,
                 on_fired: Callable[[Fired], None] | None = None,
                 coord: Coordination | None = None, fresh: Callable[[], Config] | None = None) -> None:
        self.ws = ws
        self.log = WorkspaceLog(ws.root)  # its lines begin with the root
        self.coordination = coord or coordination.get()
        self.queue = queue
        self.sessions = sessions
        self.config = config
        self.fresh = fresh or config  # a firing's: read again if the files changed (settings.py)
        self.is_alive_instance = is_alive_instance
        self.watch = watch  # makes the loop step when an action's process exits
        self.on_fired = on_fired
        self.running: dict[str, Running] = {}
        self.next_recovery = 0.0
        self.recover_soon = False  # a claim could not be settled yet (its runner's lease)
        self.absences = remote.Absences()  # since when adopted runners' leases are missing
        self.stopping = False
        self.room = Room(ws)  # a disk without room: nothing claimed, claims given back

    # -- the step ----------------------------------------------------------------------

    def step(self, now: float) -> float | None:
        """Do what is due; returns when to step again (None: only when woken)."""
        if self.stopping:
            return None
        if now >= self.next_recovery:
            self.recover_soon = False
            for entry in self.recover(now):
                self.adopt(entry, now)
            self.next_recovery = now + (REMOTE_POLL if self.recover_soon else RECOVERY_INTERVAL)
        self.check_running(now)
        self.room.retry(self.queue, now)
        while True:
            pending = self.queue.view(now).pending
            # An action's or a notice's exit wakes the loop when either kind is at its limit;
            # a notice waits for neither a resume nor a command, nor they for a notice.
            sent = sum(run.notice for run in self.running.values())
            full = (len(self.running) - sent >= self.config().concurrency, sent >= NOTICE_CONCURRENCY)
            due = next_due([e for e in pending if not full[bool(notices.notice_of(e))]],
                           set(self.running), now)
            if due.entry is None:
                return _earliest(due.wake_at, self._recovery_due(pending), *self._deadlines())
            if self.room.lacks(now):  # looked at again soon; space freed wakes nothing
                return _earliest(self.room.until, self._recovery_due(pending), *self._deadlines())
            claimed = self.room.claim(self.queue, due.entry.id, now, str(self.log_path(due.entry, now)))
            if claimed is not None:
                self.start(claimed, now)

    def recover(self, now: float) -> list[QueueEntry]:
        """Take over the firings other instances left (the queue's `recover`); returns those
        to adopt. A claim whose instance died before recording its action's start is settled
        first, here, outside the queue's lock: its runner started and runs on (adopted), or
        it ended, or now never will start (its outcome recorded, once)."""
        settled: dict[str, Settled] = {}
        pending = self.queue.view(now).pending  # read once; `recover` edits under the lock
        unsettled = self.queue.unsettled(self.is_alive_instance, now, pending)
        runs_as = owner.runs_as(self.ws) if unsettled else 0
        for entry in unsettled:
            log_path = self.ws.firing_log(entry.hook_id, entry.log or "")
            assert log_path is not None  # `unsettled` holds only claims with a log
            try:
                proc = (actions.settle_start(log_path, runs_as)  # started, or never will
                        if self.coordination.implements.every_runner_by_pid
                        else remote.settle(self.coordination, self.ws, log_path, entry.id,
                                           self.absences, runs_as))
            except SidecarError:  # its lease cannot be told yet: the next recovery settles it
                self.recover_soon = True
                continue
            ended = None if proc else Outcome.parse(actions.outcome(log_path))
            settled[entry.id] = Settled(proc, ended, entry.log)
        return self.queue.recover(self.is_alive_instance, now, settled, pending)

    def clock_stepped(self, jump: float) -> None:
        """The wall clock was stepped by `jump` seconds: a running action's actionTimeout and
        the next look for left claims keep the time they had left (durations are monotonic)."""
        self.next_recovery += jump
        for run in self.running.values():
            run.deadline += jump
            if run.kill_at is not None:
                run.kill_at += jump

    def _recovery_due(self, pending: list[QueueEntry]) -> float | None:
        """When to look for claims other instances left; None while there are none (a new
        claim changes hooks.json, which wakes the loop)."""
        mine = self.queue.instance_id
        others = any(e.claimed_by and e.claimed_by != mine for e in pending)
        return self.next_recovery if others else None

    def _deadlines(self) -> list[float]:
        times = [r.kill_at if r.kill_at is not None else r.deadline for r in self.running.values()
                 if not r.remote]
        if any(r.remote for r in self.running.values()):
            times.append(timeutil.now() + REMOTE_POLL)  # (its runner's end also wakes the loop)
        return times

    def start(self, claimed: Claimed, now: float) -> None:
        """Decide, then start the action (or postpone, or skip, at once)."""
        entry, hook = claimed.entry, claimed.hook
        try:
            config = self._firing_config() if hook.action == "resume" else None
            refusal = actions.resume_refusal(entry.host, config.resume) if config else None
            if refusal is not None:  # before any postponement: waiting would change nothing
                self.finish(entry, outcome.skipped(refusal), None, now)
                return
            facts = self.sessions.facts(entry.harness_session_id, (entry.host, entry.session_id))
            decision = decide(hook, facts, now, config is None or config.host_resume)
            if decision.verdict == Verdict.FIRE and config is not None:  # a resume: over budget?
                decision = budgethold.decide(self, entry, config.budget, now)
            if decision.verdict == Verdict.POSTPONE:
                self.queue.postpone(entry.id, decision.reason, now)
                return
            if decision.verdict == Verdict.SKIP:
                self.finish(entry, outcome.skipped(decision.reason), None, now)
                return
            if self.stopping:
                self.queue.release(entry.id, now)  # claimed as we were stopping: leave it
                return
            self.launch(entry, hook, facts.cwd, now)
        except (LeaseLost, Unreachable):
            raise  # not this firing's failure: this instance must stop leading (workspace.py)
        except Exception as exc:
            if self.room.refused(exc, now):  # not started: it fires once there is room
                self.room.give_back(self.queue, entry.id, now)
                return
            self.log.exception("firing %s failed", entry.id)
            self.finish(entry, outcome.error(exc), None, now)

    def fire_now(self, claimed: Claimed, now: float) -> None:
        """Fire a claimed entry and wait for its outcome on this thread (for tests and tools)."""
        self.start(claimed, now)
        while claimed.entry.id in self.running:
            time.sleep(WAIT_POLL)
            self.check_running(now)  # the caller's clock: no timeout while it waits

    def _firing_config(self) -> Config | None:
        """The config a firing would run with (the owner's, for a root daemon): its resume
        commands and budgets; None where it cannot be read: launching says so."""
        try:
            account = owner.foreign_owner(self.ws)
            return self.fresh() if account is None else owner.owner_config(account)
        except (owner.CannotActAsOwner, ConfigError):
            return None

    # -- running actions ---------------------------------------------------------------

    def launch(self, entry: QueueEntry, hook: Hook, cwd: str | None, now: float) -> None:
        """Start the hook's action detached and record it; an error status if it cannot start.

        It runs only if the workspace's owner trusted exactly what it does now (trust.py):
        the prompt is read once, and the bytes trusted are the bytes sent. Where the owner is
        not this process's user, it runs as the owner (owner.py)."""
        try:
            account = owner.foreign_owner(self.ws)
            config = self.fresh() if account is None else owner.owner_config(account)
        except (owner.CannotActAsOwner, ConfigError) as exc:
            self.finish(entry, outcome.error(exc), None, now)
            return
        try:
            found = trust.content(self.ws, hook)
        except (OSError, prompts.PromptError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            self.finish(entry, outcome.error(f"prompt file {hook.prompt_file}: {why}"), None, now)
            return
        if not trust.is_trusted(self.ws, found):
            self.log.warning("hook %s (%s) is not trusted on this machine as it stands; not "
                             "run (sidecar hooks trust %s)", hook.id,
                             trust.described(hook), hook.id)
            self.finish(entry, trust.NOT_TRUSTED, None, now)
            return
        prompt = "" if found.prompt is None else prompts.text_of(found.prompt)
        log_path = self.ws.firing_log(entry.hook_id, entry.log or "") or self.log_path(entry, now)
        firing = Firing(hook_id=hook.id, host=entry.host, session_id=entry.session_id,
                        harness_session_id=entry.harness_session_id or "", prompt=prompt,
                        prompt_file=None, cwd=working_folder(self.ws, cwd),
                        options=config.options)
        base = environment.follow_up_base(account, config)
        try:
            if found.prompt is not None:  # a command's or a [resume] template's `{prompt_file}`
                firing.prompt_file = approved_copy(log_path, prompt)
            command = self._notice(entry, hook.action, config) \
                if isinstance(hook.action, Notify) \
                else build_argv(hook.action, firing, config.resume, self.ws)
            trust.run_key()  # made before the start: a run is never left unsigned, unwatched
            lease = self.coordination.run_lease(self.ws, entry.id)  # the runner's alone
            proc = actions.start(command.argv, firing.cwd, firing.environment(self.ws, base),
                                 log_path, account, command.stdin, lease)
        except ActionError as exc:
            if self.room.lacks(now):  # no room for its log or its input: it waits
                self.room.give_back(self.queue, entry.id, now)
                return
            ended = outcome.skipped(exc) if isinstance(exc, actions.CannotResume) else outcome.error(exc)
            self.finish(entry, ended, log_path if log_path.exists() else None, now)
            return
        # The one ambiguous window: between the claim and this write, a death of this instance
        # leaves a firing nobody can tell ran or not (recorded `error: interrupted`).
        run = trust.sign(self.ws, entry.id, Run(proc.pid, proc.start, str(log_path), iso(now)))
        # Without room to record it, it runs all the same: watched from here, never given back.
        self.room.written(now, self.queue.started, entry.id, run, now)
        self.running[entry.id] = Running(replace(entry, run=run), proc, log_path,  # (its start: Fired)
                                         now + self.config().action_timeout)
        self.watch(proc)
        if hook.action == "resume" and hook.event == EventKind.TURN_FAILED:
            self._follow_up_event(FollowUpEvent.RESUME_STARTED, entry, "started", now)
        self.log.info("fired %s for %s session %s (pid %d, log %s)", hook.id,
                      entry.host, entry.session_id, proc.pid, log_path)

    def _notice(self, entry: QueueEntry, action: Notify, config: Config) -> actions.Command:
        """The sender of a notify hook's notice, and its job: the target, what the queue
        entry kept of the transition, and what the session's record says now (the last
        assistant message too, for a notice of what a follow-up did: it kept none); and the
        config's staleAfter, which a stale end's words name."""
        notice = notices.notice_of(entry)
        job: dict[str, object] = {
            "target": action.target, "notice": notice, "host": entry.host,
            "sessionId": entry.session_id, "harnessSessionId": entry.harness_session_id,
            "hookId": entry.hook_id, "workspace": str(self.ws.root),
            "staleAfter": config.stale_after}
        record = self.sessions.record(entry.harness_session_id)
        if record is not None and record.sidecar.tokens:
            job["tokens"] = record.sidecar.tokens
        last = notice.get("lastMessage")
        if notice.get("event") in FOLLOW_UP_EVENTS and record is not None:
            last = record.sidecar.last_message
        if last:
            job["lastMessage"] = last
        return actions.Command(SENDER, orjson.dumps(job).decode())

    def _follow_up_event(self, event: FollowUpEvent, entry: QueueEntry, reason: str, now: float) -> None:
        """Queue the notices of what a follow-up did (`reason`: an outcome's text, `started`);
        never those of a notice about a follow-up (a notice that fails to say a notice failed
        would go on for ever)."""
        if notices.notice_of(entry).get("event") in FOLLOW_UP_EVENTS:
            return
        try:
            self.queue.add_follow_up_event(event, entry, entry.hook_id, reason, now)
        except (SidecarError, OSError) as exc:
            self.log.warning("the notice that %s %s cannot be queued: %s", entry.hook_id, event.value, exc)

    def log_path(self, entry: QueueEntry, now: float) -> Path:
        stamp = iso(now).replace(":", "").replace("-", "")
        session = "".join(c if c.isalnum() or c in "._:-" else "_" for c in entry.session_id)
        return self.ws.logs / "hooks" / confined(entry.hook_id) / f"{stamp}-{session[:100]}.log"

    def adopt(self, entry: QueueEntry, now: float) -> None:
        """Take over an action another instance started: wait for it, and time it out.

        Its actionTimeout counts from the start it recorded, by the wall clock, and never
        from a start in the future (a clock stepped back since): at most a full actionTimeout
        from now. A step this instance did not see is not undone."""
        assert entry.run is not None  # its MAC checked by the queue's recovery
        started = min(parse_ts(entry.run.started_at) or now, now)
        proc = Proc(entry.run.pid, entry.run.start)
        log_path = self.ws.firing_log(entry.hook_id, entry.run.log) or self.log_path(entry, now)
        # Judged by its lease where another machine may run it; a runner that started in this
        # process space is watched by its pid, as on one machine (its lease aside).
        elsewhere = not self.coordination.implements.every_runner_by_pid and not remote.runs_here(log_path)
        self.running[entry.id] = Running(entry, proc, log_path,
                                         started + self.config().action_timeout, remote=elsewhere)
        if not elsewhere:
            self.watch(proc)

    def check_running(self, now: float) -> None:
        """Record the outcome of every action that ended; time out those past their limit."""
        for key, run in list(self.running.items()):
            if run.remote:
                self._check_remote(key, run, now)
                continue
            actions.reap(run.proc.pid)  # our own child: collect it, so it reads as gone
            if not is_alive(run.proc):
                ended = (outcome.error(f"timed out after {self.config().action_timeout:g}s")
                         if run.kill_at is not None else Outcome.parse(actions.outcome(run.log)))
                del self.running[key]  # after the outcome is read: a tampered `logs` retries
                if not self.room.written(now, self.finish, run.entry, ended, run.log, now):
                    self.running[key] = run  # its outcome is recorded once there is room
            elif run.kill_at is None and now >= run.deadline:
                self.log.warning("%s ran past actionTimeout; stopping it", key)
                actions.signal_group(run.proc, signal.SIGTERM)
                run.kill_at = now + actions.KILL_GRACE
            elif run.kill_at is not None and now >= run.kill_at:
                actions.signal_group(run.proc, signal.SIGKILL)

    def _check_remote(self, key: str, run: Running, now: float) -> None:
        said = remote.outcome(self.coordination, self.ws, run.log, run.entry.id,
                              self.absences, owner.runs_as(self.ws))
        if said is not None:
            del self.running[key]
            self.finish(run.entry, Outcome.parse(said), run.log, now)
        elif run.kill_at is None and now >= run.deadline:
            run.kill_at = now  # said once: its process may be another machine's, never signalled
            self.log.warning("%s ran past actionTimeout; it runs where this instance cannot stop "
                             "it (sidecar hooks kill-running on its machine)", key)

    def finish(self, entry: QueueEntry, ended: Outcome, log_path: Path | None, now: float) -> None:
        shown = str(log_path) if log_path else None
        line = logtail.last_line(self.ws, entry.hook_id, shown) if ended.failed else None
        if not self.queue.finish(entry, ended, shown, now, line):
            return  # another instance holds the claim now: it records the outcome
        if not ended.ok and (not ended.skipped or ended == trust.NOT_TRUSTED):
            self.log.warning("follow-up %s for %s session %s: %s (log %s)", entry.hook_id,
                             entry.host, entry.session_id, ended, shown)
            self._follow_up_event(FollowUpEvent.FAILED, entry, str(ended), now)
        if self.on_fired is not None:
            self.on_fired(Fired(str(self.ws.root), entry.hook_id, entry.host, entry.session_id,
                                entry.harness_session_id, str(ended), shown,
                                entry.run.started_at if entry.run is not None else "", now))


def approved_copy(log_path: Path, prompt: str) -> str:
    """The approved prompt's text (as `hooks trust` showed it, and as `{prompt}` gives it: no
    frontmatter) in a file beside the firing's log, for `{prompt_file}`: the command reads
    what was trusted, whatever the workspace's file says by then (made like the log: never
    through a link, the folder owner's, private)."""
    name = log_path.with_suffix(".prompt.md").name
    try:
        with safedir.opened(log_path.parent, create=True) as folder:
            jsonfile.replace_in(folder, name, prompt.encode(), durable=False)
    except OSError as exc:
        raise ActionError(f"cannot write the approved prompt beside {log_path}: "
                          f"{exc.strerror or exc}") from None
    return str(log_path.parent / name)


def _earliest(*times: float | None) -> float | None:
    known = [t for t in times if t is not None]
    return min(known) if known else None
