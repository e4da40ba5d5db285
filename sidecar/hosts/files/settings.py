"""`sidecar integrate`: route a host's hooks through `sidecar emit`.

The hosts' JSON settings (Claude Code, Gemini CLI, Codex's hooks.json) share one shape,
`{"hooks": {"<Event>": [{"matcher"?, "hooks": [handler, ...]}]}}`, merged here: every other
setting and hook keeps its content and order; handlers sidecar wrote before (recognised by
their command) are replaced, so running it again is harmless and upgrades old entries;
`--uninstall` removes only sidecar's own. Host-specific parts live in each host's module.
"""

from __future__ import annotations

import copy
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomlkit

from sidecar.hosts.base import IntegrateError
from sidecar.hosts.files import jsonedit, userfile


def emit_command(sidecar: Path | str, source: str) -> str:
    """The hook command: `sidecar` by absolute path, or as given (`sidecar` on PATH)."""
    return f"{shlex.quote(str(sidecar))} emit --source {source}"


def is_ours(handler: Any) -> bool:
    """A handler sidecar wrote, in this version or an older one."""
    if not isinstance(handler, dict) or not isinstance(handler.get("command"), str):
        return False
    try:
        argv = shlex.split(handler["command"])
    except ValueError:
        return False
    return len(argv) >= 2 and os.path.basename(argv[0]) == "sidecar" and argv[1] == "emit"


def load_json(path: Path, comments: bool = False) -> dict[str, Any]:
    """A host's settings (`comments`: `//` and `/* */` allowed, as the host allows them)."""
    text = read_text(path)
    if text is None:
        return {}
    try:
        data = jsonedit.loads(text, comments)
    except jsonedit.JsonEditError as exc:
        raise IntegrateError(f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(data, dict):
        raise IntegrateError(f"{path} does not hold a JSON object; fix it first")
    return data


def load_json_or_empty(path: Path, comments: bool = False) -> dict[str, Any]:
    """A host's settings as `load_json` reads them, or {} where they cannot be read: for a
    check, which says nothing of a file it cannot read."""
    try:
        return load_json(path, comments)
    except IntegrateError:
        return {}


def read_text(path: Path) -> str | None:
    """A user's file, through the user's own links; None if there is none."""
    try:
        data = userfile.read_bytes(path)
        return None if data is None else data.decode()
    except userfile.UserFileError as exc:
        raise IntegrateError(str(exc)) from None
    except UnicodeDecodeError:
        raise IntegrateError(f"{path} is not UTF-8 text; fix it first") from None


def write_text(path: Path, text: str) -> None:
    """A user's file written, as `read_text` reads it; IntegrateError where it cannot be."""
    try:
        userfile.write_bytes(path, text.encode())
    except userfile.UserFileError as exc:
        raise IntegrateError(str(exc)) from None


def merge_hooks(settings: dict[str, Any], events: list[str], command: str | None,
                matcher: str | None, path: Path,
                handler_fields: dict[str, Any] | None = None) -> dict[str, Any]:
    """Remove sidecar's handlers from `settings["hooks"]`; add one group per event if `command`."""
    handler = {"type": "command", "command": command, **(handler_fields or {})}
    group = {"hooks": [handler]} if matcher is None else {"matcher": matcher, "hooks": [handler]}
    added = {event: copy.deepcopy(group) for event in events} if command is not None else {}
    return replace_entries(settings, added, path, _without_ours)


def replace_entries(settings: dict[str, Any], added: dict[str, Any], path: Path,
                    without_ours: Callable[[list[Any]], list[Any]],
                    keep_empty: bool = False) -> dict[str, Any]:
    """Take sidecar's entries out of `settings["hooks"]` (`without_ours`: an event's list less
    them), then add `added` (event: entry). sidecar's go after the user's, so the user's keep
    their places (Codex keys its trust entries by position). An event's list left empty goes
    (with `keep_empty`, not one the user left empty)."""
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise IntegrateError(f"{path}: `hooks` is not an object; fix it first")
    for event in added:
        if not isinstance(hooks.get(event, []), list):
            raise IntegrateError(f"{path}: `hooks.{event}` is not a list; fix it first")
    for event, listed in list(hooks.items()):
        if not isinstance(listed, list) or (keep_empty and not listed):
            continue
        if kept := without_ours(listed):
            hooks[event] = kept
        else:
            del hooks[event]
    for event, entry in added.items():
        hooks.setdefault(event, []).append(entry)
    if hooks:
        settings["hooks"] = hooks
    else:
        settings.pop("hooks", None)
    return settings


def _without_ours(groups: list[Any]) -> list[Any]:
    """An event's groups less sidecar's handlers; a group that held only those goes too."""
    kept = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            handlers = [h for h in group["hooks"] if not is_ours(h)]
            if not handlers and group["hooks"]:
                continue
            kept.append({**group, "hooks": handlers})
        else:
            kept.append(group)
    return kept


def save_json(path: Path, data: dict[str, Any], comments: bool = False) -> bool:
    """Write `data` back into the file, changing only what differs (see jsonedit): every
    other byte, and the file's link and mode, stay as they are. True if it changed."""
    old = read_text(path)
    try:
        new = jsonedit.dumps_new(data) if old is None else jsonedit.rewrite(old, data, comments)
    except jsonedit.JsonEditError as exc:
        raise IntegrateError(f"{path}: {exc}") from None
    if new == old:
        return False
    write_text(path, new)
    return True


def save_toml(path: Path, doc: Any, tidy_end: bool = False) -> bool:
    """Write a tomlkit document back, only if it changed; `tidy_end` drops the blank line
    tomlkit leaves where a table sidecar added at the end was taken out again."""
    text = tomlkit.dumps(doc)
    if tidy_end and text.endswith("\n\n"):
        text = text.rstrip("\n") + "\n"
    old = read_text(path)
    if old == text or (old is None and not text.strip()):
        return False
    write_text(path, text)
    return True


def has_ours(path: Path, comments: bool = False) -> bool:
    """Whether the settings file holds any of sidecar's handlers (an unreadable one: no)."""
    hooks = load_json_or_empty(path, comments).get("hooks")
    if not isinstance(hooks, dict):
        return False
    return any(is_ours(h)
               for groups in hooks.values() if isinstance(groups, list)
               for group in groups if isinstance(group, dict)
               for h in group.get("hooks", []) if isinstance(group.get("hooks"), list))


def write_hooks(path: Path, sidecar: str, source: str, events: list[str], uninstall: bool,
                comments: bool = False, handler_fields: dict[str, Any] | None = None) -> bool:
    """Write (or remove) sidecar's handler for each event, matching every tool (`*`), in one
    settings file; True if it changed. `comments`: the host strips them as it reads."""
    settings = load_json(path, comments)
    if uninstall and not settings:
        return False
    command = None if uninstall else emit_command(sidecar, source)
    merged = merge_hooks(settings, events, command, "*", path, handler_fields)
    return save_json(path, merged, comments)
