"""The follow-up queue: enqueue at session boundaries, sleep until due, claim, check, fire.

At most once: an entry is claimed in hooks.json (under its lock, durably) before it fires, and
removed when it is done. A claim whose instance has died (its life lock is free) is never
retried: it is recorded as `error: interrupted`. Once per hook per host session: the session
record remembers every hook queued for it, and sessions that a hook's own run started (their
events carry SIDECAR_HOOK_ID) never queue hooks.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

from . import hooks as hooks_mod, locks
from .actions import ActionError, Firing, RunningAction, build_argv, working_folder
from .config import Config
from .hooks import Doc, HookStore, due_at, entry_id, record_firing
from .layout import Workspace
from .plugins import PluginRunner
from .sessions import Effect, SessionStore, StoreError, sidecar_meta
from .timeutil import iso, now

log = logging.getLogger("sidecar")

POSTPONE_SECONDS = 60.0
MAX_POSTPONES = 10
TRANSCRIPT_QUIET = 2.0  # a transcript written this recently means the session is not done
RECOVERY_INTERVAL = 30.0  # how often claims of dead instances are looked for

EFFECT_EVENTS = {
    "start": "session-start",
    "reset": "session-reset",
    "end": "session-end",
    "turn-end": "turn-end",
    "tool-use": "tool-use",
}


class Scheduler:
    """Fires one workspace's due follow-up hooks while this instance leads it."""

    def __init__(
        self,
        ws: Workspace,
        hook_store: HookStore,
        session_store: SessionStore,
        config: Config,
        instance_id: str,
        is_alive: Callable[[str], bool],
        plugins: PluginRunner | None = None,
    ) -> None:
        self.ws = ws
        self.hooks = hook_store
        self.sessions = session_store
        self.config = config
        self.instance_id = instance_id
        self.is_alive = is_alive
        self.plugins = plugins
        self.wake = threading.Event()
        self.stop = threading.Event()
        self.slots = threading.Semaphore(max(1, config.concurrency))
        self.running: dict[str, RunningAction | None] = {}
        self.workers: list[threading.Thread] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name=f"hooks:{ws.root}", daemon=True)

    # -- enqueue (called on the batch thread, before the sessions are saved) ----------------

    def enqueue(self, effects: list[Effect], t: float | None = None) -> int:
        t = now() if t is None else t
        relevant = [(EFFECT_EVENTS[e.kind], e) for e in effects
                    if e.event is not None and e.kind in EFFECT_EVENTS]
        if not relevant:
            return 0
        wanted = self.hooks.listened_events(t)
        if not any(kind in wanted for kind, _ in relevant):
            return 0  # nothing listens: leave hooks.json untouched

        def edit(doc: Doc) -> int:
            queued = {e["id"] for e in doc["pending"]}
            added = 0
            for kind, effect in relevant:
                meta = sidecar_meta(effect.record)
                guard = meta.setdefault("followUps", {})
                if meta.get("startedByHook") or effect.event.hook_id:
                    continue  # a hook's own run: queuing again could loop forever
                host = effect.record["metadata"]["host"]
                session_id = effect.record["metadata"]["hostSessionId"]
                for hook in doc["hooks"].values():
                    if not hook["enabled"] or hook["event"] != kind or hook["id"] in guard:
                        continue
                    key = entry_id(hook["id"], host, session_id)
                    guard[hook["id"]] = {"queuedAt": iso(t)}
                    if key in queued:
                        continue  # a replayed batch: queued already
                    doc["pending"].append({
                        "id": key,
                        "hookId": hook["id"],
                        "host": host,
                        "sessionId": session_id,
                        "harnessSessionId": effect.record["id"],
                        "enqueuedAt": iso(t),
                        "dueAt": iso(effect.event.ts + hook["delaySeconds"]),
                        "retries": 0,
                        "claimedBy": None,
                    })
                    queued.add(key)
                    added += 1
            return added

        added = self.hooks.change(t, edit)
        if added:
            self.wake.set()
        return added

    # -- the loop ------------------------------------------------------------------------

    def start(self) -> None:
        self.thread.start()

    def stop_firing(self) -> None:
        """Claim nothing more; what runs goes on (see `finish_running`)."""
        self.stop.set()
        self.wake.set()
        if self.thread.is_alive():
            self.thread.join(10)

    def finish_running(self) -> None:
        """Give running actions `stopGrace` to finish, then interrupt them; both are recorded."""
        self.stop_firing()
        deadline = time.monotonic() + self.config.stop_grace
        for worker in list(self.workers):
            worker.join(max(0.0, deadline - time.monotonic()))
        with self.lock:
            running = [r for r in self.running.values() if r is not None]
        for action in running:
            action.interrupt()
        for worker in list(self.workers):
            worker.join(10)

    def _run(self) -> None:
        next_recovery = now()
        while not self.stop.is_set():
            self.wake.clear()  # before looking: a wake-up from now on is not lost
            try:
                t = now()
                if t >= next_recovery:
                    self.recover()
                    next_recovery = t + RECOVERY_INTERVAL
                _, pending, _ = self.hooks.snapshot(t)
                with self.lock:
                    busy = set(self.running)
                waiting = sorted((due_at(e), e["id"]) for e in pending
                                 if not e.get("claimedBy") and e["id"] not in busy)
                if waiting and waiting[0][0] <= t:
                    if self.slots.acquire(blocking=False):
                        self._claim_and_fire(waiting[0][1], t)
                        continue
                    timeout = None  # every slot is busy: a finishing action wakes us
                else:
                    timeout = waiting[0][0] - t if waiting else None
                limit = next_recovery - t
                self.wake.wait(limit if timeout is None else min(timeout, limit))
            except Exception:  # e.g. a lock held too long: log, and look again shortly
                log.exception("%s: follow-up scheduler error; retrying in a second", self.ws.root)
                self.stop.wait(1.0)

    def recover(self) -> int:
        """Record claims held by dead instances as interrupted; they are never retried."""
        t = now()
        _, pending, _ = self.hooks.snapshot(t)
        dead = {e["claimedBy"] for e in pending
                if e.get("claimedBy") and e["claimedBy"] != self.instance_id
                and not self.is_alive(e["claimedBy"])}
        if not dead:
            return 0

        def edit(doc: Doc) -> int:
            lost = [e for e in doc["pending"] if e.get("claimedBy") in dead]
            for entry in lost:
                doc["pending"].remove(entry)
                hook = doc["hooks"].get(entry["hookId"])
                if hook is not None:
                    record_firing(hook, "error: interrupted", t, entry, None)
                self._note_fired_while_broken(entry)
            return len(lost)

        lost = self.hooks.change(t, edit)
        if lost:
            log.warning("%s: %d follow-up firing(s) interrupted by a dead instance", self.ws.root, lost)
        return lost

    def _note_fired_while_broken(self, entry: Doc) -> None:
        state = self.hooks.state
        if state is not None and state.error is not None:
            state.fired_while_broken.add(entry["id"])

    # -- one firing --------------------------------------------------------------------------

    def _claim_and_fire(self, key: str, t: float) -> None:
        """Claim the entry, then fire it on a worker thread; the caller holds a slot."""
        try:
            claimed = self.claim(key, t)
        except Exception:
            self.slots.release()
            raise
        if claimed is None:
            self.slots.release()
            return
        entry, hook = claimed
        with self.lock:
            self.running[key] = None
        worker = threading.Thread(target=self.fire, args=(entry, hook), daemon=True,
                                  name=f"hook:{key}")
        self.workers.append(worker)
        worker.start()

    def claim(self, key: str, t: float) -> tuple[Doc, Doc] | None:
        """Mark the entry as ours, durably; None if it is gone or someone else has it."""

        def claim(doc: Doc) -> tuple[Doc, Doc] | None:
            entry = next((e for e in doc["pending"] if e["id"] == key), None)
            if entry is None or entry.get("claimedBy"):
                return None
            hook = doc["hooks"].get(entry["hookId"])
            if hook is None or not hook["enabled"]:
                doc["pending"].remove(entry)
                return None
            entry["claimedBy"] = self.instance_id
            entry["claimedAt"] = iso(t)
            return dict(entry), dict(hook)

        return self.hooks.change(t, claim)

    def fire(self, entry: Doc, hook: Doc) -> None:
        """Check the preconditions of a claimed entry, then run it, postpone it or skip it."""
        log_path: Path | None = None
        try:
            verdict, detail = self._preconditions(entry, hook, now())
            if verdict == "postpone":
                self._postpone(entry, detail)
                return
            if verdict == "skip":
                status = f"skipped: {detail}"
            elif self.stop.is_set():
                self._release(entry)  # claimed as we were stopping: leave it for the next leader
                return
            else:
                status, log_path = self._run_action(entry, hook, detail)
            self._finish(entry, status, log_path)
        except Exception as exc:
            log.exception("%s: firing %s failed", self.ws.root, entry["id"])
            self._finish(entry, f"error: {exc}", log_path)
        finally:
            with self.lock:
                self.running.pop(entry["id"], None)
            self.slots.release()
            self.wake.set()
            try:
                self.workers.remove(threading.current_thread())
            except ValueError:
                pass

    def _preconditions(self, entry: Doc, hook: Doc, t: float) -> tuple[str, Any]:
        """("fire", record), ("postpone", why) or ("skip", why)."""
        # Under the sessions' lock: the batch that queued this entry may still be saving the
        # session it ended, and a half-saved batch would look like a session still live.
        with locks.locked(self.ws.lock("bindings")):
            record = None
            if entry.get("harnessSessionId"):
                try:
                    record = self.sessions.load_session(entry["harnessSessionId"])
                except (OSError, ValueError):
                    record = None
            live = self._is_live(entry, record)
        meta = sidecar_meta(record) if record is not None else {}
        if hook.get("skipCron") and meta.get("cron"):
            return "skip", "cron session"
        if hook.get("skipSubagents") and meta.get("subagent"):
            return "skip", "subagent session"
        transcript = meta.get("transcriptPath")
        size = mtime = None
        if isinstance(transcript, str) and transcript:
            try:
                st = os.stat(transcript)
                size, mtime = st.st_size, st.st_mtime
            except OSError:
                pass  # a missing transcript holds nothing back
        if hook.get("maxContextK") and size is not None and size / 4 / 1000 > hook["maxContextK"]:
            return "skip", f"context of about {size // 4000}K tokens is over maxContextK {hook['maxContextK']}"
        if live:
            return "postpone", "session is live again"
        if mtime is not None and t - mtime < TRANSCRIPT_QUIET:
            return "postpone", "transcript still changing"
        return "fire", record

    def _is_live(self, entry: Doc, record: Doc | None) -> bool:
        if record is not None and record.get("status") == "active":
            return True
        try:
            bindings = self.sessions.load_bindings()["bindings"]
        except StoreError:
            return False
        per_host = bindings.get(entry["host"])
        return isinstance(per_host, dict) and entry["sessionId"] in per_host

    def _postpone(self, entry: Doc, why: str) -> None:
        t = now()

        def edit(doc: Doc) -> None:
            current = next((e for e in doc["pending"] if e["id"] == entry["id"]), None)
            if current is None:
                return
            hook = doc["hooks"].get(current["hookId"])
            current["retries"] = int(current.get("retries") or 0) + 1
            if current["retries"] > MAX_POSTPONES:
                doc["pending"].remove(current)
                if hook is not None:
                    record_firing(hook, f"skipped: {why} after {MAX_POSTPONES} postponements",
                                  t, current, None)
                return
            current["claimedBy"] = None
            current.pop("claimedAt", None)
            current["dueAt"] = iso(t + POSTPONE_SECONDS)
            if hook is not None:
                hook["lastStatus"] = f"postponed: {why} ({current['retries']}/{MAX_POSTPONES})"

        self.hooks.change(t, edit)

    def _release(self, entry: Doc) -> None:
        def edit(doc: Doc) -> None:
            for current in doc["pending"]:
                if current["id"] == entry["id"]:
                    current["claimedBy"] = None
                    current.pop("claimedAt", None)

        self.hooks.change(now(), edit)

    def _run_action(self, entry: Doc, hook: Doc, record: Doc | None) -> tuple[str, Path | None]:
        meta = sidecar_meta(record) if record is not None else {}
        prompt = ""
        if hook.get("promptFile"):
            try:
                prompt = hooks_mod.read_prompt(self.ws, hook["promptFile"])
            except OSError as exc:
                return f"error: prompt file {hook['promptFile']}: {exc.strerror or exc}", None
        firing = Firing(
            hook_id=hook["id"],
            host=entry["host"],
            session_id=entry["sessionId"],
            harness_session_id=entry.get("harnessSessionId") or "",
            prompt=prompt,
            prompt_file=hook.get("promptFile"),
            cwd=working_folder(self.ws, meta.get("cwd")),
        )
        try:
            argv = build_argv(hook["action"], firing, self.config.resume, self.ws)
        except ActionError as exc:
            return f"error: {exc}", None
        stamp = iso(now()).replace(":", "").replace("-", "")
        log_path = self.ws.logs / "hooks" / hook["id"] / f"{stamp}-{entry['sessionId']}.log"
        try:
            action = RunningAction(argv, firing.cwd, firing.environment(self.ws), log_path)
        except ActionError as exc:
            return f"error: {exc}", log_path
        with self.lock:
            self.running[entry["id"]] = action
        log.info("%s: fired %s for %s session %s (log %s)", self.ws.root, hook["id"],
                 entry["host"], entry["sessionId"], log_path)
        return action.wait(self.config.action_timeout), log_path

    def _finish(self, entry: Doc, status: str, log_path: Path | None) -> None:
        t = now()

        def edit(doc: Doc) -> None:
            doc["pending"] = [e for e in doc["pending"] if e["id"] != entry["id"]]
            hook = doc["hooks"].get(entry["hookId"])
            if hook is not None:
                record_firing(hook, status, t, entry, str(log_path) if log_path else None)
            self._note_fired_while_broken(entry)

        self.hooks.change(t, edit)
        if self.plugins is not None:
            self.plugins.hook_fired(workspace=str(self.ws.root), hook_id=entry["hookId"],
                                    host=entry["host"], session_id=entry["sessionId"],
                                    harness_session_id=entry.get("harnessSessionId"),
                                    status=status, log=str(log_path) if log_path else None)
