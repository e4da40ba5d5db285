"""A resume about to start, checked against the budgets with the figures as they are now.

At fire time (followups/fire.py, once the scheduler said fire) a resume follow-up is held back
where it would start over budget (followups/budget.py): skipped, `over budget ($5.12 of $5.00
this session)` in its history, and the `over-budget` notice queued once per episode (a session
for the session budget, a local day for a day budget). Commands and notices are never held:
they spend nothing of an agent's. The figures are read fresh: the session's record (`cost`,
written at each turn end) and every registered workspace's ledger (`runtime/usage.json`'s
`days`), so a budget raised in config.toml counts at the very next firing.

Each check is noted in `runtime/budget.json` (the last few), which `status` and `doctor`
read to say what a budget holds back, and where a cost unknown held nothing.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sidecar import jsonfile
from sidecar.base.errors import SidecarError
from sidecar.base.timeutil import iso
from sidecar.config import RegistryError, load_registry
from sidecar.followups.budget import Budget, Spent, Verdict, session_spent, verdict
from sidecar.followups.decide import Decision
from sidecar.followups.model import QueueEntry
from sidecar.layout import Workspace
from sidecar.sessions import tokens
from sidecar.vocabulary import FollowUpEvent
from sidecar.vocabulary import Verdict as Fire

if TYPE_CHECKING:
    from sidecar.followups.fire import FollowUps

NOTES = "budget.json"  # in the workspace's runtime folder
KEPT = 20  # checks noted


def local_day(now: float) -> str:
    """The local day of `now`, as the ledgers key their days (YYYY-MM-DD)."""
    return time.strftime("%Y-%m-%d", time.localtime(now))


def day_usd(root: Path, day: str) -> float:
    """What the workspace at `root` spent on `day` by its ledger (0: nothing recorded, or a
    ledger that cannot be read: what is not known holds nothing). The ledger's reader leaves
    out what is not a finite amount of at least 0: a workspace, which its agent can write,
    never takes from what the others spent."""
    found = tokens.ledger(Workspace(root)) or {}
    return float(found.get("days", {}).get(day, {}).get("usd", 0.0))


def day_spend(here: Path, day: str) -> tuple[float, float]:
    """What every registered workspace (and this one, registered or not) spent on `day`, and
    what this one did."""
    try:
        roots = load_registry()
    except RegistryError:
        roots = []  # the others cannot be known: this one's own still counts
    seen = {os.path.realpath(here)}
    mine = day_usd(here, day)
    total = mine
    for root in roots:
        if os.path.realpath(root) not in seen:
            seen.add(os.path.realpath(root))
            total += day_usd(root, day)
    return total, mine


def check(ws: Workspace, budget: Budget, cost: Any, session_key: str, now: float) -> Verdict:
    """The verdict on resuming the session whose record's cost is `cost`, now."""
    day = local_day(now)
    session = session_spent(cost)
    every, mine = day_spend(ws.root, day)
    # A day's spend is the ledgers' priced figures: what this session left unpriced is unknown.
    return verdict(budget, str(ws.root), session_key, day, session,
                   Spent(every, session.unknown), Spent(mine, session.unknown))


def decide(fu: FollowUps, entry: QueueEntry, budget: Budget, now: float) -> Decision:
    """Fire the resume, or skip it as over budget (its over-budget notice queued)."""
    if not budget.any:
        return Decision(Fire.FIRE)
    record = fu.sessions.record(entry.harness_session_id)
    cost = None if record is None else record.sidecar.to_json().get("cost")
    found = check(fu.ws, budget, cost, entry.harness_session_id or f"{entry.host}:{entry.session_id}", now)
    hold = found.hold
    said = hold.reason if hold is not None else found.unknown or "within budget"
    _note(fu, entry, hold is not None, said, now)
    if hold is None:
        if found.unknown is not None:
            fu.log.info("resume %s of %s session %s: %s", entry.hook_id, entry.host,
                        entry.session_id, found.unknown)
        return Decision(Fire.FIRE)
    fu.log.info("resume %s of %s session %s held back: %s", entry.hook_id, entry.host,
                entry.session_id, said)
    try:  # once per episode: notices.add_for_follow_up keys it by the episode alone
        fu.queue.add_follow_up_event(FollowUpEvent.OVER_BUDGET, entry, entry.hook_id, said,
                                     now, hold.episode)
    except (SidecarError, OSError) as exc:
        fu.log.warning("the over-budget notice cannot be queued: %s", exc)
    return Decision(Fire.SKIP, said)


def _note(fu: FollowUps, entry: QueueEntry, held: bool, said: str, now: float) -> None:
    """Add this check to runtime/budget.json (the last KEPT), for status and doctor."""
    path = fu.ws.runtime / NOTES
    try:
        data: Any = jsonfile.read_json(path)
    except (OSError, ValueError, SidecarError):
        data = None
    checks = data.get("checks") if isinstance(data, dict) else None
    kept = [c for c in checks if isinstance(c, dict)] if isinstance(checks, list) else []
    kept.append({"at": iso(now), "day": local_day(now), "hook": entry.hook_id, "host": entry.host,
                 "session": entry.session_id, "held": held, "reason": said})
    try:
        jsonfile.write_json_atomic(path, {"checks": kept[-KEPT:]}, durable=False)
    except (OSError, SidecarError) as exc:  # status will not say it; the history does
        fu.log.warning("cannot note the budget check in %s: %s", path, exc)
