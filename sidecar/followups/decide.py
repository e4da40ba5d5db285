"""When and whether a follow-up fires: pure decisions over the queue and a session's facts.

The scheduler reads nothing and writes nothing: `next_due` says which entry is due (or how
long to sleep), `decide` gives a claimed entry its verdict. The follow-up runner gathers the
facts (the session store's `facts`), and the queue records what was decided.
"""

from __future__ import annotations

from dataclasses import dataclass

from sidecar.followups.model import Hook, QueueEntry
from sidecar.followups.notify.targets import Notify
from sidecar.sessions.model import Facts
from sidecar.vocabulary import EventKind, Verdict

TRANSCRIPT_QUIET = 2.0  # a transcript written this recently means the session is not done


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str = ""


def decide(hook: Hook, facts: Facts, now: float, host_resume: bool = True) -> Decision:
    """Fire, postpone (the session is not done) or skip (it should never fire).

    Only a resume waits for the session to be quiet (not live again, its transcript still):
    it would race the host on the same conversation. A command does not touch the session,
    so it runs when it is due; a notice neither, and it tells of the moment it was queued for
    (a limit that passed since, a large transcript, change nothing of that). While the host
    said it resumes the open session itself (`facts.host_resumes`), a resume stands down in
    its favour, unless `host_resume` (config.toml's `hostResume`) is off; once the session
    is no longer open (its process gone), the host cannot, and the resume takes over. Once
    the host did resume it (`facts.host_resumed`), the limit episode had its resume: even if
    the user then quits, sidecar does not resume it a second time."""
    if hook.skip_cron and facts.cron:
        return Decision(Verdict.SKIP, "cron session")
    if hook.skip_subagents and facts.subagent:
        return Decision(Verdict.SKIP, "subagent session")
    if isinstance(hook.action, Notify):
        return Decision(Verdict.FIRE)  # a notice is sent as soon as it is due, whatever the session does
    size = facts.transcript_size
    if hook.max_context_k and size is not None and size / 4 / 1000 > hook.max_context_k:
        return Decision(Verdict.SKIP, f"context of about {size // 4000}K tokens is over "
                                      f"maxContextK {hook.max_context_k}")
    if hook.event == EventKind.TURN_FAILED and not facts.limited:
        return Decision(Verdict.SKIP, "the usage limit has passed: a later turn ended well")
    if hook.action != "resume":
        return Decision(Verdict.FIRE)  # a command runs when it is due: it races no session
    if facts.id_misfit is not None:
        return Decision(Verdict.SKIP, facts.id_misfit)
    if host_resume and facts.host_resumed:  # open or not: the episode had its one resume
        return Decision(Verdict.SKIP, f"{facts.host_resumed}: this usage limit's resume was its own")
    if facts.live and host_resume and facts.host_resumes:
        return Decision(Verdict.POSTPONE, f"standing down: {facts.host_resumes}")
    if facts.live:
        return Decision(Verdict.POSTPONE, "session is live again")
    mtime = facts.transcript_mtime
    if mtime is not None and now - mtime < TRANSCRIPT_QUIET:
        return Decision(Verdict.POSTPONE, "transcript still changing")
    return Decision(Verdict.FIRE)


@dataclass(frozen=True)
class Due:
    """The queue's next step: an entry to fire now, else when to look again (None: never)."""

    entry: QueueEntry | None
    wake_at: float | None


def next_due(pending: list[QueueEntry], busy: set[str], now: float) -> Due:
    """The earliest unclaimed entry that is due, or when the next one will be."""
    waiting = sorted((e for e in pending if not e.claimed_by and e.id not in busy),
                     key=lambda e: (e.due, e.id))
    if not waiting:
        return Due(None, None)
    first = waiting[0]
    return Due(first, None) if first.due <= now else Due(None, first.due)
