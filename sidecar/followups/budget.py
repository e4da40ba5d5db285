"""Budgets that hold resume follow-ups back: `[budget]` in config.toml, and the arithmetic.

    [budget]
    session = 5.00                  # USD one session may have cost
    day = 20.00                     # USD one local day, across every registered workspace
    [budget.workspace."~/code/app"]
    session = 2.00                  # this workspace's sessions: instead of the session above
    day = 2.00                      # this workspace's own spend of the day: besides the day above

Only the user's config.toml sets a budget: nothing inside a workspace can raise one (a cloned
repository's files must not spend the user's money). Pure: `verdict` is given the figures
(followups/budgethold.py gathers them at fire time) and says whether a resume is held back,
in the words its history keeps, and which episode of which budget holds it (the over-budget
notice is sent once an episode). What is not known holds nothing: a spend that could not be
priced counts for nothing, and the verdict says so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

MAX_USD = 1_000_000.0
UNKNOWN = "cost unknown: not held"


class BudgetError(ValueError):
    """A [budget] value that cannot be used; the message names the key (config.py adds the file)."""


@dataclass(frozen=True)
class Limits:
    """USD limits; None: none."""

    session: float | None = None
    day: float | None = None


@dataclass(frozen=True)
class Budget:
    """The user's budgets: the global ones, and each workspace's by its root as written."""

    session: float | None = None
    day: float | None = None
    workspaces: Mapping[str, Limits] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def any(self) -> bool:
        return self.session is not None or self.day is not None or bool(self.workspaces)

    def of(self, root: str) -> Limits:
        """The budgets of the workspace at `root`: its own where it has them (compared as
        real paths, `~` expanded), None else."""
        real = os.path.realpath(root)
        for written, limits in self.workspaces.items():
            if os.path.realpath(os.path.expanduser(written)) == real:
                return limits
        return Limits()


def parse_budget(value: Any) -> Budget:
    """`[budget]` as config.toml holds it; BudgetError names a bad key."""
    if not isinstance(value, dict):
        raise BudgetError("[budget] must be a table: session = 5.00, day = 20.00")
    unknown = set(value) - {"session", "day", "workspace"}
    if unknown:
        raise BudgetError(f"unknown budget setting {sorted(unknown)[0]!r} (session, day or "
                          "[budget.workspace.\"/path\"])")
    workspaces = value.get("workspace", {})
    if not isinstance(workspaces, dict):
        raise BudgetError('budget.workspace must hold tables: [budget.workspace."/path"] day = 2.00')
    own: dict[str, Limits] = {}
    for root, limits in workspaces.items():
        where = f"budget.workspace.{root!r}"
        if not os.path.isabs(os.path.expanduser(root)):
            raise BudgetError(f"{where}: name the workspace by its absolute path (or ~/...)")
        if not isinstance(limits, dict) or not limits or set(limits) - {"session", "day"}:
            raise BudgetError(f"{where} takes session = USD and/or day = USD")
        own[root] = Limits(_usd(limits.get("session"), f"{where}.session"),
                           _usd(limits.get("day"), f"{where}.day"))
    return Budget(_usd(value.get("session"), "budget.session"), _usd(value.get("day"), "budget.day"),
                  MappingProxyType(own))


def _usd(value: Any, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_USD:
        raise BudgetError(f"{key} must be an amount of US dollars above 0 and up to "
                          f"{MAX_USD:,.0f}, like 5.00, not {value!r}")
    return float(value)


@dataclass(frozen=True)
class Spent:
    """What is known of a spend: the USD that could be priced, and why some could not (None:
    all of it was priced)."""

    usd: float
    unknown: str | None = None


def session_spent(cost: Any) -> Spent:
    """A session's spend from its record's `cost` (absent: never priced)."""
    if not isinstance(cost, dict):
        return Spent(0.0, "the session has no cost recorded")
    usd = cost.get("usd")
    known = float(usd) if isinstance(usd, (int, float)) and not isinstance(usd, bool) else 0.0
    listed = cost.get("unpriced")
    unpriced = [str(m) for m in listed] if isinstance(listed, list) else []
    if usd is None or cost.get("source") == "unknown":
        return Spent(known, str(cost.get("why") or "the session's cost is unknown"))
    if unpriced:
        return Spent(known, "no price for " + ", ".join(unpriced))
    return Spent(known)


@dataclass(frozen=True)
class Hold:
    """One budget the resume would start over: which, and its episode (the over-budget
    notice's key: the session's for a session budget, the day's for a day budget)."""

    budget: str  # session, day, workspace-day
    spent: float
    limit: float
    episode: str

    @property
    def reason(self) -> str:
        when = "this session" if self.budget == "session" else \
            "today" if self.budget == "day" else "today in this workspace"
        return f"over budget (${self.spent:,.2f} of ${self.limit:,.2f} {when})"


@dataclass(frozen=True)
class Verdict:
    """Held (the first budget over), or not; `unknown`: what was not known, which held nothing."""

    hold: Hold | None
    unknown: str | None = None


def verdict(budget: Budget, root: str, session_id: str, day: str, session: Spent,
            day_all: Spent, day_here: Spent) -> Verdict:
    """Whether a resume of the session in the workspace at `root` would start over budget,
    on the local `day`, given what the session, every workspace and this one spent."""
    own = budget.of(root)
    session_limit = own.session if own.session is not None else budget.session
    checks = (("session", session, session_limit, f"session:{session_id}"),
              ("day", day_all, budget.day, f"day:{day}"),
              ("workspace-day", day_here, own.day, f"workspace-day:{day}"))
    unknown = []
    for name, spent, limit, episode in checks:
        if limit is None:
            continue
        if spent.usd >= limit:  # reached: what was not priced could only add to it
            return Verdict(Hold(name, spent.usd, limit, episode))
        if spent.unknown is not None and spent.unknown not in unknown:
            unknown.append(spent.unknown)
    return Verdict(None, f"{UNKNOWN} ({'; '.join(unknown)})" if unknown else None)
