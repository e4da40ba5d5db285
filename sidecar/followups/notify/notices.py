"""Queueing notices: one queue entry per (notify hook, session, transition).

A resume or command hook is queued once per session (followups/queue.py). A notice is about one
transition of it instead: each needs-input ask, each usage limit's episode, the end, each failed
follow-up. Its entry's id names the transition: by the inbox file and the time it came from, and
a limit failure by when its episode began (a host that reports each failed attempt of a turn,
Copilot CLI, reports one episode many times, and a resume that hits the limit again is the same
episode); another failure while a limit holds (a server error) is its own. So two asks are two
notices, while the same ask applied again finds its key among the hook's recent notices
(`recentNotices`, kept with the hook in the same write that queues the notice): whether the
notice still waits or was sent already, as when a batch whose record could not be saved (a full
disk) is applied again a second later. A hook replaced by one of the same id keeps them
(`keep_recent`). What the notice tells is kept in the entry (`notice`), as it was when the
transition happened: by the time it is sent the session may have moved on.

A turn's end is keyed by its turn (when it began), so a host that ends one turn twice (Codex's
Stop hook and its `notify` program) tells it once. An idle prompt (the host has waited a while
for the next prompt: Claude Code sends it about 60 s after a turn ends) tells nothing new where
that turn's end was told already: a turn-end notify hook told it finished, or a turn-failed one
told its usage limit (`told_already`).
"""

from __future__ import annotations

import hashlib

from sidecar.base.endreasons import HOST_EXITED
from sidecar.base.outcome import Outcome, skipped
from sidecar.base.timeutil import iso
from sidecar.followups.model import Hook, HooksDoc, Json, QueueEntry, entry_id
from sidecar.followups.notify.targets import Notify
from sidecar.vocabulary import LIMIT_ERRORS, EventKind, FollowUpEvent, SessionChange

NOTICE = "notice"  # the queue entry's key for what the notice tells
RECENT = "recentNotices"  # the hook's key for the transitions it was queued for lately
RECENT_LIMIT = 100
# The asks that mean only "the host is waiting for your next prompt" (Claude Code's and Qwen
# Code's `notification_type`): the turn before them has ended, and may have been told of.
IDLE_ASKS = frozenset({"idle_prompt"})
TURN_INTERRUPTED = skipped("the last turn was interrupted")
TOLD_ALREADY = skipped("an idle prompt after a turn whose end was told already")


def is_notify(hook: Hook | None) -> bool:
    return hook is not None and isinstance(hook.action, Notify)


def notice_of(entry: QueueEntry) -> Json:
    found = entry.extra.get(NOTICE)
    return found if isinstance(found, dict) else {}


def _transition(*parts: object) -> str:
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:16]


def wants_change(hook: Hook, change: SessionChange) -> bool:
    """Whether a session change may queue this notify hook (its event and reasons matched),
    where no note is worth making if not: a follow-up's own run only if the hook asks; a
    subagent's turn end never (it names the subagent's own transcript: the session's turn
    goes on)."""
    if change.from_hook and not hook.also_follow_ups:
        return False
    return not (change.kind == EventKind.TURN_END and change.payload is not None
                and change.payload.get("agent_transcript_path"))


def refusal(doc: HooksDoc, hook: Hook, change: SessionChange) -> Outcome | None:
    """Why a notify hook that wants the change tells nothing of it, for its history (None:
    it tells it). An end mid-turn is told where the host exited (killed, crashed: the user
    did not stop it) or where the hook asks (`alsoInterrupted`); an idle prompt is not told
    where its turn's end was (`told_already`)."""
    if change.kind == EventKind.SESSION_END and change.interrupted and not hook.also_interrupted \
            and change.reason != HOST_EXITED:
        return TURN_INTERRUPTED
    if change.kind == EventKind.NEEDS_INPUT and told_already(doc, change):
        return TOLD_ALREADY
    return None


def told_already(doc: HooksDoc, change: SessionChange) -> bool:
    """Whether an idle prompt follows a turn whose end some enabled notify hook told: one that
    ended well (a turn-end hook), or one that failed on a usage limit (a turn-failed hook of
    the limit)."""
    if change.reason not in IDLE_ASKS or change.interrupted:
        return False
    for hook in doc.hooks.values():
        if not hook.enabled or not is_notify(hook) or (change.from_hook and not hook.also_follow_ups):
            continue
        if hook.event == EventKind.TURN_END and not change.turn_failed:
            return True
        if hook.event == EventKind.TURN_FAILED and change.limited and (
                hook.reasons is None or LIMIT_ERRORS.intersection(hook.reasons)):
            return True
    return False


def add_for_change(doc: HooksDoc, hook: Hook, change: SessionChange, now: float, queued: set[str]) -> None:
    """Queue the notice of one session change (once, however often its batch is replayed)."""
    assert change.kind is not None
    # A limit failure is keyed by its episode (each resume or retry that hits the limit again
    # is the same transition); any other failure while a limit holds is one of its own.
    # A turn's end is keyed by its turn: a second end event of the same turn is the same.
    transition = _transition(change.kind, "limit", change.limit_since) \
        if change.kind == EventKind.TURN_FAILED and change.limit_since \
        and change.reason in LIMIT_ERRORS else \
        _transition(change.kind, "turn", change.turn_started_at) \
        if change.kind == EventKind.TURN_END and change.turn_started_at else \
        _transition(change.kind, change.event_file, repr(change.ts))
    key = f"{entry_id(hook.id, change.host, change.session_id)}@{transition}"
    if key in queued or key in recent(hook):
        return
    notice: Json = {"event": change.kind.value, "reason": change.reason, "at": iso(change.ts)}
    message = change.input_message if change.kind == EventKind.NEEDS_INPUT else \
        change.limit_message if change.kind == EventKind.TURN_FAILED else ""
    if change.kind == EventKind.TURN_FAILED and change.host_resumes:
        message = f"{message} · {change.host_resumes}" if message else change.host_resumes
    if message:
        notice["message"] = message
    if change.last_message:
        notice["lastMessage"] = change.last_message
    if change.kind == EventKind.SESSION_END and change.interrupted:
        notice["midTurn"] = True  # its turn never ended: the notice says so
    cost = spent_so_far(change)
    if cost is not None:
        notice["cost"] = cost
    _append(doc, hook, key, change.host, change.session_id, change.harness_session_id, change.ts, now, notice)
    queued.add(key)


def spent_so_far(change: SessionChange) -> Json | None:
    """What the session has cost so far (`usd`, `source`), where a turn end or a session end
    knows it; None where it does not (unpriced: the notice names no amount, never $0)."""
    total = change.spent.get("total") if change.spent else None
    if change.kind not in (EventKind.TURN_END, EventKind.SESSION_END) or not isinstance(total, dict):
        return None
    usd = total.get("usd")
    if isinstance(usd, bool) or not isinstance(usd, (int, float)) or usd < 0:
        return None
    return {"usd": usd, "source": total.get("source"), "unpriced": bool(total.get("unpriced"))}


def add_for_follow_up(doc: HooksDoc, event: FollowUpEvent, fired: QueueEntry, hook_id: str,
                      status: str, now: float, episode: str = "") -> int:
    """Queue the notices of what a follow-up did (it failed; a limit's resume started; a
    budget held it back), for each enabled notify hook of that event but the follow-up's
    own; returns how many. An `episode` (a budget's: a session, a day) is told once, whatever
    the session: its key ends the same for every session."""
    queued = {(e.hook_id, e.id.rpartition("@")[2]) for e in doc.pending}
    added = 0
    for hook in doc.hooks.values():
        if not hook.enabled or hook.event != event or not is_notify(hook) or hook.id == hook_id:
            continue
        transition = _transition(event, episode) if episode else \
            _transition(event, fired.id, fired.claimed_at, fired.log)
        key = f"{entry_id(hook.id, fired.host, fired.session_id)}@{transition}"
        if (hook.id, transition) in queued or any(k.rpartition("@")[2] == transition
                                                  for k in recent(hook)):
            continue
        notice: Json = {"event": event.value, "reason": status, "hook": hook_id, "at": iso(now)}
        _append(doc, hook, key, fired.host, fired.session_id, fired.harness_session_id, now, now, notice)
        queued.add((hook.id, transition))
        added += 1
    return added


def keep_recent(replaced: Hook | None, hook: Hook) -> None:
    """A notify hook written over one of the same id keeps the transitions that one was
    queued for: the same transition applied again (a limit's next try) is told of once."""
    if replaced is not None and is_notify(hook) and recent(replaced):
        hook.extra[RECENT] = recent(replaced)


def recent(hook: Hook) -> list[str]:
    """The keys of the transitions the hook was queued for lately (a hand edit that is not a
    list of keys counts as none)."""
    keys = hook.extra.get(RECENT)
    return [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []


def _append(doc: HooksDoc, hook: Hook, key: str, host: str, session_id: str,
            harness_session_id: str | None, at: float, now: float, notice: Json) -> None:
    hook.extra[RECENT] = [*recent(hook), key][-RECENT_LIMIT:]
    doc.pending.append(QueueEntry(
        id=key, hook_id=hook.id, host=host, session_id=session_id,
        harness_session_id=harness_session_id, enqueued_at=iso(now),
        due_at=iso(at + hook.delay_seconds), extra={NOTICE: notice}))
