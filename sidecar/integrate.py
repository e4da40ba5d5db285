"""`sidecar integrate`: route a host's hooks through `sidecar emit`, by absolute path.

Merging keeps every other setting and hook exactly; entries sidecar wrote before (recognised
by their command) are replaced, so running it again is harmless and upgrades old entries;
`--uninstall` removes only sidecar's own.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import orjson

from . import jsonfile
from .kinds import SidecarError

CLAUDE_EVENTS = ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd"]
CODEX_EVENTS = ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd"]
CODEX_SHORT_TIMEOUT = {"session_end": 3, "interrupt": 3}  # Codex clamps these
CODEX_DEFAULT_TIMEOUT = 600
BLOCK_START = "# >>> sidecar integrate codex: trust for sidecar's hooks (managed; do not edit)"
BLOCK_END = "# <<< sidecar integrate codex"


class IntegrateError(SidecarError):
    """The host's configuration cannot be changed safely; nothing was written."""


def emit_command(sidecar: Path, source: str) -> str:
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


def _load_json(path: Path) -> dict[str, Any]:
    try:
        data = jsonfile.read_json(path)
    except FileNotFoundError:
        return {}
    except ValueError as exc:
        raise IntegrateError(f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(data, dict):
        raise IntegrateError(f"{path} does not hold a JSON object; fix it first")
    return data


def merge_hooks(settings: dict[str, Any], events: list[str], command: str | None,
                matcher: str | None, path: Path) -> dict[str, Any]:
    """Remove sidecar's handlers from `settings["hooks"]`; add one group per event if `command`."""
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise IntegrateError(f"{path}: `hooks` is not an object; fix it first")
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                handlers = [h for h in group["hooks"] if not is_ours(h)]
                if not handlers and group["hooks"]:
                    continue  # a group that held only sidecar's handler goes with it
                kept.append({**group, "hooks": handlers})
            else:
                kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if command is not None:
        for event in events:
            ours: dict[str, Any] = {"hooks": [{"type": "command", "command": command}]}
            if matcher is not None:
                ours = {"matcher": matcher, **ours}
            hooks.setdefault(event, []).append(ours)
    if hooks:
        settings["hooks"] = hooks
    else:
        settings.pop("hooks", None)
    return settings


def _save_json(path: Path, data: dict[str, Any]) -> bool:
    new = orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"
    if path.exists() and path.read_bytes() == new:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    jsonfile.write_bytes_atomic(path, new)
    return True


def claude_code(settings_path: Path, sidecar: Path, uninstall: bool = False) -> bool:
    """Write (or remove) the hooks in a Claude Code settings file; True if it changed."""
    settings = _load_json(settings_path)
    if uninstall and not settings:
        return False
    command = None if uninstall else emit_command(sidecar, "claude-code")
    return _save_json(settings_path, merge_hooks(settings, CLAUDE_EVENTS, command, "*", settings_path))


# -- Codex --------------------------------------------------------------------------------


def snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def codex_trust_hash(event: str, group: dict[str, Any], handler: dict[str, Any]) -> str:
    """The hash Codex expects in `hooks.state` before it runs a handler."""
    event_name = snake(event)
    normal: dict[str, Any] = {
        "type": handler.get("type", "command"),
        "command": handler["command"],
        "timeout": handler.get("timeout", CODEX_DEFAULT_TIMEOUT),
        "async": handler.get("async", False),
    }
    if event_name in CODEX_SHORT_TIMEOUT:
        normal["timeout"] = min(normal["timeout"], CODEX_SHORT_TIMEOUT[event_name])
    if "statusMessage" in handler:
        normal["statusMessage"] = handler["statusMessage"]
    body: dict[str, Any] = {"event_name": event_name, "hooks": [normal]}
    if "matcher" in group:
        body["matcher"] = group["matcher"]
    digest = hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return f"sha256:{digest}"


def codex_trust_entries(hooks_path: Path, settings: dict[str, Any]) -> dict[str, str]:
    """Trust keys and hashes for sidecar's handlers, at their positions in the file."""
    canonical = os.path.realpath(hooks_path)
    entries = {}
    for event, groups in settings.get("hooks", {}).items():
        for g, group in enumerate(groups if isinstance(groups, list) else []):
            for h, handler in enumerate(group.get("hooks", []) if isinstance(group, dict) else []):
                if is_ours(handler):
                    key = f"{canonical}:{snake(event)}:{g}:{h}"
                    entries[key] = codex_trust_hash(event, group, handler)
    return entries


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def rewrite_codex_config(config_path: Path, entries: dict[str, str]) -> bool:
    """Replace sidecar's managed block of trust entries (and make sure hooks are enabled)."""
    try:
        text = config_path.read_text()
    except FileNotFoundError:
        text = ""
    pattern = re.compile(re.escape(BLOCK_START) + r".*?" + re.escape(BLOCK_END) + r"\n?", re.S)
    text = pattern.sub("", text)
    try:
        current = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise IntegrateError(f"{config_path} is not valid TOML ({exc}); fix it first") from None
    if entries:
        features = current.get("features")
        if not isinstance(features, dict) or features.get("hooks") is not True:
            if isinstance(features, dict) and "hooks" in features:
                raise IntegrateError(f"{config_path}: [features] hooks is off; set hooks = true")
            if isinstance(features, dict):
                text = re.sub(r"(?m)^\[features\][^\n]*\n", lambda m: m.group(0) + "hooks = true\n",
                              text, count=1)
            else:
                text = text.rstrip("\n") + ("\n\n" if text.strip() else "") + "[features]\nhooks = true\n"
        lines = [BLOCK_START]
        for key, digest in entries.items():
            lines += [f"[hooks.state.{_toml_string(key)}]", f"trusted_hash = {_toml_string(digest)}"]
        lines.append(BLOCK_END)
        text = text.rstrip("\n") + ("\n\n" if text.strip() else "") + "\n".join(lines) + "\n"
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise IntegrateError(f"{config_path}: cannot add trust entries safely ({exc})") from None
    old = config_path.read_text() if config_path.exists() else None
    if old == text or (old is None and not text.strip()):
        return False
    config_path.parent.mkdir(parents=True, exist_ok=True)
    jsonfile.write_bytes_atomic(config_path, text.encode())
    return True


def codex(codex_home: Path, sidecar: Path, uninstall: bool = False) -> bool:
    """Write (or remove) sidecar's hooks in `$CODEX_HOME/hooks.json` and trust them."""
    hooks_path = codex_home / "hooks.json"
    settings = _load_json(hooks_path)
    command = None if uninstall else emit_command(sidecar, "codex")
    merged = merge_hooks(settings, CODEX_EVENTS, command, None, hooks_path)
    changed = False
    if merged or hooks_path.exists():
        changed = _save_json(hooks_path, merged)
    changed |= rewrite_codex_config(codex_home / "config.toml",
                                    codex_trust_entries(hooks_path, merged))
    return changed
