"""What runs beside the daemon where config.toml asks for it: the fleet's publisher (`[fleet]`)
and the web view (`[web]`). Each is started at most once and stopped after the workspaces, so
the fleet sees this machine stop at once and the browsers' streams end. Neither module loads
anything beyond the standard library unless it is configured."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from sidecar.fleet import start as fleet
from sidecar.web import hosted as web


class Companion(Protocol):
    def stop(self) -> None: ...


class Companions:
    def __init__(self, fleet_table: Mapping[str, Any], roots: Callable[[], list[Path]],
                 stale: Callable[[], float | None]) -> None:
        # Publishes from the start: a workspace served later is published as it is served.
        self.running: list[Companion] = [p for p in (fleet.publisher(fleet_table, roots, stale),) if p]

    def serve_web(self, table: Mapping[str, Any], roots: list[Path], stale: float) -> None:
        """The view of the workspaces served now (`[web]`: read at start only)."""
        served = web.start(table, roots, stale)
        if served is not None:
            self.running.append(served)

    def stop(self) -> None:
        for companion in self.running:
            companion.stop()
