"""What `doctor` reports: each finding is fine, a problem (with the command that fixes it),
or a note. The type lives with the hosts (`hosts/base.py`), whose own checks make findings
too; doctor's checks take it from here."""

from __future__ import annotations

from sidecar.hosts.base import Finding, note

__all__ = ["Finding", "note"]
