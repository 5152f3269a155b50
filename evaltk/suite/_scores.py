"""Exact means of trial scores and the threshold comparisons the gate makes (no float drift
decides a pass)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from ._model import SuiteRun

# --------------------------------------------------------------------------- exact means


#: Two scores closer than this compare equal in a threshold decision.  Scores are
#: recorded to a few decimals; this only absorbs binary floating-point error (the
#: float mean of three trials scoring 0.7 is 0.6999999999999998 in naive arithmetic).
SCORE_TOLERANCE = 1e-12


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = 134217729.0 * a
    hi = t - (t - a)
    return hi, a - hi


def _dd_div_int(s: np.ndarray, c: np.ndarray, n: int) -> np.ndarray:
    """(s + c) / n for a double-double (s, c), rounded once (error well under 1 ulp)."""
    q = s / n
    qh, ql = _split(q)
    nh, nl = _split(np.float64(n))
    p = q * n
    perr = ((qh * nh - p) + qh * nl + ql * nh) + ql * nl
    r = ((s - p) - perr) + c
    return q + r / n


def _mean_rows(a: np.ndarray) -> np.ndarray:
    """Mean of each row, as close to the exact mean as a float can be.

    Naive float means break threshold decisions at the boundary (three trials of 0.7
    average to 0.6999999999999998); summing in double-double and dividing once gives
    the correctly rounded mean, so equal trials average to themselves.
    """
    s = a[:, 0].copy()
    c = np.zeros_like(s)
    for j in range(1, a.shape[1]):
        s, e = _two_sum(s, a[:, j])
        c += e
    return _dd_div_int(s, c, a.shape[1])


def _mean(x: np.ndarray) -> float:
    """Correctly rounded mean of a 1-D array (``math.fsum`` plus its residual)."""
    if x.size == 1:
        return float(x[0])
    s = math.fsum(x)
    r = math.fsum(np.append(x, -s)) if math.isfinite(s) else 0.0
    return float(_dd_div_int(np.array([s]), np.array([r]), x.size)[0])


def _aggregate(x: np.ndarray, how: str) -> float:
    if how == "mean":
        return _mean(x)
    if how == "min":
        return float(x.min())
    srt = np.sort(x)
    mid = srt.size // 2
    if srt.size % 2:
        return float(srt[mid])
    return _mean(srt[mid - 1 : mid + 1])


_MAX_DECIMALS = 9


def _decimal_scale(arrays: Iterable[np.ndarray], terms: int) -> int | None:
    """Smallest ``d`` such that every value is the float of a decimal with ``d`` places.

    ``None`` when there is none up to :data:`_MAX_DECIMALS`, or when sums of ``terms``
    such integers could leave the range where floats hold integers exactly.
    """
    arrays = list(arrays)
    for d in range(_MAX_DECIMALS + 1):
        q = 10.0**d
        if 2 * terms * q >= 2.0**53:
            return None
        if all(np.array_equal(np.rint(a * q) / q, a) for a in arrays):
            return d
    return None


class _Scores(NamedTuple):
    """The means and threshold decisions of a run: per task its score and gating score, per
    trial its verdict, per task whether the gating score reaches passScore (the ``mean``
    rule), the two aggregates and whether the gating aggregate reaches passScore."""

    task_score: np.ndarray
    task_gated: np.ndarray
    trial_passed: np.ndarray
    mean_ok: np.ndarray
    aggregate: float
    gated_aggregate: float
    met: bool


def _float_path(run: SuiteRun, gating: np.ndarray, gated_out: np.ndarray) -> _Scores:
    """The same numbers in double-double means, comparisons absorbing binary rounding error
    (:data:`SCORE_TOLERANCE`): for scores that are not short decimals."""
    ps = run.thresholds.pass_score
    task_score, task_gated = _mean_rows(run.score), _mean_rows(gating)
    gagg = _aggregate(task_gated, run.aggregation)
    return _Scores(task_score=task_score, task_gated=task_gated, trial_passed=_geq(run.score, ps) & ~gated_out,
                   mean_ok=_geq(task_gated, ps), aggregate=_aggregate(task_score, run.aggregation),
                   gated_aggregate=gagg, met=bool(_geq(gagg, ps)))


def _decimal_path(run: SuiteRun, gated_out: np.ndarray) -> _Scores | None:
    """Scores, means and decisions in exact decimal arithmetic.

    Scores in a run file are decimals (``0.7``); their binary floats are not, so a
    float mean can land a hair off the decimal one (0.8, 0.8, 0.2 and 1.0 average to
    0.7000000000000001 in floats).  When every score and ``passScore`` has at most
    nine decimal places, each is scaled to an integer, sums are exact, every
    threshold comparison is an exact integer comparison, and each reported mean is
    one correctly rounded division of two exact integers.
    """
    t, n = run.score.shape
    ps = run.thresholds.pass_score
    d = _decimal_scale([run.score, np.array([ps])], t * n)
    if d is None:
        return None
    q = 10**d
    ints = np.rint(run.score * q).astype(np.int64)
    gints = np.where(gated_out, 0, ints)
    pq = round(ps * q)
    trial_passed = (ints >= pq) & ~gated_out
    ss, gs = ints.sum(axis=1), gints.sum(axis=1)
    denom = n * q
    task_score, task_gated = ss / denom, gs / denom
    mean_ok = gs >= pq * n

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
                   aggregate=a, gated_aggregate=g, met=bool(met))


def _geq(a: Any, b: float) -> Any:
    return a >= b - SCORE_TOLERANCE


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= max(SCORE_TOLERANCE, 1e-9 * max(abs(a), abs(b)))


def _int_if_whole(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)
