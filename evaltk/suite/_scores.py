"""Exact means of trial scores and the threshold comparisons the gate makes (no float drift
decides a pass)."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from ._model import SuiteRun

# --------------------------------------------------------------------------- exact means


#: Two reported numbers closer than this (or 1e-9 relative) agree when another host's
#: summary is checked against evaluation (:func:`check_summary`).  It never decides a pass:
#: every threshold comparison of the gate is exact on the decimals (RFC 0246 section B).
SCORE_TOLERANCE = 1e-12

_MAX_DECIMALS = 9


def _places(x: float) -> int:
    """Decimal places of the shortest decimal that reads back as ``x`` (its ``repr``)."""
    e = Decimal(repr(float(x))).as_tuple().exponent
    return max(0, -int(e))


def _scaled(x: float, d: int) -> int:
    """``x``'s shortest decimal times ``10**d``, exactly (``d`` at least its places)."""
    return int(Decimal(repr(float(x))).scaleb(d))


def _decimal_ints(arrays: Iterable[np.ndarray], terms: int) -> tuple[int, list[np.ndarray]]:
    """Every value as an exact integer count of ``10**-d``, for the smallest such ``d``.

    A score in a run file is a decimal (``0.7``, ``0.6999999999995``); its float is read
    back as the shortest decimal that gives it.  The usual case, at most nine places and
    sums of ``terms`` values within the range floats hold integers exactly, is vectorised
    (int64); anything else is exact in Python integers.  No tolerance is ever applied.
    """
    arrays = list(arrays)
    d = next((k for k in range(_MAX_DECIMALS + 1)
              if all(np.array_equal(np.rint(a * 10.0**k) / 10.0**k, a) for a in arrays)), None)
    if d is not None and 2 * terms * 10**d < 2**53:
        return d, [np.rint(a * 10.0**d).astype(np.int64) for a in arrays]
    d = max((_places(x) for a in arrays for x in np.unique(a)), default=0)  # exact: every value's places
    out = []
    for a in arrays:
        ints = np.empty(a.size, dtype=object)
        ints[:] = [_scaled(x, d) for x in a.ravel().tolist()]
        out.append(ints.reshape(a.shape))
    return d, out


class _Scores(NamedTuple):
    """The means and threshold decisions of a run: per task its score and gating score, per
    trial its verdict, per task whether the gating score reaches passScore (the ``mean``
    rule), the two aggregates, whether the gating aggregate reaches passScore, and the
    gating aggregate and passScore as the exact decimals that were compared."""

    task_score: np.ndarray
    task_gated: np.ndarray
    trial_passed: np.ndarray
    mean_ok: np.ndarray
    aggregate: float
    gated_aggregate: float
    met: bool
    compared: tuple[str, str]


def _exact_scores(run: SuiteRun, gated_out: np.ndarray) -> _Scores:
    """Scores, means and decisions in exact decimal arithmetic.

    Scores in a run file are decimals (``0.7``); their binary floats are not, so a float
    mean can land a hair off the decimal one (0.8, 0.8, 0.2 and 1.0 average to
    0.7000000000000001 in floats, three trials of 0.7 to 0.6999999999999998).  Every score
    and ``passScore`` is scaled to an integer (:func:`_decimal_ints`), sums are exact,
    every threshold comparison is an exact integer comparison (0.6999999999995 is below
    0.7), and each reported mean is one correctly rounded division of two exact integers.
    """
    t, n = run.score.shape
    ps = run.thresholds.pass_score
    d, (ints, _) = _decimal_ints([run.score, np.array([ps])], t * n + 1)
    q = 10**d
    gints = np.where(gated_out, 0, ints)
    pq = _scaled(ps, d)
    trial_passed = np.asarray(ints >= pq, dtype=bool) & ~gated_out
    ss, gs = ints.sum(axis=1), gints.sum(axis=1)
    denom = n * q
    task_score = np.asarray(ss / denom, dtype=float)
    task_gated = np.asarray(gs / denom, dtype=float)
    mean_ok = np.asarray(gs >= pq * n, dtype=bool)

    def agg(sums: np.ndarray) -> tuple[float, int, int]:
        """(value, numerator, denominator) with value = numerator / denominator exactly rounded."""
        if run.aggregation == "mean":
            num, den = int(sums.sum()), t * denom
        elif run.aggregation == "min":
            num, den = int(sums.min()), denom
        else:
            srt = np.sort(sums)
            mid = t // 2
            num, den = (int(srt[mid]), denom) if t % 2 else (int(srt[mid - 1]) + int(srt[mid]), 2 * denom)
        return num / den, num, den

    a, _, _ = agg(ss)
    g, gnum, gden = agg(gs)
    met = gnum * q >= pq * gden
    return _Scores(task_score=task_score, task_gated=task_gated, trial_passed=trial_passed, mean_ok=mean_ok,
                   aggregate=a, gated_aggregate=g, met=bool(met),
                   compared=(_exact_text(Fraction(gnum, gden), ps), _shortest(ps)))


def _shortest(x: float) -> str:
    """The shortest decimal that reads back as ``x``; a whole number without ``.0``."""
    r = repr(float(x))
    return r[:-2] if r.endswith(".0") else r


def _exact_text(value: Fraction, threshold: float) -> str:
    """The compared value as text: its shortest float ``repr`` when that tells it apart from
    the threshold as the exact comparison does, else its decimal expansion to 30 digits
    (an exact mean of 0.69999999999999996... is not printed as 0.7 beside passScore 0.7)."""
    shown = float(value)
    exact_ps = Fraction(Decimal(repr(float(threshold))))
    if (value >= exact_ps) == (Fraction(Decimal(repr(shown))) >= exact_ps):
        return _shortest(shown)
    with localcontext() as ctx:
        ctx.prec = 30
        dec = Decimal(value.numerator) / Decimal(value.denominator)
    return f"{dec}..." if Fraction(dec) != value else str(dec)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= max(SCORE_TOLERANCE, 1e-9 * max(abs(a), abs(b)))


def _int_if_whole(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)
