"""The one result shape every estimator shares: a statistic, an interval, ``defined``, ``to_frame()``.

``statistic`` is a float or an :class:`~evaltk.values.Abstention`;
``confidence_interval`` is a :class:`ConfidenceInterval` ``(low, high)`` or an
``Abstention``; ``.defined`` says whether the statistic is a number.  Undefined is
never a bare ``Abstention`` return and never ``None``: the result object comes back,
with the cause where the number would be, and an :class:`~evaltk.values.UndefinedWarning`.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from .._display import HtmlTable
from .._validation import undefined, user_stacklevel  # noqa: F401  (re-used by stats)
from ..values import Abstention, Cause


class ConfidenceInterval(NamedTuple):
    """A two-sided interval ``(low, high)``; unpacks like a tuple.

    Examples
    --------
    >>> ci = ConfidenceInterval(0.2, 0.4)
    >>> ci.low, ci.high
    (0.2, 0.4)
    >>> low, high = ci
    """

    low: float
    high: float


def as_interval(ci: Any) -> ConfidenceInterval | Abstention:
    """``(low, high)`` as a :class:`ConfidenceInterval`; an abstention passes through."""
    if isinstance(ci, Abstention):
        return ci
    low, high = ci
    return ConfidenceInterval(float(low), float(high))


#: The interval of a hypothesis test: it has a statistic and a p-value, no interval.
NO_INTERVAL = Abstention(Cause.NOT_APPLICABLE, "a test statistic has no confidence interval")


def _num(x: Any) -> float:
    """A table cell: the number, or NaN where it abstains (its cause goes in a column beside it)."""
    if isinstance(x, Abstention) or x is None:
        return math.nan
    return x


def shape_row(statistic: Any, ci: Any) -> dict[str, Any]:
    """The columns every ``to_frame()`` starts with: the value or its cause, the interval or its cause."""
    st_ab = statistic if isinstance(statistic, Abstention) else None
    ci_ab = ci if isinstance(ci, Abstention) else None
    return {
        "statistic": _num(statistic),
        "cause": None if st_ab is None else st_ab.cause.value,
        "reason": None if st_ab is None else st_ab.reason,
        "ci_low": math.nan if ci_ab is not None else ci[0],
        "ci_high": math.nan if ci_ab is not None else ci[1],
        "ci_cause": None if ci_ab is None else ci_ab.cause.value,
        "ci_reason": None if ci_ab is None else ci_ab.reason,
    }


class ResultShape(HtmlTable):
    """Mixin of every result class: ``.defined``, the shared leading ``to_frame`` columns, and
    ``_repr_html_`` (the ``to_frame()`` table, escaped, in a notebook).

    Subclasses are frozen dataclasses with ``statistic`` and ``confidence_interval``
    fields (or properties).
    """

    statistic: Any
    confidence_interval: Any

    @property
    def defined(self) -> bool:
        """True when ``statistic`` is a number (not an abstention)."""
        st = self.statistic
        return not isinstance(st, Abstention) and not (isinstance(st, float) and math.isnan(st))

    def summary_row(self) -> dict[str, Any]:
        """The columns every ``to_frame()`` starts with.

        ``statistic, cause, reason, ci_low, ci_high, ci_cause, ci_reason``: the value
        or the cause of its absence, the interval or the cause of its absence.
        """
        return shape_row(self.statistic, self.confidence_interval)
