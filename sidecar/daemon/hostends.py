"""Sessions whose host writes down their end itself (`Host.ends_recorded`): asked whether it did.

Some hosts often send no end of their own, and the process their hooks name may outlive the
session (a hub daemon that serves every run), yet they write the session's status in a file of
their own. For the live sessions of such a host, the workspace's step asks the host
(`Host.recorded_end`) shortly after each turn end (the host writes its record just after its
hook fires) and every `sweepInterval` (for a session whose turn end was missed, and after a
restart); an end it reports goes through the inbox like any other, so completion, follow-ups and
plugin calls are those of any end. A look is a bounded read of one small file; nothing waits for
the host. The user's files are read as the workspace's owner (owner.py): a root daemon reads
another user's only if every folder down from their home is theirs, never through a link.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sidecar import owner
from sidecar.base.wslog import WorkspaceLog
from sidecar.hosts import registry, transcripts
from sidecar.hosts.base import Reader, RecordedEnd
from sidecar.layout import Workspace
from sidecar.sessions.model import Key
from sidecar.vocabulary import EventKind, SessionChange

LOOKS_AFTER_TURN = (1.0, 5.0)  # seconds after a turn end; then on the sweep's cadence
MAX_RECORD = owner.MAX_OWNED_BYTES  # a host's record larger than this says nothing


def read_own(path: Path) -> bytes | None:
    """A regular file of this process's user, never through a link at its last step, nor
    larger than MAX_RECORD (None: missing, unreadable, not a regular file, too large)."""
    return transcripts.read_small(path, MAX_RECORD, follow=False)


def owners_files(ws: Workspace) -> tuple[Path, Reader]:
    """The workspace owner's home, and how to read their files: as this user, or (a root
    daemon serving someone else) only files that are theirs. CannotActAsOwner where neither."""
    account = owner.foreign_owner(ws)
    if account is None:
        return Path.home(), read_own
    uid = account.uid
    return Path(account.home), lambda path: owner.read_owned(path, uid)


def end_event(host: str, session_id: str, end: RecordedEnd, now: float) -> dict[str, Any]:
    """The session end dropped into the inbox for an end the host recorded: with when the host
    says it ended (the session rules ignore an earlier run's) and what was read with it."""
    event: dict[str, Any] = {"event": "session-end", "session_id": session_id, "host": host,
                             "reason": end.reason, "ts": now, "recordedEndAt": end.at,
                             "recordedFacts": end.facts.to_json()}
    if end.transcript:
        event["transcript_path"] = end.transcript
    return event


def records_ends(host: str) -> bool:
    known = registry.find(host)
    return known is not None and known.ends_recorded


class RecordedEnds:
    """When to ask, and asking, for one workspace's sessions of hosts that record their end."""

    def __init__(self, ws: Workspace, live: Callable[[], list[Key]], interval: Callable[[], float]) -> None:
        self.ws = ws
        self.log = WorkspaceLog(ws.root)  # its lines begin with the root
        self.live = live  # the workspace's active sessions (its bindings)
        self.interval = interval
        self.soon: dict[Key, list[float]] = {}  # the looks due after a turn end
        self.started: dict[Key, float] = {}  # when its latest run began, as far as seen here
        self.tracked: set[Key] = set()  # the live sessions of such hosts, as far as known
        self.next_round = 0.0  # every live session of such a host: at once, then each interval

    def note(self, changes: list[SessionChange]) -> None:
        """A turn ended: look soon. A session ended: never again."""
        for change in changes:
            key = (change.host, change.session_id)
            if not records_ends(change.host):
                continue
            if change.kind == EventKind.SESSION_END:
                self.soon.pop(key, None)
                self.started.pop(key, None)
                self.tracked.discard(key)
                continue
            self.tracked.add(key)
            if change.kind == EventKind.SESSION_START:
                self.started[key] = max(change.ts, self.started.get(key, change.ts))
            elif change.kind in (EventKind.TURN_END, EventKind.TURN_FAILED):
                self.soon[key] = [change.ts + delay for delay in LOOKS_AFTER_TURN]

    def begin(self, live: list[Key], now: float) -> None:
        """A new leader's live sessions, as it read them to watch their hosts again: the first
        round asks those of such hosts at once, and no other workspace pays a read for it."""
        self.tracked = {key for key in live if records_ends(key[0])}
        self.next_round = now if self.tracked else now + self.interval()

    def due(self) -> float:
        """When to look next: a workspace with no live session of such a host is not woken
        for it (its first round, at start, finds what a restart left live)."""
        rounds = self.next_round if self._rounds_go_on() else math.inf
        return min([rounds, *(looks[0] for looks in self.soon.values())])

    def _rounds_go_on(self) -> bool:
        """While a live session of such a host is known, or before the first round (one not
        begun by a leader's own read of its live sessions)."""
        return bool(self.tracked) or not self.next_round

    def ended(self, now: float) -> list[tuple[Key, RecordedEnd]]:
        """Each session due a look whose host says it has ended (it is not looked at again)."""
        keys = [key for key, looks in self.soon.items() if looks[0] <= now]
        for key in keys:
            looks = self.soon[key]
            looks.pop(0)
            if not looks:
                del self.soon[key]
        if now >= self.next_round and self._rounds_go_on():
            self.next_round = now + self.interval()
            self.tracked = {key for key in self.live() if records_ends(key[0])}
            keys += [key for key in sorted(self.tracked) if key not in keys]
        if not keys:
            return []
        try:
            home, read = owners_files(self.ws)
        except (owner.CannotActAsOwner, OSError) as exc:
            self.log.warning("the hosts' own records of their sessions are not read: %s", exc)
            return []
        found = []
        for key in keys:
            end = self._ask(key, home, read)
            if end is not None and (end.at is None or end.at < self.started.get(key, end.at)):
                # An end not saying when cannot be told from an earlier run's; one older than
                # the latest start seen here is an earlier run's (the session rules check it
                # again against the record, which a restart does not forget).
                continue
            if end is not None:
                self.soon.pop(key, None)
                self.tracked.discard(key)
                found.append((key, end))
        return found

    def _ask(self, key: Key, home: Path, read: Reader) -> RecordedEnd | None:
        host = registry.find(key[0])
        if host is None:
            return None
        try:
            return host.recorded_end(key[1], home, read)
        except Exception as exc:  # a host's file is its own: it can never stop the step
            self.log.warning("%s session %s: its record was not read: %r", *key, exc)
            return None
