"""What `status` says of budgets: today's resumes a budget held back, and those a cost not
known let through, from the checks the follow-up runner noted (followups/budgethold.py writes
`runtime/budget.json`). Read with the standard library, as the rest of `status`.

Each follow-up of a session is said by its latest check of the day: a resume held back and
then let through (a budget raised since) is no longer said. A workspace with nothing to say
has no `budget` in the report.
"""

from __future__ import annotations

import time

from sidecar.base.escapes import escaped
from sidecar.base.files import read_json

TYPE_CHECKING = False  # typing costs `status` 2 ms (see base/words.py)
if TYPE_CHECKING:
    from sidecar.views.report import BudgetRow

UNKNOWN = "cost unknown"  # the start of a check's reason where a cost not known held nothing


def budget_rows(runtime: int, now: float) -> list[BudgetRow]:
    """Today's checks that held a resume back or could not price it, the latest of each
    (hook, session); none where the file is missing or unreadable."""
    try:
        data = read_json(runtime, "budget.json")
    except (OSError, ValueError):
        return []
    checks = data.get("checks") if isinstance(data, dict) else None
    today = time.strftime("%Y-%m-%d", time.localtime(now))
    latest: dict[tuple[str, str, str], BudgetRow] = {}
    for check in checks if isinstance(checks, list) else ():
        if not isinstance(check, dict) or check.get("day") != today:
            continue
        row: BudgetRow = {"hook": str(check.get("hook", "")), "host": str(check.get("host", "")),
                          "session": str(check.get("session", "")), "held": check.get("held") is True,
                          "reason": str(check.get("reason", "")), "at": str(check.get("at", ""))}
        latest[(row["hook"], row["host"], row["session"])] = row
    return [r for r in latest.values() if r["held"] or r["reason"].startswith(UNKNOWN)]


def budget_lines(rows: list[BudgetRow], short: int = 8) -> list[str]:
    """`status`'s lines of them (what an event named, escaped)."""
    return [escaped(f"budget     {r['hook']} held back for {r['host']} session "
                    f"{r['session'][:short]}: {r['reason']}" if r["held"] else
            f"budget     {r['hook']} for {r['host']} session {r['session'][:short]}: {r['reason']}")
            for r in rows]
