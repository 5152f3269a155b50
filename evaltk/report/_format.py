"""Numbers as a report shows them.  Rounding happens here and nowhere else in evaltk
(STYLE.md, 8): computation returns unrounded numbers and abstentions."""

from __future__ import annotations

import math
from typing import Any


def format_interval(statistic: Any, low: Any, high: Any, *, digits: int = 2) -> str:
    """``0.81 [0.74, 0.87]``; ``—`` where a number is missing (an abstention is shown, not filled).

    Examples
    --------
    >>> format_interval(0.8123, 0.7411, 0.8702)
    '0.81 [0.74, 0.87]'
    >>> format_interval(None, None, None)
    '—'
    """

    def one(x: Any) -> str | None:
        if x is None:
            return None
        try:
            v = float(x)
        except (TypeError, ValueError):
            return None
        return None if math.isnan(v) else f"{v:.{digits}f}"

    s, lo, hi = one(statistic), one(low), one(high)
    if s is None:
        return "—"
    if lo is None or hi is None:
        return s
    return f"{s} [{lo}, {hi}]"
