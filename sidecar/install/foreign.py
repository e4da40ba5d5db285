"""A runtime this machine's sidecar did not write: found by `sidecar init`, moved aside.

A cloned repository can ship `.context/runtime/` (a `git add -f` defeats its `.gitignore`):
queued firings, claims, run records, logs, instance files, events. None of that was written
here, so none of it may make sidecar act. `init` of a folder that was not registered on this
machine (or whose runtime git tracks) moves such state into `.context/runtime.untrusted-<time>/`
before it initialises, and says what it found. Session records and bindings (dotcontext's
schema) are data, not permission: they stay, so sessions left active are still completed.
The hooks' definitions are carried over without their queue and history, untrusted: trust
is by content, for this machine's user (trust.py), so none of them fires until `sidecar
hooks trust` has shown it and the user said yes. A shipped `workspace-id` is moved too: the
workspace gets an id of its own, which nothing approved elsewhere names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from sidecar import jsonfile, safedir
from sidecar.base.errors import SidecarError
from sidecar.base.timeutil import iso
from sidecar.followups import trust
from sidecar.followups.model import Hook, HooksDoc, parse
from sidecar.followups.seeds import default_doc
from sidecar.install import gitindex
from sidecar.layout import Workspace

MOVED_FILES = ("hooks.json", "hooks.last-good.json", "workspace-id")
MOVED_FOLDERS = ("inbox", "instances", "locks", "logs")


@dataclass
class Found:
    """What a runtime held that could make sidecar act."""

    what: list[str] = field(default_factory=list)
    hooks: dict[str, Hook] = field(default_factory=dict)


def tracked_by_git(ws: Workspace) -> bool:
    """Whether git tracks files under `.context/runtime/` (read from its index as bytes)."""
    return gitindex.tracks_under(ws.root, ".context/runtime/")


def _hooks_file(path: Path, found: Found) -> None:
    try:
        doc = parse(jsonfile.read_bytes(path))
    except FileNotFoundError:
        return
    except (OSError, SidecarError) as exc:
        found.what.append(f"{path.name} that cannot be used ({exc})")
        return
    commands = [h for h in doc.hooks.values() if not isinstance(h.action, str)]
    if doc.hooks or doc.pending:
        shown = "; ".join(f"{h.id}: {trust.described(h)}" for h in doc.hooks.values())
        found.what.append(f"{path.name} with {len(doc.hooks)} hook(s), {len(commands)} of them "
                          f"commands or notices" + (f" ({shown})" if shown else "") +
                          f", and {len(doc.pending)} queued firing(s)")
    if path.name == "hooks.json":
        found.hooks = doc.hooks


def _folder(path: Path, found: Found) -> None:
    try:
        with safedir.opened(path) as fd:
            names = [n for n in os.listdir(fd) if n != "rejected"]
    except FileNotFoundError:
        return
    if names:
        found.what.append(f"{path.name}/ with {len(names)} file(s)")


def inspect(ws: Workspace) -> Found:
    found = Found()
    for name in MOVED_FILES[:2]:
        _hooks_file(ws.runtime / name, found)
    if os.path.lexists(ws.identity_file):
        found.what.append(f"{ws.identity_file.name}, an identity this machine did not give it")
    for name in MOVED_FOLDERS:
        _folder(ws.runtime / name, found)
    return found


def set_aside(ws: Workspace, registered_before: bool, now: float) -> tuple[Found, Path] | None:
    """Move state this machine's sidecar did not write out of the runtime; what was found and
    where it went, or None when there was nothing to move."""
    if not os.path.lexists(ws.runtime) or (registered_before and not tracked_by_git(ws)):
        return None
    found = inspect(ws)
    if not found.what:
        return None
    aside = ws.context / f"runtime.untrusted-{iso(now).replace(':', '').replace('-', '')}"
    with safedir.opened(ws.context) as context, safedir.opened(ws.runtime) as runtime:
        os.mkdir(aside.name, 0o700, dir_fd=context)
        with safedir.opened(aside) as target:
            for name in (*MOVED_FILES, *MOVED_FOLDERS):
                try:
                    os.rename(name, name, src_dir_fd=runtime, dst_dir_fd=target)
                except FileNotFoundError:
                    continue
    _carry_over(ws, found.hooks, now)
    return found, aside


def _carry_over(ws: Workspace, hooks: dict[str, Hook], now: float) -> None:
    """A fresh hooks.json: the seeded hooks, with the shipped definitions over them, each
    without its queue, status or history."""
    if not hooks:
        return
    doc: HooksDoc = default_doc(now)
    for hook_id, hook in hooks.items():
        hook.last_status, hook.last_fired_at, hook.history = None, None, []
        doc.hooks[hook_id] = hook
    data = jsonfile.dumps(doc.to_json())
    safedir.make_dirs(ws.runtime)
    jsonfile.write_bytes_atomic(ws.hooks_file, data)
    jsonfile.write_bytes_atomic(ws.runtime / "hooks.last-good.json", data)
