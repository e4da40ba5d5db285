"""The sessions `top` shows, kept up to date from the files' own change events.

The first load reads every workspace's hooks.json and every session record once. From then on
only what changed is read: each workspace's runtime folder is watched (hooks.json: its
follow-ups are read again, its records are not), its `sessions/` folder (a new session's
folder) and each session's own folder (its session.json replaced: that one record is read
again). The watches are the daemon's (daemon/watch.py: one inotify instance and one thread for
every folder on Linux, never through a symlinked folder); reads go through jsonfile and
views/sessions.py, which never follow a link inside the runtime.

A callback from the watch thread only notes what changed; `apply`, on the caller's thread, reads
it. A workspace or a record that cannot be read becomes a note in `errors`; the rest goes on.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sidecar.base.errors import SidecarError
from sidecar.daemon.watch import FolderWatch, WatchError, folder_watch
from sidecar.followups import store as hook_store
from sidecar.followups import trust
from sidecar.layout import PLAIN_NAME, Workspace
from sidecar.live import timeline
from sidecar.live.actions import act_on
from sidecar.live.changes import Changes
from sidecar.live.timeline import Gathered
from sidecar.sessions.model import Key, SessionRecord
from sidecar.sessions.store import SessionStore
from sidecar.views import sessions
from sidecar.views.sessions import FollowUp, RowKey, SessionRow

log = logging.getLogger("sidecar")

EVERYTHING = "*"  # a change whose names were lost: the whole workspace is read again
HOOKS = "hooks.json"


@dataclass
class _Served:
    """One workspace: its records as last read, its follow-ups, its watches."""

    ws: Workspace
    store: SessionStore
    records: dict[str, SessionRecord] = field(default_factory=dict)
    follow_ups: dict[Key, list[FollowUp]] = field(default_factory=dict)
    watches: dict[str, object] = field(default_factory=dict)  # "" runtime, "/" sessions, hid


class Feed:
    """Every session of the given workspaces, as rows; `apply()` takes up what changed."""

    def __init__(self, roots: list[Path], watch: FolderWatch | None = None) -> None:
        self.served = {root: _Served(Workspace(root), SessionStore(Workspace(root))) for root in roots}
        self.rows: dict[RowKey, SessionRow] = {}
        self.errors: dict[str, str] = {}  # what cannot be read, by workspace or record
        self.version = 0  # grows with every change of `rows`: a view re-sorts only then
        self.traces: set[RowKey] = set()  # sessions whose timeline grew since the last apply
        self._watch = watch
        self.changes: Changes[tuple[Path, str]] = Changes()

    # -- reading ---------------------------------------------------------------------------

    def load(self) -> None:
        """Read every workspace once (after `follow`, so that no change falls between)."""
        for served in self.served.values():
            self._read_workspace(served)

    def _read_workspace(self, served: _Served) -> None:
        root = served.ws.root
        for hid in list(served.records):
            self._forget(served, hid)
        self.errors = {k: v for k, v in self.errors.items() if not k.startswith(str(root))}
        if not self._read_follow_ups(served):
            return
        for hid in sessions.harness_ids(served.ws):
            self._read_record(served, hid)

    def _read_follow_ups(self, served: _Served) -> bool:
        root = served.ws.root
        try:
            served.ws.check_runtime()  # a symlinked runtime folder is never read through
            view = hook_store.read_view(served.ws)
        except (OSError, ValueError, SidecarError) as exc:
            self.errors[str(root)] = f"{root}: cannot be read: {exc}"
            return False
        self.errors.pop(str(root), None)
        if view.error:
            self.errors[f"{root}/hooks.json"] = view.error
        else:
            self.errors.pop(f"{root}/hooks.json", None)
        # Read again with hooks.json (a firing skipped as untrusted changes it): a prompt
        # changed since shows at the latest when its firing is skipped.
        untrusted = " ".join(h.id for h in trust.untrusted(served.ws, view.hooks.values()))
        if untrusted:
            self.errors[f"{root}/trust"] = (f"{root}: not trusted on this machine as they stand, so not run: "
                                            f"{untrusted} (sidecar hooks trust {untrusted})")
        else:
            self.errors.pop(f"{root}/trust", None)
        served.follow_ups = sessions.follow_ups_by_session(view, served.ws)
        return True

    def _read_record(self, served: _Served, hid: str) -> None:
        where = f"{served.ws.root}/{hid}"
        if self._watch is not None:
            self._watch_session(served, hid)  # before the read: no change falls between
        try:
            record = served.store.load_session(hid)
        except (OSError, ValueError, SidecarError) as exc:
            self.errors[where] = f"{served.ws.root}: session {hid} cannot be read: {exc}"
            return
        self.errors.pop(where, None)
        if record is None:  # gone, or its folder is made and its record not yet written
            self._forget(served, hid, unwatch=not os.path.lexists(served.ws.session_dir(hid)))
            return
        served.records[hid] = record
        self.rows[("", served.ws.root, hid)] = sessions.row(served.ws, record, served.follow_ups)
        self.version += 1

    def _forget(self, served: _Served, hid: str, unwatch: bool = True) -> None:
        served.records.pop(hid, None)
        if self.rows.pop(("", served.ws.root, hid), None) is not None:
            self.version += 1
        handle = served.watches.pop(hid, None) if unwatch else None
        if handle is not None and self._watch is not None:
            self._watch.remove(handle)

    def _rerow(self, served: _Served) -> None:
        """Every row of the workspace again from the records in memory (its follow-ups changed)."""
        for hid, record in served.records.items():
            self.rows[("", served.ws.root, hid)] = sessions.row(served.ws, record, served.follow_ups)
        self.version += 1

    # -- following -------------------------------------------------------------------------

    def follow(self, on_change: Callable[[], None]) -> None:
        """Watch every workspace; `on_change` is called (from the watch thread) when something
        changed, and `apply` then takes it up."""
        self.changes.on_change = on_change
        if self._watch is None:
            self._watch = folder_watch()
        for served in self.served.values():
            self._watch_workspace(served)
        self._watch.start()

    def stop(self) -> None:
        if self._watch is not None:
            self._watch.stop()

    def _note(self, root: Path, name: str) -> None:
        self.changes.note((root, name))

    def _watch_workspace(self, served: _Served) -> None:
        ws, root = served.ws, served.ws.root
        self._add_watch(served, "", ws.runtime, lambda name: self._note(
            root, HOOKS if name == HOOKS else EVERYTHING if name in (None, "sessions") else ""))
        self._add_watch(served, "/", ws.sessions, lambda name: self._note(root, name or EVERYTHING))

    def _watch_session(self, served: _Served, hid: str) -> None:
        root = served.ws.root
        self._add_watch(served, hid, served.ws.session_dir(hid), lambda name: self._note(
            root, f"{hid}/trace" if name == "trace.jsonl" else hid))

    def _add_watch(self, served: _Served, slot: str, folder: Path,
                   on_change: Callable[[str | None], None]) -> None:
        if self._watch is None or slot in served.watches:
            return
        try:
            served.watches[slot] = self._watch.add(folder, on_change)
        except WatchError as exc:
            if exc.errno != errno.ENOENT:  # a folder not made yet is no problem: its parent's watch sees it
                self.errors[f"watch:{folder}"] = f"{folder} is not followed live: {exc.strerror}"

    def pending(self) -> bool:
        return self.changes.pending()

    def apply(self) -> bool:
        """Read what changed since the last call; whether any row changed."""
        changed = self.changes.take()
        before = self.version
        self.traces = set()
        for root, name in sorted(changed, key=lambda c: (c[0], c[1] != EVERYTHING)):
            served = self.served.get(root)
            if served is not None and name:
                self._take(served, name)
        return self.version != before or bool(self.traces)

    def _take(self, served: _Served, name: str) -> None:
        if name == EVERYTHING:
            for slot in ("", "/"):
                handle = served.watches.pop(slot, None)
                if handle is not None and self._watch is not None:
                    self._watch.remove(handle)
            if self._watch is not None:
                self._watch_workspace(served)
            self._read_workspace(served)
        elif name == HOOKS:
            if self._read_follow_ups(served):
                self._rerow(served)
        elif name.endswith("/trace"):
            self.traces.add(("", served.ws.root, name[:-len("/trace")]))
        elif PLAIN_NAME.fullmatch(name):
            self._read_record(served, name)

    def workspace(self, root: Path) -> Workspace:
        return self.served[root].ws

    # -- what a view does with a row (live/source.py) ---------------------------------------

    def gather(self, row: SessionRow) -> Gathered | None:
        return timeline.gather(self.workspace(row.root), row)

    def act(self, row: SessionRow, what: str, now: float) -> str:
        return act_on(self.workspace(row.root), row, what, now)
