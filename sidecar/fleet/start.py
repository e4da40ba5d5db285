"""The daemon's one call into the fleet: start publishing where `[fleet]` asks, and import
redis-py and the publisher only then (a daemon without a fleet loads neither)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sidecar.base.errors import SidecarError
from sidecar.fleet.settings import resolve

if TYPE_CHECKING:
    from sidecar.fleet.publish import Publisher

log = logging.getLogger("sidecar")


def publisher(table: Mapping[str, Any], roots: Callable[[], list[Path]],
              stale: Callable[[], float | None]) -> Publisher | None:
    """The publisher of the sessions of the workspaces `roots()` names, started; None where
    `[fleet]` asks for none, or its URL cannot be used (said in the log)."""
    settings = resolve(table)
    if settings is None:
        return None
    from sidecar.fleet.publish import Publisher

    try:
        return Publisher(settings, roots, stale).start()
    except SidecarError as exc:  # a URL redis-py cannot read (ConfigError)
        log.error("fleet: not publishing: %s", exc)
        return None
