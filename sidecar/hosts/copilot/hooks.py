"""Copilot CLI's hooks, written into its JSON (integration code: imported only to integrate
or check, never by the daemon).

Copilot's shape differs from the other hosts' (`files/settings.py`): each event holds a flat list
of handlers, `{"type": "command", "bash": "<command>", "timeoutSec": N}`, with no matcher
groups; a repository's hook file also says `"version": 1`. Every other setting and handler
keeps its bytes and order (through `settings.load_json`/`save_json`); sidecar's handlers
(recognised by their command) are replaced, so running it again upgrades them, and
`--uninstall` takes out only those.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sidecar.hosts.base import IntegrateError
from sidecar.hosts.files import owned, settings

VERSION = 1  # the repository hook file's format, as Copilot CLI 1.0.102 reads it


def is_ours(handler: Any) -> bool:
    return isinstance(handler, dict) and settings.is_ours({"command": handler.get("bash")})


def command(sidecar: str, source: str, event: str) -> str:
    """The hook command: Copilot's payloads name no event, so the command says which."""
    return f"{settings.emit_command(sidecar, source)} --event {event}"


def merge(data: dict[str, Any], handlers: dict[str, dict[str, Any]] | None, path: Path) -> dict[str, Any]:
    """Take sidecar's handlers out of `data["hooks"]`, then add `handlers` (event: handler)
    after the user's own. An event list left empty by taking ours out goes; one the user
    left empty stays."""
    return settings.replace_entries(data, handlers or {}, path,
                                    lambda listed: [h for h in listed if not is_ours(h)],
                                    keep_empty=True)


def write(path: Path, sidecar: str, source: str, events: list[str], timeout: int,
          uninstall: bool, *, repo: bool) -> bool:
    """Write (or take out) sidecar's handler for each event in one file; True if it changed.
    `repo`: a repository's hook file, which needs its `version`."""
    data = settings.load_json(path, comments=True)
    if uninstall and not data:
        return False
    if repo and not uninstall and data.get("version", VERSION) != VERSION:
        raise IntegrateError(f"{path}: version {data.get('version')!r} is not {VERSION}, "
                             "which this Copilot CLI reads; fix it first")
    handlers = None if uninstall else {
        event: {"type": "command", "bash": command(sidecar, source, event), "timeoutSec": timeout}
        for event in events}
    if repo and not uninstall and "version" not in data:
        data = {"version": VERSION, **data}
    merged = merge(data, handlers, path)
    if repo and uninstall and set(merged) == {"version"} and created_by_sidecar(path):
        merged = {}  # only what sidecar wrote was left: the emptied file is removed after
    return settings.save_json(path, merged, comments=True)


def created_by_sidecar(path: Path) -> bool:
    return bool(owned.read(owned.CREATED, str(path)).get("created"))


def has_ours(path: Path) -> bool:
    """Whether the file holds any of sidecar's handlers (an unreadable one: no)."""
    hooks = settings.load_json_or_empty(path, comments=True).get("hooks")
    return isinstance(hooks, dict) and any(
        is_ours(h) for listed in hooks.values() if isinstance(listed, list) for h in listed)
