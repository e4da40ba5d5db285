"""What a stretch of days cost, per workspace and across them: the foot of `sessions --since`.

Each session's record keeps its cost by local day (`cost.days`), so a total is the sum of
those days over the sessions of each workspace, whatever else the listing hides (--active,
--limit). A session whose cost is not known in full (never priced, a model with no price)
and that was active on those days is counted apart, as unpriced: never as $0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sidecar.views import cost

if TYPE_CHECKING:
    from sidecar.views.sessions import SessionRow


@dataclass
class Spent:
    """What one workspace (or all of them) spent on the days: the priced part, in USD, and
    how many sessions active then have a cost not known in full."""

    usd: float = 0.0
    unpriced: int = 0
    sessions: int = 0  # the sessions with a priced figure on those days

    def text(self) -> str:
        """`$1.23`, `$1.23 + 2 unpriced`."""
        return cost.usd(self.usd) + (f" + {self.unpriced} unpriced" if self.unpriced else "")


@dataclass
class Spend:
    days: list[str]
    by_workspace: dict[Path, Spent] = field(default_factory=dict)
    total: Spent = field(default_factory=Spent)

    def to_json(self) -> dict[str, Any]:
        return {"days": self.days, "usd": round(self.total.usd, 6), "unpriced": self.total.unpriced,
                "workspaces": [{"workspace": str(root), "usd": round(spent.usd, 6),
                                "unpriced": spent.unpriced, "sessions": spent.sessions}
                               for root, spent in self.by_workspace.items()]}


def last_activity(row: SessionRow) -> float:
    return row.updated_at or row.ended_at or row.started_at or 0.0


def spend(rows: list[SessionRow], roots: list[Path], days: list[str]) -> Spend:
    """The spend of `days` (local, oldest first) over the sessions `rows` of `roots`."""
    found = Spend(days, {root: Spent() for root in roots})
    since = cost.day_start(days[0])
    for row in rows:
        mine = found.by_workspace.setdefault(row.root, Spent())
        amount = cost.in_days(row.cost, days)
        active = last_activity(row) >= since
        for spent in (mine, found.total):
            spent.usd += amount
            spent.sessions += amount > 0
            spent.unpriced += active and cost.unpriced(row.cost)
    return found


def foot(found: Spend, names: dict[Path, str], today: str) -> list[str]:
    """The lines under the table: the days, each workspace's spend, and the total."""
    first, last = found.days[0], found.days[-1]
    span = f"{last} (today)" if first == last == today else f"{first} to {last}"
    shown = [(names.get(root) or str(root), spent) for root, spent in found.by_workspace.items()
             if spent.usd or spent.unpriced]
    wide = max([len("total"), *(len(name) for name, _ in shown)])
    lines = [f"spent {span}"]
    lines += [f"  {name:<{wide}}  {spent.text()}" for name, spent in shown]
    lines.append(f"  {'total':<{wide}}  {found.total.text()}")
    return lines
