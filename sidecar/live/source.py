"""What a live view (`top`, the web view) reads its sessions from: this machine's workspaces
(live/feed.py, from the files' own change events) or every machine's (the fleet, through
Redis). One shape, so that each view is written once, whatever it shows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from sidecar.live.timeline import Gathered
from sidecar.views.sessions import RowKey, SessionRow


class RowSource(Protocol):
    """Every session a view shows, kept up to date.

    `follow(on_change)` starts watching: `on_change` is called from another thread when
    something changed, and the view then calls `apply()` on its own thread, which reads what
    changed and says whether any row did. `version` grows with every change of `rows`."""

    rows: dict[RowKey, SessionRow]
    errors: dict[str, str]  # what cannot be read (or reached), by where
    version: int
    traces: set[RowKey]  # sessions whose timeline grew at the last apply

    def load(self) -> None: ...

    def follow(self, on_change: Callable[[], None]) -> None: ...

    def apply(self) -> bool: ...

    def stop(self) -> None: ...

    def gather(self, row: SessionRow) -> Gathered | None:
        """The session's timeline and follow-up logs; None where they are not at hand (a
        session of another machine: its files stay there)."""
        ...

    def act(self, row: SessionRow, what: str, now: float) -> str:
        """`cancel` or `fire` the session's waiting follow-up (`fire`: else retry its failed
        one), on the machine that owns it; what was done, in words. SidecarError or OSError
        when it cannot be done."""
        ...
