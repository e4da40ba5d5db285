"""A time zone for the block: the local day a host's figures are counted on depends on it."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def local_zone(tz: str) -> Iterator[None]:
    """This process's local time is `tz` (a POSIX TZ string such as "CET-1", which needs no
    zone files) inside the block, and what it was after."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = tz
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()
