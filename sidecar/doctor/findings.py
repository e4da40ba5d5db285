"""What `doctor` reports: each finding is fine, a problem (with the command that fixes it),
or a note (worth knowing, never a failure: a host installed here that the user does not use)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Finding:
    ok: bool
    what: str
    fix: str = ""
    note: bool = False  # shown as a note; counts as ok


def note(what: str, fix: str = "") -> Finding:
    return Finding(True, what, fix, note=True)
