"""The user's global hooks: notify hooks kept in their own config folder (`hooks.json` there)
that every workspace their daemon serves has too, each as a copy named `global.NAME`.

Only the user writes them (`sidecar hooks add --global`, `sidecar notify setup`), and only a
notice can be one: a resume or a command acts on a workspace's own files and prompts, so it
stays the workspace's. The leader of each workspace keeps its copies equal to them (`Copies`):
a copy is added, changed and removed as its global hook is, keeping its own history and the
transitions it told (`recentNotices`), so `hooks history global.NAME` is that workspace's.

What a copy holds counts for nothing by itself: it fires only where its definition is one the
user trusted as a global hook (trust.py, base/trustcheck.py), so a workspace's files can
neither add a global hook nor change what one does (and the next step writes it back as it
should be). The file is read as its owner's own (owner.read_owned): a root daemon gives a
user's workspace that user's global hooks, and a file others may write counts for nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from sidecar import jsonfile, layout, locks
from sidecar.base.trustcheck import GLOBAL_PREFIX, definition_of, global_id
from sidecar.base.wslog import WorkspaceLog
from sidecar.followups.model import Hook, HooksDoc, HooksError, parse
from sidecar.followups.notify.notices import RECENT
from sidecar.followups.notify.targets import Notify
from sidecar.followups.store import HookStore, HooksView
from sidecar.owner import CannotActAsOwner, config_home_of, owner_uid, read_owned

T = TypeVar("T")

FILE = "hooks.json"  # in the user's config folder
MAX_ID = 64 - len(GLOBAL_PREFIX)  # a copy's id is a hook id too: at most 64 characters


def path(home: Path | None = None) -> Path:
    return (home or layout.config_home()) / FILE


def copy_id(hook_id: str) -> str:
    return GLOBAL_PREFIX + hook_id


def misfit(hook: Hook) -> str | None:
    """Why a hook cannot be global (None: it can)."""
    if not isinstance(hook.action, Notify):
        return "only a notify hook (--notify TARGET) can be global: a resume or a command " \
               "acts on a workspace's own files, so it is added in that workspace"
    if len(hook.id) > MAX_ID:
        return f"a global hook's name is at most {MAX_ID} characters"
    return None


class GlobalStore:
    """The user's global hooks file, changed as a workspace's HookStore changes hooks.json:
    read, edited and written whole under a lock; written private to its owner (a target
    holds secrets)."""

    def __init__(self, home: Path | None = None) -> None:
        self.path = path(home)

    def read_file(self) -> HooksDoc:
        """The global hooks; FileNotFoundError where there are none, HooksError if broken."""
        try:
            return parse(jsonfile.read_bytes(self.path))
        except jsonfile.NotARegularFile as exc:
            raise HooksError(str(exc)) from None

    def snapshot(self, now: float) -> HooksView:
        try:
            return HooksView(self.read_file().hooks, [], None)
        except FileNotFoundError:
            return HooksView({}, [], None)
        except HooksError as exc:
            return HooksView({}, [], f"{self.path}: {exc}")

    def change(self, now: float, edit: Callable[[HooksDoc], T]) -> T:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with locks.locked(self.path.with_suffix(".lock")):
            try:
                doc = self.read_file()
            except FileNotFoundError:
                doc = HooksDoc()
            result = edit(doc)
            for hook in doc.hooks.values():
                if why := misfit(hook):
                    raise HooksError(f"{hook.id}: {why}")
            doc.pending = []  # a global hook's firings are queued in each workspace
            jsonfile.write_bytes_atomic(self.path, jsonfile.dumps(doc.to_json()))
            return result


def read_for(uid: int) -> tuple[dict[str, Hook] | None, str | None]:
    """A user's global hooks, by id, as their daemon uses them; (None, why) where their file
    is there but cannot be used (broken, or not theirs alone): copies are then left as
    they are. A hook that cannot be global is left out, and said."""
    where = path(config_home_of(uid))
    data = read_owned(where, uid)
    if data is None:
        if os.path.lexists(where):
            return None, f"{where} is not a regular file that only its owner may write; not used"
        return {}, None
    try:
        hooks = parse(data).hooks
    except HooksError as exc:
        return None, f"{where}: {exc}; the global hooks stay as they were until it is fixed"
    wrong = {k: why for k, h in hooks.items() if (why := misfit(h))}
    return ({k: h for k, h in hooks.items() if k not in wrong},
            "; ".join(f"{where}: {k}: {why}" for k, why in wrong.items()) or None)


def _definition(hook: Hook, hook_id: str) -> tuple[object, ...]:
    return definition_of({**hook.to_json(), "id": hook_id}), hook.name


def _copy(hook: Hook, kept: Hook | None) -> Hook:
    """A workspace's copy of a global hook; what the copy it replaces did (its history, the
    transitions it told) is kept."""
    data = {**hook.to_json(), "id": copy_id(hook.id), "history": [], "lastStatus": None,
            "lastFiredAt": None}
    data.pop(RECENT, None)
    if kept is not None:
        data.update(history=[f.to_json() for f in kept.history], lastStatus=kept.last_status,
                    lastFiredAt=kept.last_fired_at, createdAt=kept.created_at)
        if RECENT in kept.extra:
            data[RECENT] = kept.extra[RECENT]
    return Hook.from_json(data, f"global hook {hook.id}")


def stale(doc: HooksDoc, wanted: dict[str, Hook]) -> bool:
    """Whether the workspace's copies differ from the global hooks."""
    copies = {global_id(k): h for k, h in doc.hooks.items() if global_id(k) is not None}
    return copies.keys() != wanted.keys() or any(
        _definition(copies[k], k) != _definition(h, k) for k, h in wanted.items())


def sync(doc: HooksDoc, wanted: dict[str, Hook]) -> int:
    """Make the workspace's copies the global hooks (an edit of its hooks.json); how many
    changed. The queued notices of a copy removed or switched off go with it."""
    changed = 0
    for hook_id in [k for k in doc.hooks if global_id(k) not in (None, *wanted)]:
        del doc.hooks[hook_id]
        changed += 1
    for hook_id, hook in wanted.items():
        kept = doc.hooks.get(copy_id(hook_id))
        if kept is None or _definition(kept, hook_id) != _definition(hook, hook_id):
            doc.hooks[copy_id(hook_id)] = _copy(hook, kept)
            changed += 1
    if changed:
        doc.drop_orphans()
    return changed


class Copies:
    """Keeps one workspace's copies of its owner's global hooks, as a step of its leader:
    looked at when the global file or hooks.json changed (one stat of the global file a
    step), written only where they differ."""

    def __init__(self, store: HookStore, log: WorkspaceLog) -> None:
        self.store = store
        self.log = log
        self.uid: int | None = None
        self.seen: object = None  # the files' state when the copies were last found right
        self.said: str | None = None  # why the global file is not used, once said
        self.failed: str | None = None  # why the last step failed, once said (the caller's)

    def step(self, now: float) -> None:
        uid = self._owner()
        if uid is None:
            return
        state = self.store.current(now)
        seen = (jsonfile.signature(path(config_home_of(uid))), id(state), state.signature)
        if seen == self.seen:
            return
        wanted, why = read_for(uid)
        if why != self.said and why is not None:
            self.log.warning("%s", why)
        self.said = why
        if wanted is not None and stale(state.doc, wanted):
            if self.store.change(now, lambda doc: sync(doc, wanted)):
                self.log.info("global hooks taken up: %s", ", ".join(map(copy_id, wanted)) or "none")
            state = self.store.current(now)
            seen = (seen[0], id(state), state.signature)
        self.seen = seen

    def _owner(self) -> int | None:
        """Whose global hooks the workspace has: its owner's, where this daemon acts for them
        (none where it cannot)."""
        if self.uid is None:
            try:
                uid = owner_uid(self.store.ws)
            except (CannotActAsOwner, OSError):
                return None
            if uid != os.geteuid() and os.geteuid() != 0:
                return None
            self.uid = uid
        return self.uid
