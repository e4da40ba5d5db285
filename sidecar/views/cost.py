"""What a session cost, as every view says it: `$0.42`, `?` (its models have no price), `—`
(never priced), and what a stretch of days cost a workspace (`sessions --since`).

It reads the shapes the daemon writes (docs/cost.md): a record's `metadata.sidecar.cost`
(`usd`, `source`, `models`, `unpriced`, `days`, `why`), a trace's `turn.end` line's
`data.cost`, and usage.json's `usd` and `days`. Anything else there (a hand edit, an older
daemon) reads as unknown, never as $0. Standard library only, and nothing imported at load
beyond `time`: `status` reads it at the cost of a hook.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # typing costs `status` 2 ms (see base/words.py)
if TYPE_CHECKING:
    from typing import Any

NEVER_PRICED = "—"  # no figures were ever priced for it (nothing read yet, or an older record)
UNKNOWN = "?"  # priced, but no part of it has a price (`why` says why)
DAY = 86400


def number(value: object) -> float | None:
    """A figure as a float; None for anything that is not a finite, non-negative number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 <= value < float("inf") else None


def usd(value: float) -> str:
    """An amount as people read it: `$0.42`, `$1,234.50`; a priced part below a cent is
    `<$0.01`, never $0.00, which would read as free."""
    return f"${value:,.2f}" if value >= 0.005 or value == 0 else "<$0.01"


def of_record(record: dict[str, Any]) -> dict[str, Any] | None:
    """A session record's cost object (its `metadata.sidecar.cost`); None if it has none."""
    meta = record.get("metadata")
    sidecar = meta.get("sidecar") if isinstance(meta, dict) else None
    cost = sidecar.get("cost") if isinstance(sidecar, dict) else None
    return cost if isinstance(cost, dict) else None


def unpriced_models(cost: dict[str, Any]) -> list[str]:
    found = cost.get("unpriced")
    return [str(m) for m in found] if isinstance(found, list) else []


def shown(cost: dict[str, Any] | None) -> str:
    """A cost in a table's cell: `$0.42`; `$0.42+?` where some model's tokens had no price;
    `?` where none could be priced; `—` where it was never priced."""
    if cost is None:
        return NEVER_PRICED
    amount = number(cost.get("usd"))
    if amount is None:
        return UNKNOWN
    return usd(amount) + ("+?" if unpriced_models(cost) else "")


def told(cost: dict[str, Any] | None) -> str:
    """A cost in a sentence, with where it came from: `$0.42 (the host's own figure;
    claude-sonnet-4-5)`, `unknown: no price for model X`, `not priced`."""
    if cost is None:
        return "not priced (no figures read yet)"
    amount = number(cost.get("usd"))
    models = [str(m) for m in cost.get("models") or () if isinstance(m, str)] \
        if isinstance(cost.get("models"), list) else []
    unpriced = unpriced_models(cost)
    if amount is None:
        why = cost.get("why")
        return "unknown" + (f": {why}" if isinstance(why, str) and why else "") \
            + (f" ({', '.join(models)})" if models else "")
    source = {"host": "the host's own figure", "table": "priced by the genai-prices table"}.get(
        str(cost.get("source")), str(cost.get("source") or "source unknown"))
    said = f"{usd(amount)} ({source}" + (f"; {', '.join(models)}" if models else "") + ")"
    return said + (f", without {', '.join(unpriced)} (no price)" if unpriced else "")


def turn_costs(lines: list[dict[str, Any]], last: int) -> list[dict[str, Any]]:
    """The last turns' own figures from a trace's lines: when each ended, its cost object
    (`usd`, `source`, `model`) and its tokens, where the line carries them."""
    turns = []
    for line in lines:
        data = line.get("data")
        if line.get("event") not in ("turn.end", "turn.failed") or not isinstance(data, dict):
            continue
        cost, tokens = data.get("cost"), data.get("tokens")
        if isinstance(cost, dict) or isinstance(tokens, dict):
            turns.append({"at": line.get("createdAt"), "event": line.get("event"),
                          "cost": cost if isinstance(cost, dict) else None,
                          "tokens": tokens if isinstance(tokens, dict) else None})
    return turns[-last:] if last else []


# -- days ----------------------------------------------------------------------------------


def today(now: float) -> str:
    """The local day of `now`, as the daemon keys `days` by (YYYY-MM-DD)."""
    return time.strftime("%Y-%m-%d", time.localtime(now))


def days_back(window: float, now: float) -> list[str]:
    """The local days a window of `window` seconds counts, today's last: whole days, as the
    figures are kept by day (1d or less: today; 7d: today and the six before)."""
    import datetime

    count = max(1, -(-int(window) // DAY))
    last = datetime.date.fromtimestamp(now)
    return [(last - datetime.timedelta(days=back)).isoformat() for back in range(count - 1, -1, -1)]


def day_start(day: str) -> float:
    """When a local day (YYYY-MM-DD) began, as a timestamp."""
    return time.mktime(time.strptime(day, "%Y-%m-%d"))


def in_days(cost: dict[str, Any] | None, days: list[str]) -> float:
    """What a session's cost object says it cost on these days (its priced part)."""
    by_day = cost.get("days") if cost is not None else None
    if not isinstance(by_day, dict):
        return 0.0
    return sum(number(by_day.get(day)) or 0.0 for day in days)


def unpriced(cost: dict[str, Any] | None) -> bool:
    """Whether some of a session's cost is unknown: never priced, no price at all, or a model
    without one."""
    return cost is None or number(cost.get("usd")) is None or bool(unpriced_models(cost))


def ledger_day(usage: object, day: str) -> dict[str, Any] | None:
    """usage.json's figures for one day (`usd`, `sessions`); None where it has none."""
    days = usage.get("days") if isinstance(usage, dict) else None
    found = days.get(day) if isinstance(days, dict) else None
    if not isinstance(found, dict) or number(found.get("usd")) is None:
        return None
    sessions = found.get("sessions")
    return {"usd": number(found.get("usd")),
            "sessions": sessions if isinstance(sessions, int) and not isinstance(sessions, bool) else None}
