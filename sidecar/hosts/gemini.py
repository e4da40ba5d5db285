"""`sidecar integrate gemini`: Gemini CLI's hooks, in its settings.json.

By default the user's `~/.gemini/settings.json` (Gemini has no per-user file inside a
project), calling `sidecar` by absolute path; with `--project`, the project's
`.gemini/settings.json`, which teams commit, calling `sidecar` from PATH so that the command
resolves on every machine. Gemini runs hooks only in folders it trusts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sidecar.hosts.settings import IntegrateError, emit_command, load_json, merge_hooks, save_json

EVENTS = ["SessionStart", "SessionEnd", "BeforeAgent", "AfterAgent", "AfterTool"]
HANDLER = {"name": "sidecar", "timeout": 5000}  # ms; emit returns in tens of milliseconds


def user_settings(home: Path) -> Path:
    return home / ".gemini" / "settings.json"


def project_settings(root: Path) -> Path:
    return root / ".gemini" / "settings.json"


def integrate(settings_path: Path, sidecar: Path | str, uninstall: bool = False) -> bool:
    """Write (or remove) sidecar's hooks in one Gemini settings file; True if it changed."""
    settings = load_json(settings_path, comments=True)  # Gemini strips comments as it reads
    if uninstall and not settings:
        return False
    command = None if uninstall else emit_command(sidecar, "gemini")
    merged = merge_hooks(settings, EVENTS, command, "*", settings_path, HANDLER)
    return save_json(settings_path, merged, comments=True)


def trusted(root: Path, home: Path) -> bool:
    """Whether Gemini trusts the folder, so that it runs hooks there at all."""
    try:
        settings = load_json(user_settings(home), comments=True)
    except IntegrateError:
        settings = {}
    security = settings.get("security")
    folder_trust = security.get("folderTrust") if isinstance(security, dict) else None
    if isinstance(folder_trust, dict) and folder_trust.get("enabled") is False:
        return True
    if os.environ.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return True
    try:
        rules: Any = load_json(home / ".gemini" / "trustedFolders.json")
    except IntegrateError:
        return False
    target = Path(os.path.realpath(root))
    for folder, level in rules.items():
        base = Path(os.path.realpath(folder))
        if level == "TRUST_PARENT":
            base = base.parent
        if level in ("TRUST_FOLDER", "TRUST_PARENT") and (target == base or base in target.parents):
            return True
    return False
