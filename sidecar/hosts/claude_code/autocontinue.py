"""Claude Code's own switch for its usage-limit auto-resume ("Continue automatically at usage
limit" in its /config), read where the user keeps it.

2.1.332 reads `autoContinueAtUsageLimit` (on unless set) from its managed settings first, then
its `--settings` flag, then the user's `~/.claude/settings.json`; never from a project's files.
Turned off, a refused turn opens its "What do you want to do?" dialog instead of arming its own
resume, and no hook says so: sidecar reads the switch when a turn hits the limit. (A `--settings`
flag of one run is not seen: it is in no file sidecar knows.)
"""

from __future__ import annotations

import json
from pathlib import Path

from sidecar.hosts.base import Reader

KEY = "autoContinueAtUsageLimit"
USER = "~/.claude/settings.json"  # as the user knows it, whoever's home it is in
MANAGED = Path("/etc/claude-code/managed-settings.json")  # Linux's; it outranks the user's


def switched_off(home: Path, read: Reader) -> str | None:
    """The settings file that turns Claude Code's own resume off, in words; None where it is
    on (the default) or no file that says so can be read."""
    for path in (MANAGED, home / ".claude" / "settings.json"):
        try:
            data = json.loads(read(path) or b"{}")
        except ValueError:
            continue  # a broken file: Claude Code too reads nothing from it
        value = data.get(KEY) if isinstance(data, dict) else None
        if isinstance(value, bool):
            return None if value else f"{KEY} is off in {path if path == MANAGED else USER}"
    return None
