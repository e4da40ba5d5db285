"""A session's cost, as its record keeps it (`metadata.sidecar.cost`), from its host's
figures by model and day (`EndFacts.spend`).

Each part is priced by the host's own figure where it gives one, else by the table at the
date of its use (table.py). What cannot be priced is left out of `usd` and named: a model the
table does not know (`unpriced`), a host that names no model, or the table not installed;
`why` says which. `usd` is None only when nothing could be priced.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sidecar.cost import table
from sidecar.hosts.base import Spend

NO_MODEL = "the host names no model"
PLACES = 6  # decimals kept of a dollar figure: a millionth of a dollar


def cost_of(spend: Sequence[Spend], start_day: str | None) -> dict[str, Any]:
    """The record's cost object for these figures. A part the host does not date is counted
    on the session's `start_day` (so a later read never moves it to another day)."""
    usd, priced, by_table = 0.0, False, False
    models: list[str] = []
    unpriced: list[str] = []
    whys: list[str] = []
    days: dict[str, float] = {}
    for part in spend:
        if part.model is not None and part.model not in models:
            models.append(part.model)
        found, why = _priced(part)
        if found is None:
            if part.model is not None and part.model not in unpriced:
                unpriced.append(part.model)
            if why not in whys:
                whys.append(why)
            continue
        priced, by_table = True, by_table or part.cost is None
        usd += found
        day = part.day or start_day
        if day is not None:
            days[day] = days.get(day, 0.0) + found
    if not spend:
        whys.append(NO_MODEL)
    out: dict[str, Any] = {
        "usd": round(usd, PLACES) if priced else None,
        "source": "table" if by_table else "host" if priced else "unknown",
        "models": models, "unpriced": unpriced,
        "days": {day: round(value, PLACES) for day, value in sorted(days.items())}}
    if whys:
        out["why"] = "; ".join(whys)
    return out


def _priced(part: Spend) -> tuple[float | None, str]:
    """The part's USD (None: no price) and, where none, why."""
    if part.cost is not None:
        return part.cost, ""
    if part.model is None:
        return None, NO_MODEL
    try:
        return table.price(part.model, part.day, part.tokens), ""
    except table.NoTable:
        return None, table.NOT_INSTALLED
    except LookupError:
        return None, f"no price for model {part.model}"
