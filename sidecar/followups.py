"""Firing one workspace's due follow-ups, as a loop step: `step(now) -> next deadline`.

Each step recovers claims of dead instances now and then, asks the scheduler what is due,
claims it in the queue, gathers the session's facts, and acts on the scheduler's verdict.
An action's process is started on the caller's thread (a millisecond) and waited for on a
worker thread of its own, so the loop never waits for an agent.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from . import hooks as hooks_mod
from .actions import ActionError, Firing, RunningAction, build_argv, working_folder
from .config import Config
from .hookdoc import Hook, QueueEntry
from .hookqueue import Claimed, FollowUpQueue
from .kinds import Fired, Verdict
from .layout import Workspace
from .scheduler import Facts, decide, next_due
from .sessions import SessionFacts, SessionStore
from .timeutil import iso

log = logging.getLogger("sidecar")

RECOVERY_INTERVAL = 30.0  # how often claims of dead instances are looked for


class FollowUps:
    """Fires one workspace's due follow-up hooks while this instance leads it."""

    def __init__(self, ws: Workspace, queue: FollowUpQueue, sessions: SessionStore,
                 config: Callable[[], Config], is_alive: Callable[[str], bool],
                 wake: Callable[[], None] = lambda: None,
                 on_fired: Callable[[Fired], None] | None = None) -> None:
        self.ws = ws
        self.queue = queue
        self.sessions = sessions
        self.config = config
        self.is_alive = is_alive
        self.wake = wake  # called when a worker finishes: a slot is free again
        self.on_fired = on_fired
        self.lock = threading.Lock()
        self.running: dict[str, RunningAction | None] = {}
        self.workers: list[threading.Thread] = []
        self.next_recovery = 0.0
        self.stopping = False

    # -- the step ----------------------------------------------------------------------

    def step(self, now: float) -> float | None:
        """Fire what is due; returns when to step again (None: only when woken)."""
        if self.stopping:
            return None
        if now >= self.next_recovery:
            self.queue.recover(self.is_alive, now)
            self.next_recovery = now + RECOVERY_INTERVAL
        while True:
            with self.lock:
                busy = set(self.running)
            due = next_due(self.queue.view(now).pending, busy, now)
            if due.entry is None:
                return _earliest(due.wake_at, self.next_recovery)
            if len(busy) >= self.config().concurrency:
                return self.next_recovery  # every slot is busy: a finishing action wakes us
            claimed = self.queue.claim(due.entry.id, now)
            if claimed is not None:
                self.start(claimed, now)

    def start(self, claimed: Claimed, now: float, wait: bool = False) -> None:
        """Decide, then fire on a worker thread, or on this one if `wait` (or postpone, or
        skip, at once)."""
        entry, hook = claimed.entry, claimed.hook
        try:
            session = self.sessions.facts(entry.harness_session_id, (entry.host, entry.session_id))
            decision = decide(hook, transcript_facts(session), now)
            if decision.verdict == Verdict.POSTPONE:
                self.queue.postpone(entry.id, decision.reason, now)
                return
            if decision.verdict == Verdict.SKIP:
                self.finish(entry, f"skipped: {decision.reason}", None)
                return
            if self.stopping:
                self.queue.release(entry.id, now)  # claimed as we were stopping: leave it
                return
            status, action, log_path = self.launch(entry, hook, session.cwd)
        except Exception as exc:
            log.exception("%s: firing %s failed", self.ws.root, entry.id)
            self.finish(entry, f"error: {exc}", None)
            return
        if action is None:
            self.finish(entry, status, log_path)
            return
        with self.lock:
            self.running[entry.id] = action
        if wait:
            self._wait(entry, action, log_path)
            return
        worker = threading.Thread(target=self._wait, args=(entry, action, log_path),
                                  daemon=True, name=f"hook:{entry.id}")
        self.workers.append(worker)
        worker.start()

    def fire_now(self, claimed: Claimed, now: float) -> None:
        """Fire a claimed entry and wait for its outcome on this thread (for tests and tools)."""
        self.start(claimed, now, wait=True)

    # -- running an action -------------------------------------------------------------

    def launch(self, entry: QueueEntry, hook: Hook,
               cwd: str | None) -> tuple[str, RunningAction | None, Path | None]:
        """Start the hook's action; an error status if it cannot start."""
        prompt = ""
        if hook.prompt_file:
            try:
                prompt = hooks_mod.read_prompt(self.ws, hook.prompt_file)
            except OSError as exc:
                return f"error: prompt file {hook.prompt_file}: {exc.strerror or exc}", None, None
        firing = Firing(hook_id=hook.id, host=entry.host, session_id=entry.session_id,
                        harness_session_id=entry.harness_session_id or "", prompt=prompt,
                        prompt_file=hook.prompt_file, cwd=working_folder(self.ws, cwd))
        try:
            argv = build_argv(hook.action, firing, self.config().resume, self.ws)
        except ActionError as exc:
            return f"error: {exc}", None, None
        stamp = iso(time.time()).replace(":", "").replace("-", "")
        log_path = self.ws.logs / "hooks" / hook.id / f"{stamp}-{entry.session_id}.log"
        try:
            action = RunningAction(argv, firing.cwd, firing.environment(self.ws), log_path)
        except ActionError as exc:
            return f"error: {exc}", None, log_path
        log.info("%s: fired %s for %s session %s (log %s)", self.ws.root, hook.id, entry.host,
                 entry.session_id, log_path)
        return "", action, log_path

    def _wait(self, entry: QueueEntry, action: RunningAction, log_path: Path | None) -> None:
        try:
            status = action.wait(self.config().action_timeout)
            self.finish(entry, status, log_path)
        except Exception:
            log.exception("%s: recording firing %s failed", self.ws.root, entry.id)
        finally:
            with self.lock:
                self.running.pop(entry.id, None)
            try:
                self.workers.remove(threading.current_thread())
            except ValueError:
                pass
            self.wake()

    def finish(self, entry: QueueEntry, status: str, log_path: Path | None) -> None:
        shown = str(log_path) if log_path else None
        self.queue.finish(entry, status, shown, time.time())
        if self.on_fired is not None:
            self.on_fired(Fired(str(self.ws.root), entry.hook_id, entry.host, entry.session_id,
                                entry.harness_session_id, status, shown))

    # -- stopping ----------------------------------------------------------------------

    def stop(self, grace: float) -> None:
        """Claim nothing more; give running actions `grace` seconds, then interrupt them."""
        self.stopping = True
        deadline = time.monotonic() + grace
        for worker in list(self.workers):
            worker.join(max(0.0, deadline - time.monotonic()))
        with self.lock:
            running = [r for r in self.running.values() if r is not None]
        for action in running:
            action.interrupt()
        for worker in list(self.workers):
            worker.join(10)


def transcript_facts(session: SessionFacts) -> Facts:
    """The scheduler's facts: the session's, and its transcript's size and age."""
    size = mtime = None
    if session.transcript_path:
        try:
            st = os.stat(session.transcript_path)
            size, mtime = st.st_size, st.st_mtime
        except OSError:
            pass  # a missing transcript holds nothing back
    return Facts(live=session.live, cron=session.cron, subagent=session.subagent,
                 transcript_size=size, transcript_mtime=mtime)


def _earliest(*times: float | None) -> float | None:
    known = [t for t in times if t is not None]
    return min(known) if known else None
