"""One model's tokens priced by pydantic's genai-prices table, at the date they were used.

genai-prices is an optional extra (`agent-sidecar[cost]`): it ships its price table inside
the package, so nothing is fetched (its auto-update is never started), and it keeps each
model's past prices with the date they changed, so a turn is priced as it was on its day.
It is imported at the first price asked, by the daemon only, never on a hook's path.

The figures it is handed are a whole day's of one model, not one request's. Some prices go
up for a request whose input passes a threshold (Anthropic's and OpenAI's long-context
tiers, 200K or 272K tokens, applied to every token of that request): a day's sum passes
them almost always while its requests seldom do, so the day is priced at the rate below
every tier, by pricing it in parts that each stay under the smallest threshold.
"""

from __future__ import annotations

import math
from datetime import datetime
from decimal import Decimal

from sidecar.hosts.base import Tokens

NOT_INSTALLED = "agent-sidecar[cost] is not installed"
# Input tokens of one part priced (see above): far below any tier's threshold.
PART_INPUT = 1000


class NoTable(Exception):
    """genai-prices cannot be imported: nothing can be priced by the table."""


def request_time(day: str | None) -> datetime | None:
    """Noon of the local `day` (YYYY-MM-DD): whatever the zone, its UTC date, which the table's
    dates are compared with, is the same day. None (undated): the table prices it as of now."""
    if day is None:
        return None
    try:
        return datetime.strptime(day, "%Y-%m-%d").replace(hour=12).astimezone()
    except ValueError:
        return None


def price(model: str, day: str | None, tokens: Tokens) -> float:
    """What `tokens` of `model` cost in USD by the table's prices on `day` (None: today's).
    LookupError: the table has no price for the model; NoTable: genai-prices is missing."""
    try:
        import genai_prices
    except ImportError as exc:  # the extra is optional
        raise NoTable(NOT_INSTALLED) from exc
    # Our input counts uncached tokens only; genai-prices' `input_tokens` counts every
    # input token, the cache reads and writes among them (priced at their own rates).
    every_input = tokens.input + tokens.cache_read + tokens.cache_write
    parts = max(1, math.ceil(every_input / PART_INPUT))
    usage = genai_prices.Usage(
        input_tokens=_part(every_input, parts), cache_read_tokens=_part(tokens.cache_read, parts),
        cache_write_tokens=_part(tokens.cache_write, parts), output_tokens=_part(tokens.output, parts))
    try:
        found = genai_prices.calc_price(usage, model, genai_request_timestamp=request_time(day))
    except (ValueError, ArithmeticError) as exc:  # figures the table cannot weigh: no price
        raise LookupError(str(exc)) from exc
    return float(Decimal(found.total_price) * parts)


def _part(count: int, parts: int) -> int | float:
    return count if parts == 1 else count / parts
