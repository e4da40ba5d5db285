"""`sidecar sessions --fleet`: every machine's sessions, as the fleet's Redis holds them
(fleet/read.py), with a MACHINE column.

A machine that stopped publishing is said on stderr ("laptop: unreachable since 22:41:13 (last
heard 22:41:07)"); its sessions are listed as it last published them, marked unreachable, and
never count as active. The exit code fails only when Redis itself cannot be read.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from sidecar.base import words
from sidecar.base.escapes import escaped
from sidecar.base.exitcodes import FAILURE, OK
from sidecar.base.version import __version__
from sidecar.cli.jsonout import print_json
from sidecar.cli.sessions import (
    DEFAULT_LIMIT,
    SESSIONS_VERSION,
    last_activity,
    render,
    stale_after,
    table_width,
)
from sidecar.fleet.read import REDIS, FleetFeed
from sidecar.views import rowjson
from sidecar.views.activity import State
from sidecar.views.sessions import SessionRow


def row_json(row: SessionRow, feed: FleetFeed, stale: float | None) -> dict[str, Any]:
    return {"machine": row.machine, "reachable": row.reachable, **rowjson.to_json(row, stale)}


def listed_fleet(feed: FleetFeed, active: bool, window: float | None, limit: int | None,
                 json_out: bool) -> int:
    """Print every machine's sessions (what cannot be read or reached on stderr); the exit code."""
    try:
        feed.load()
    finally:
        feed.stop()
    now = time.time()
    rows = sorted(feed.rows.values(), key=last_activity, reverse=True)
    rows = [r for r in rows if (not active or (r.activity.state != State.ENDED and r.reachable))
            and (window is None or last_activity(r) >= now - window)]
    errors = [feed.errors[key] for key in sorted(feed.errors)]
    for error in errors:
        sys.stderr.write(f"sidecar: {escaped(error)}\n")
    sys.stderr.flush()
    stale = stale_after()
    if json_out:
        shown = rows if limit is None else rows[:limit]
        print_json({"version": SESSIONS_VERSION, "sidecar": __version__,
                    "sessions": [row_json(r, feed, stale) for r in shown], "total": len(rows),
                    "machines": feed.machines, "errors": errors})
    else:
        sys.stdout.write(render(rows[:limit or DEFAULT_LIMIT], len(rows), now, stale,
                                words.style_for(), table_width(), set(feed.unreachable)))
    sys.stdout.flush()
    return FAILURE if REDIS in feed.errors else OK
