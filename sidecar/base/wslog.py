"""The daemon's log of one workspace: every line it writes begins with the workspace's root
(`/path/to/ws: leading (instance …)`), which `sidecar logs` and people grep for."""

from __future__ import annotations

import logging
import os
from collections.abc import MutableMapping
from typing import Any


class WorkspaceLog(logging.LoggerAdapter[logging.Logger]):
    """The `sidecar` logger, its lines prefixed by one workspace's root."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(logging.getLogger("sidecar"), {"workspace": str(root)})
        # The root goes into the format string: a `%` in a path is a literal one.
        self.prefix = str(root).replace("%", "%%") + ": "

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        return self.prefix + str(msg), kwargs
