"""What a host says of its own resume after a usage limit, kept as a fact of the session.

Claude Code 2.1.332 resumes an open interactive session itself once its usage limit resets
(its "continue automatically at usage limit"): it arms when a refused turn names the reset
(within 24 h) and reports only what became of it, in Notification hooks (`Host.own_resume`):
`quota_auto_resume_fired`, `_disabled` (it will not) and `_stale` (press enter). The arming
itself reaches no hook, so a limit whose message names a reset within 24 h, on such a host,
is recorded as `expected`, unless the user's own switch turned it off (`off`: read from their
settings by the batch, `read_switch`, as the rules read no file); with no reset named (an API
key's plain 429) the host does not resume, and nothing is recorded. The follow-up scheduler
stands down while it is expected or fired and the session is open (decide.py); the views say
who resumes the session. With config.toml's `hostResume = false`, none of it is kept (`heeding`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from sidecar import owner
from sidecar.base.timeutil import iso
from sidecar.followups.resets import parse_reset
from sidecar.hosts import registry
from sidecar.hosts.base import Reader
from sidecar.inbox.events import Event
from sidecar.layout import Workspace
from sidecar.sessions.model import HostResume, SessionRecord
from sidecar.views.activity import own_resume
from sidecar.vocabulary import EventKind

HORIZON = 24 * 3600  # Claude Code does not wait for a reset further away than this
IN_HAND = ("expected", "fired")  # the host has the resume in hand: sidecar stands down
OFF = "off"  # the user's own switch turned the host's resume off
_heeded: ContextVar[bool] = ContextVar("sidecar_host_resume_heeded", default=True)


@contextmanager
def heeding(heeded: bool) -> Iterator[None]:
    """Apply events heeding what hosts say of their own resume, or (config.toml's
    `hostResume = false`) as if they had none: nothing of it is kept, shown or stood down for."""
    token = _heeded.set(heeded)
    try:
        yield
    finally:
        _heeded.reset(token)


def read_switch(record: SessionRecord, event: Event, ws: Workspace) -> None:
    """Before a failed turn is applied: whether the user turned the host's own resume off, read
    from their settings as the workspace's owner, kept for `follow` (`off`); an `off` of an
    earlier limit is dropped when the switch is on again."""
    host = registry.find(event.host)
    if host is None or host.own_resume_off is None or not _heeded.get() \
            or event.file in record.sidecar.recent_events:  # applied before: it changes nothing
        return
    try:
        home, read = _owners(ws)
        off = host.own_resume_off(home, read)
    except (owner.CannotActAsOwner, OSError):
        return  # unread: as if on, the default
    meta = record.sidecar
    if off is not None:
        meta.host_resume = HostResume(OFF, iso(event.ts), None, host.title, off)
    elif meta.host_resume is not None and meta.host_resume.state == OFF:
        meta.host_resume = None


def _owners(ws: Workspace) -> tuple[Path, Reader]:
    """The workspace owner's home, and how to read their settings: files in their home only
    if they are theirs (owner.read_owned), a file outside it (a managed settings file) only if
    it is root's (owner.read_system)."""
    account = owner.foreign_owner(ws)
    home, uid = (Path.home(), os.geteuid()) if account is None else (Path(account.home), account.uid)
    return home, lambda path: (owner.read_owned(path, uid) if path.is_relative_to(home)
                               else owner.read_system(path))


def follow(record: SessionRecord, event: Event) -> str | None:
    """Keep what `event` says of the host's own resume; the timeline's words when it said
    something (None: nothing of it)."""
    host = registry.find(event.host)
    meta = record.sidecar
    if host is None or not host.own_resume:
        return None
    if not _heeded.get():
        meta.host_resume = None  # nothing of it is kept, an earlier episode's neither
        return None
    if event.kind == EventKind.TURN_FAILED and meta.limit is None:
        meta.host_resume = None  # not a limit (an `off` read for it is of no episode)
        return None
    if event.kind == EventKind.TURN_FAILED:
        assert meta.limit is not None
        reset = parse_reset(meta.limit.message, event.ts)
        if reset is None or event.hook_id:
            # No reset named, the host has nothing to wait for; a run sidecar started
            # (`claude -p`, unattended) is not one Claude Code resumes itself.
            meta.host_resume = None
            return None
        off = meta.host_resume.message if meta.host_resume and meta.host_resume.state == OFF else None
        state = OFF if off else "beyond" if reset - event.ts > HORIZON else "expected"
        meta.host_resume = HostResume(state, iso(event.ts), iso(reset), host.title, off or "")
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


def resumed(record: SessionRecord) -> str | None:
    """In words, that the host resumed this session itself while its usage limit holds (the
    episode's one resume); None when it did not."""
    said = record.sidecar.host_resume
    if said is None or said.state != "fired" or record.sidecar.limit is None:
        return None
    return own_resume(said.to_json()) or None


def in_hand(record: SessionRecord) -> str | None:
    """In words, that the host resumes this open session itself (it said it will, or did);
    None when it does not, or the session is no longer open (its process is gone)."""
    said = record.sidecar.host_resume
    if said is None or said.state not in IN_HAND or not record.active or record.sidecar.limit is None:
        return None
    return own_resume(said.to_json()) or None
