"""What a host says of its own resume after a usage limit, kept as a fact of the session.

Claude Code 2.1.332 resumes an open interactive session itself once its usage limit resets
(its "continue automatically at usage limit"): it arms when a refused turn names the reset
(within 24 h) and reports only what became of it, in Notification hooks (`Host.own_resume`):
`quota_auto_resume_fired`, `_disabled` (it will not) and `_stale` (press enter). The arming
itself reaches no hook, so a limit whose message names a reset within 24 h, on such a host,
is recorded as `expected`; with no reset named (an API key's plain 429) the host does not
resume, and nothing is recorded. The follow-up scheduler stands down while it is expected
or fired and the session is open (decide.py); the views say who resumes the session.
"""

from __future__ import annotations

from sidecar.base.timeutil import iso
from sidecar.followups.resets import parse_reset
from sidecar.hosts import registry
from sidecar.inbox.events import Event
from sidecar.sessions.model import HostResume, SessionRecord
from sidecar.views.activity import own_resume
from sidecar.vocabulary import EventKind

HORIZON = 24 * 3600  # Claude Code does not wait for a reset further away than this
IN_HAND = ("expected", "fired")  # the host has the resume in hand: sidecar stands down


def follow(record: SessionRecord, event: Event) -> str | None:
    """Keep what `event` says of the host's own resume; the timeline's words when it said
    something (None: nothing of it)."""
    host = registry.find(event.host)
    meta = record.sidecar
    if host is None or not host.own_resume:
        return None
    if event.kind == EventKind.TURN_FAILED and meta.limit is not None:
        reset = parse_reset(meta.limit.message, event.ts)
        if reset is None:
            meta.host_resume = None  # no reset named: the host has nothing to wait for
            return None
        state = "beyond" if reset - event.ts > HORIZON else "expected"
        meta.host_resume = HostResume(state, iso(event.ts), iso(reset), host.title)
        return None
    if event.kind == EventKind.TURN_END and meta.limit is None:
        meta.host_resume = None  # the limit has passed: nothing is left to resume
        return None
    said = host.own_resume.get(event.input_kind.lower()) if event.name == "Notification" else None
    if said is None:
        return None
    earlier = meta.host_resume
    meta.host_resume = HostResume(said, iso(event.ts), earlier.at if earlier else None, host.title,
                                  event.input_message)
    return f"{event.input_kind}: {event.input_message}" if event.input_message else event.input_kind


def in_hand(record: SessionRecord) -> str | None:
    """In words, that the host resumes this open session itself (it said it will, or did);
    None when it does not, or the session is no longer open (its process is gone)."""
    said = record.sidecar.host_resume
    if said is None or said.state not in IN_HAND or not record.active or record.sidecar.limit is None:
        return None
    return own_resume(said.to_json()) or None
