"""The store of `runtime/hooks.json` (hooks and their queue) and of `hooks.last-good.json`.

Every change is a read-modify-write under the workspace's `hooks` lock, starting from the file
as it is on disk, so `sidecar hooks ...`, daemons and hand edits can all change it.

A hand edit that does not parse or validate is never overwritten. The daemon then works on its
last good copy, kept in `runtime/hooks.last-good.json` so it survives restarts too, and merges
what it did meanwhile back in once the file is fixed (hookstate.py). This module is the only
writer of both files; in Redis mode it writes them through hooks_record.py.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from sidecar import jsonfile, safedir
from sidecar.base.errors import SidecarError
from sidecar.base.timeutil import iso
from sidecar.coordination import current as coordination
from sidecar.coordination.base import Conflict
from sidecar.coordination.records import HOOKS, LAST_GOOD
from sidecar.followups import hooks_record, hookstate, trust
from sidecar.followups.hookstate import BROKEN_SINCE, FIRED_WHILE_BROKEN, HookState, merged_after_repair
from sidecar.followups.model import Hook, HookEvent, HooksDoc, HooksError, QueueEntry, parse
from sidecar.followups.seeds import PROMPTS, default_doc, needs_seeding, seed_missing
from sidecar.layout import Workspace

if TYPE_CHECKING:
    from sidecar.coordination.redis.records import RedisRecords

log = logging.getLogger("sidecar")

T = TypeVar("T")

CONFLICT_TRIES = 3  # a change Redis refused as made on an older record, made again


@dataclass
class HooksView:
    """The hooks and the queue at one moment, and the file's error if it is broken."""

    hooks: dict[str, Hook]
    pending: list[QueueEntry]
    error: str | None


class HookStore:
    """Reads and changes one workspace's hooks.json under its lock."""

    def __init__(self, ws: Workspace, *, durable: bool = True) -> None:
        self.ws = ws
        self.durable = durable
        self.state: HookState | None = None
        self.fence: Callable[[], None] = self.no_lead  # a leader's check (sessions/store.py)

    @property
    def last_good_file(self) -> Path:
        return self.ws.runtime / LAST_GOOD

    @property
    def records(self) -> RedisRecords | None:
        """Redis, where it is the store of record (sessions/store.py, hooks_record.py)."""
        return coordination.get().records(self.ws)

    def no_lead(self) -> None:
        """The fence of a writer that leads nothing (sessions/store.py's `no_lead`)."""
        records = self.records
        if records is not None:
            records.flush()

    def locked(self) -> AbstractContextManager[None]:
        """hooks.json's lock, through the coordination (coordination/base.py)."""
        return coordination.get().store_lock(self.ws, "hooks")

    def read_file(self) -> HooksDoc:
        """The document on disk; HooksError if it is broken, FileNotFoundError if absent."""
        return parse(_read(self.ws.hooks_file))

    def refresh(self, now: float) -> HookState:
        """Bring the in-memory state up to date with the file; call with the lock held."""
        records = self.records
        if records is not None:
            return hooks_record.refresh(self, records, now)
        sig = jsonfile.signature(self.ws.hooks_file)
        state = self.state
        if state is not None and sig == state.signature:
            return state
        try:
            data = _read(self.ws.hooks_file)
            doc = parse(data)
        except FileNotFoundError:
            kept = state.doc if state is not None and state.error is None else HooksDoc()
            self.state = HookState(kept, None, sig)
            return self.state
        except HooksError as exc:
            return hookstate.broken(self, state, None, str(exc), sig, now)
        repaired = state is not None and state.error is not None
        if state is not None and state.error is not None:
            log.info("%s is valid again; taken up", self.ws.hooks_file)
            doc = merged_after_repair(doc, state)
        self.state = HookState(doc, None, sig)
        if doc.drop_orphans() or repaired:
            self.write(doc)  # the file is valid, so writing over it loses nothing
        elif not self._kept_already(data):
            # Someone else wrote a good version: keep it as the copy a later break falls back on.
            self._keep_last_good(data)
        return self.state

    def _kept_already(self, data: bytes) -> bool:
        """Whether the last-good copy holds `data` (the usual case at start-up: a durable
        write saved for each of many workspaces)."""
        try:
            return jsonfile.read_bytes(self.last_good_file) == data
        except (OSError, SidecarError):
            return False

    def write(self, doc: HooksDoc, as_json: dict[str, object] | None = None) -> None:
        records = self.records
        if records is not None:
            hooks_record.send(self, records, as_json if as_json is not None else doc.to_json())
            return
        self.fence()
        data = jsonfile.dumps(as_json if as_json is not None else doc.to_json())
        written = jsonfile.write_bytes_atomic(self.ws.hooks_file, data, durable=self.durable)
        if self.state is not None:
            self.state.signature = written
        self._keep_last_good(data)

    def _keep_last_good(self, data: bytes) -> None:
        """Copy a good hooks.json for a later break to fall back on. hooks.json is the record:
        a copy that cannot be written (a full disk) is only stale, never an error."""
        try:
            jsonfile.write_bytes_atomic(self.last_good_file, data, durable=self.durable)
        except OSError as exc:
            log.warning("%s: %s; the last good copy is older than hooks.json until the next "
                        "write", self.last_good_file, exc.strerror or exc)

    def change(self, now: float, edit: Callable[[HooksDoc], T]) -> T:
        """Run `edit` on the current document and save it: the one way to change hooks.json.

        While the file is broken the edit applies to the last good copy only, and the broken
        file stays exactly as the user left it. In Redis mode a change the record refused,
        as it moved on since it was read, is made again on the record as it is now: an edit
        is a function of the document alone (what it finds, it returns).
        """
        for attempt in range(CONFLICT_TRIES):
            try:
                return self._change(now, edit)
            except Conflict:
                if attempt == CONFLICT_TRIES - 1:
                    raise
                log.info("%s changed meanwhile; the change is made again", self.ws.hooks_file)
        raise AssertionError("unreachable")

    def _change(self, now: float, edit: Callable[[HooksDoc], T]) -> T:
        with self.locked():
            state = self.refresh(now)
            doc = state.doc
            self.fence()  # before the edit: a claim a deposed leader made would be acted on
            try:
                result = edit(doc)  # typed records: an edit cannot store a wrongly typed value
                data = doc.to_json()
            except BaseException:
                self.state = None  # the edit may have half-changed it: start again from disk
                raise
            try:
                if state.error is None:
                    self.write(doc, data)
                else:
                    # Only the copy changes; it also remembers since when, for the merge on
                    # repair.
                    kept = {**data, BROKEN_SINCE: iso(state.broken_at or now),
                            FIRED_WHILE_BROKEN: sorted(state.fired_while_broken)}
                    records = self.records
                    if records is not None:
                        hooks_record.send_while_broken(self, records, data, kept)
                    else:
                        jsonfile.write_json_atomic(self.last_good_file, kept, durable=self.durable)
            except BaseException:
                self.state = None  # not written (a full disk): what is on disk is what holds
                raise
            return result

    def note_fired_while_broken(self, entry_id: str) -> None:
        """Remember a firing done while the file is broken, so the repair does not redo it."""
        if self.state is not None and self.state.error is not None:
            self.state.fired_while_broken.add(entry_id)

    def current(self, now: float) -> HookState:
        """The state as the file has it now. Unchanged since it was read (its signature the
        same), it is the one held, without the lock: a writer replaces the file, so a write
        made under the lock meanwhile would show, and one still to come follows this read as
        it would have followed a read under the lock. Only a changed file is read under it.
        In Redis mode the record's revision must be the same too: another machine's change
        shows there before its copy does (if this machine sees the copy change at all)."""
        state = self.state
        records = self.records
        if state is not None and jsonfile.signature(self.ws.hooks_file) == state.signature \
                and (records is None or records.revision(HOOKS) == state.revision):
            return state
        with self.locked():
            return self.refresh(now)

    def listened_events(self, now: float) -> set[HookEvent]:
        """The events some enabled hook waits for (no copy of the queue: cheap per batch)."""
        return {h.event for h in self.current(now).doc.hooks.values() if h.enabled}

    def snapshot(self, now: float) -> HooksView:
        """The hooks and the queue as they are now, and the file's error if broken.

        The view's lists are its own, but their records are shared with the store's state to
        keep this cheap at thousands of entries: read them, never change them (`change` is
        the one way to change anything).
        """
        state = self.current(now)
        return HooksView(dict(state.doc.hooks), list(state.doc.pending), state.error)

    def seed(self, now: float) -> list[str]:
        """Give a workspace its seeded hooks (`post-task`, and `resume-after-limit` switched
        off) and their prompts, each only if missing and only once (see model.SEEDED); what
        was written, as paths below `.context/`."""
        wrote = []
        for name, text in PROMPTS.items():
            try:  # never through a symlinked `hooks/`, never over anything in the prompt's place
                fd = safedir.open_file(self.ws.prompts / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                                       0o644, create_dirs=True)
            except FileExistsError:
                continue
            with open(fd, "wb") as prompt:
                prompt.write(text.encode())
            wrote.append(f"hooks/{name}")
        with self.locked():
            records = self.records
            if not self.ws.hooks_file.exists() and (records is None or records.read(
                    HOOKS, adopt=False) is None):
                self.state = None
                self.write(default_doc(now))
                return [*wrote, "runtime/hooks.json"]
        view = self.snapshot(now)  # brings self.state up to date
        if view.error is None and self.state is not None and needs_seeding(self.state.doc):
            self.change(now, lambda doc: seed_missing(doc, now))
            wrote.append("runtime/hooks.json")
        return wrote


def initialise(ws: Workspace, now: float) -> list[str]:
    """Make a folder a workspace: its `.context/`, the runtime folders and the seeded hooks
    (each only if missing), and its id (trust.py); the seeded hooks as they stand are trusted
    where they are exactly sidecar's own. Returns what was written (paths below `.context/`)."""
    ws.ensure_runtime()
    trust.ensure_workspace_id(ws)
    store = HookStore(ws)
    wrote = store.seed(now)
    trust.trust_seeded(ws, store.snapshot(now).hooks.values(), now)
    return wrote


def read_view(ws: Workspace) -> HooksView:
    """Hooks and queue as the file says, or as last known good when it is broken; read only."""
    try:
        return HooksView(*_doc_parts(parse(_read(ws.hooks_file))), None)
    except FileNotFoundError:
        return HooksView({}, [], None)
    except HooksError as exc:
        error = f"{ws.hooks_file}: {exc}"
    state = hookstate.last_good(ws, coordination.get().records(ws))
    return HooksView(*_doc_parts(state.doc), error)


def _read(path: Path) -> bytes:
    """hooks.json's bytes; a FIFO or device in its place is a broken file, not a hang."""
    try:
        return jsonfile.read_bytes(path)
    except jsonfile.NotARegularFile as exc:
        raise HooksError(str(exc)) from None


def _doc_parts(doc: HooksDoc) -> tuple[dict[str, Hook], list[QueueEntry]]:
    return doc.hooks, doc.pending
