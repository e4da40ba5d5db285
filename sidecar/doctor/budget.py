"""What `doctor` says of budgets: whether a day budget holds resume follow-ups back now (the
day's spend read fresh from the ledgers, against config.toml as it is), and which of today's
resumes a budget held back or a cost not known let through (the runner's notes, as `status`
shows them). A budget holding is a note, not a problem: it does what the user asked."""

from __future__ import annotations

from pathlib import Path

from sidecar.base.timeutil import now
from sidecar.config import ConfigError, load_config
from sidecar.followups import budgethold
from sidecar.hosts.base import Finding, note
from sidecar.layout import Workspace
from sidecar.views.budget import budget_lines
from sidecar.views.status import workspace_report

RAISE = ("raise it under [budget] in config.toml (only that file sets budgets), or wait for "
         "the next day; command and notify hooks are never held")


def check(ws: Workspace | None) -> list[Finding]:
    try:
        budget = load_config().budget
    except ConfigError:
        return []  # said where doctor reads the settings
    if not budget.any:
        return []
    at = now()
    day = budgethold.local_day(at)
    root = ws.root if ws is not None else Path.cwd()
    every, mine = budgethold.day_spend(root, day)
    own = budget.of(str(root)) if ws is not None else None
    findings: list[Finding] = []
    if budget.day is not None and every >= budget.day:
        findings.append(note(f"the day budget holds resume follow-ups back: ${every:,.2f} of "
                             f"${budget.day:,.2f} spent today across the registered workspaces", RAISE))
    if own is not None and own.day is not None and mine >= own.day:
        findings.append(note(f"this workspace's day budget holds its resume follow-ups back: "
                             f"${mine:,.2f} of ${own.day:,.2f} spent today", RAISE))
    if ws is not None:
        rows = workspace_report(str(ws.root), at).get("budget", [])
        findings += [note(line.removeprefix("budget").strip(), RAISE if row["held"] else
                          "a cost that is not known holds nothing back (its model has no price)")
                     for row, line in zip(rows, budget_lines(rows), strict=True)]
    if not findings:
        limit = f" of ${budget.day:,.2f}" if budget.day is not None else ""
        findings.append(Finding(True, f"budgets: ${every:,.2f}{limit} spent today; no resume held back"))
    return findings
