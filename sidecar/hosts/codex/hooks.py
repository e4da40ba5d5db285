"""Codex's hooks: written into `$CODEX_HOME/hooks.json` and trusted in its `config.toml`.

Codex runs a hook only if `config.toml` holds a trust entry with the hash Codex computes for
it, and skips it silently otherwise. So the hashes come from Codex itself where it can be run
(`codex app-server`, JSON-RPC `hooks/list`), and only otherwise from our own computation of
Codex 0.169.0's normalisation (SessionEnd and Interrupt timeouts clamped to 1 s).

`config.toml` is the user's file: it is edited with tomlkit, which keeps comments and layout,
and only sidecar's own keys change. Which keys those are (the trust entries, and
`features.hooks` if sidecar set it) is remembered in sidecar's own folder (`owned`).

This is integration code: `codex.py` imports it only when asked to integrate or check.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import tomlkit

from sidecar.hosts.base import Finding
from sidecar.hosts.codex.config_toml import disable_hooks, enable_hooks, load_config, set_trust
from sidecar.hosts.files import owned
from sidecar.hosts.files.settings import emit_command, is_ours, load_json, merge_hooks, save_json, save_toml

EVENTS = ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd", "PermissionRequest"]
SHORT_TIMEOUT = {"session_end": 1, "interrupt": 1}  # Codex 0.169.0 clamps these before hashing
DEFAULT_TIMEOUT = 600
ASK_TIMEOUT = 30.0  # seconds for `codex app-server` to answer hooks/list


def snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def computed_hash(event: str, group: dict[str, Any], handler: dict[str, Any]) -> str:
    """The trust hash as Codex 0.169.0 computes it; used only where Codex cannot be asked."""
    event_name = snake(event)
    normal: dict[str, Any] = {
        "type": handler.get("type", "command"),
        "command": handler["command"],
        "timeout": handler.get("timeout", DEFAULT_TIMEOUT),
        "async": handler.get("async", False),
    }
    if event_name in SHORT_TIMEOUT:
        normal["timeout"] = min(normal["timeout"], SHORT_TIMEOUT[event_name])
    if "statusMessage" in handler:
        normal["statusMessage"] = handler["statusMessage"]
    body: dict[str, Any] = {"event_name": event_name, "hooks": [normal]}
    if "matcher" in group:
        body["matcher"] = group["matcher"]
    return "sha256:" + hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def our_handlers(hooks_path: Path, settings: dict[str, Any]) -> dict[str, str]:
    """Trust key -> computed hash for each of sidecar's handlers, at its place in the file."""
    canonical = os.path.realpath(hooks_path)  # Codex resolves symlinks before building keys
    found = {}
    hooks = settings.get("hooks")
    for event, groups in hooks.items() if isinstance(hooks, dict) else ():
        for g, group in enumerate(groups if isinstance(groups, list) else []):
            handlers = group.get("hooks", []) if isinstance(group, dict) else []
            for h, handler in enumerate(handlers if isinstance(handlers, list) else []):
                if is_ours(handler):
                    found[f"{canonical}:{snake(event)}:{g}:{h}"] = computed_hash(event, group, handler)
    return found


def ask(codex: str | None, cwd: Path) -> list[dict[str, Any]] | None:
    """Codex's own list of hooks (`key`, `currentHash`, `trustStatus`, ...), or None if it
    cannot be asked (not installed, too old, or no answer in time)."""
    if codex is None:
        return None
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"clientInfo": {"name": "sidecar", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]
    try:
        proc = subprocess.Popen([codex, "app-server"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd)
    except OSError:
        return None
    with proc:  # closes the pipes, whatever happens
        try:
            assert proc.stdin is not None
            proc.stdin.write(b"".join(json.dumps(r).encode() + b"\n" for r in requests))
            proc.stdin.flush()
            return _read_answer(proc, 2)
        except (OSError, ValueError):
            return None
        finally:
            proc.kill()


def _read_answer(proc: subprocess.Popen[bytes], request_id: int) -> list[dict[str, Any]] | None:
    import selectors
    import time

    assert proc.stdout is not None
    deadline = time.monotonic() + ASK_TIMEOUT
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(deadline - time.monotonic()):
                return None
            line = proc.stdout.readline()
            if not line:
                return None
            message = json.loads(line)
            if message.get("id") != request_id:
                continue  # notifications (config warnings, status) come first
            data = (message.get("result") or {}).get("data") or []
            return [hook for entry in data for hook in entry.get("hooks", [])]
    return None


# -- the integration ---------------------------------------------------------------------


def integrate(codex_home: Path, sidecar: Path | str, uninstall: bool = False) -> bool:
    """Write (or remove) sidecar's hooks and their trust; True if anything changed."""
    hooks_path, config_path = codex_home / "hooks.json", codex_home / "config.toml"
    place = os.path.realpath(codex_home)
    mine = owned.read("codex", place)
    config = load_config(config_path)  # refuse a broken config before touching anything
    settings = load_json(hooks_path)
    existed = hooks_path.exists()
    # Trust entries sidecar wrote before: as remembered, or (after an upgrade from a version
    # that did not remember) those of its handlers where they stand in the file now.
    old_keys = sorted(set(mine.get("trustKeys", [])) | set(our_handlers(hooks_path, settings)))
    command = None if uninstall else emit_command(sidecar, "codex")
    merged = merge_hooks(settings, EVENTS, command, None, hooks_path)
    if uninstall:
        return _uninstall(hooks_path, config_path, config, merged, old_keys, mine, place)
    set_hooks = enable_hooks(config, config_path) or bool(mine.get("setFeaturesHooks"))
    changed = save_json(hooks_path, merged)
    changed |= save_toml(config_path, config)  # Codex lists hooks only once they are on
    entries = our_handlers(hooks_path, merged)
    answers = {h.get("key"): h for h in ask(shutil.which("codex"), codex_home.parent) or []}
    entries = {key: str(answers[key].get("currentHash") or digest) if key in answers else digest
               for key, digest in entries.items()}
    set_trust(config, old_keys, entries)
    changed |= save_toml(config_path, config)

    def remember(record: dict[str, Any]) -> None:
        record["trustKeys"] = sorted(entries)
        record["setFeaturesHooks"] = set_hooks
        record["createdHooksFile"] = bool(record.get("createdHooksFile")) or not existed

    owned.change("codex", place, remember)
    return changed


def _uninstall(hooks_path: Path, config_path: Path, config: tomlkit.TOMLDocument,
               merged: dict[str, Any], old_keys: list[str], mine: dict[str, Any],
               place: str) -> bool:
    changed = False
    if hooks_path.exists():
        if not merged and mine.get("createdHooksFile"):
            hooks_path.unlink()  # sidecar created it and nothing else is in it
            changed = True
        else:
            changed |= save_json(hooks_path, merged)
    set_trust(config, old_keys, {})
    if mine.get("setFeaturesHooks"):
        disable_hooks(config)
    if config_path.exists():
        changed |= save_toml(config_path, config, tidy_end=True)
    owned.change("codex", place, lambda record: record.clear())
    return changed


def trust_finding(cwd: Path) -> Finding:
    """Codex skips an untrusted hook silently: ask Codex itself which of ours it trusts."""
    answers = ask(shutil.which("codex"), cwd)
    if answers is None:
        return Finding(True, "Codex's trust of sidecar's hooks not checked (`codex` is not on PATH to ask)")
    found = [str(h.get("key")) for h in answers
             if is_ours({"command": h.get("command")}) and h.get("trustStatus") != "trusted"]
    if found:
        return Finding(False, "Codex does not trust sidecar's hooks "
                              f"({', '.join(k.rsplit(':', 3)[1] for k in found)}): "
                              "it skips them silently", "sidecar integrate codex")
    return Finding(True, "Codex trusts every sidecar hook")
