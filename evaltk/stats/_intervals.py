"""Intervals for rates and for a paired difference of rates.

Three interval families for a binomial proportion (a judge's accuracy, a positive
rate, an agreement share) and one for the difference between two proportions
measured on the same items (a judge's positive rate minus the human positive rate):

* :func:`wilson_interval`: the score interval of Wilson (1927), optionally with
  a continuity correction (Newcombe 1998a, methods 3 and 4);
* :func:`clopper_pearson_interval`: the "exact" interval of Clopper and Pearson
  (1934), Newcombe 1998a method 5;
* :func:`paired_difference_interval`: Newcombe's (1998b) hybrid score interval,
  method 10, for the difference between two proportions from paired data.

Every function returns a frozen result with ``.statistic``,
``.confidence_interval`` (a :class:`~evaltk.stats.ConfidenceInterval`), ``.defined``
and ``.to_frame()``; a rate over zero trials is undefined: the result comes back with
an :class:`~evaltk.values.Abstention` as its statistic and interval, and an
:class:`~evaltk.values.UndefinedWarning`.  :func:`wilson_bounds` and
:func:`clopper_pearson_bounds` are the vectorised cores (arrays in, arrays out)
for callers that need many intervals at once.

The bootstrap intervals of the calibration estimators live in
:mod:`evaltk.stats`.

References
----------
Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
inference. *JASA* 22, 209-212.

Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or fiducial limits
illustrated in the case of the binomial. *Biometrika* 26, 404-413.

Newcombe, R. G. (1998a). Two-sided confidence intervals for the single proportion:
comparison of seven methods. *Statistics in Medicine* 17, 857-872.

Newcombe, R. G. (1998b). Improved confidence intervals for the difference between
binomial proportions based on paired data. *Statistics in Medicine* 17, 2635-2650.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_confidence_level, lazy_module
from ..values import Abstention
from ._result import ConfidenceInterval, ResultShape, undefined

special = lazy_module("scipy.special")
stats = lazy_module("scipy.stats")


def z_value(confidence_level: float) -> float:
    """Two-sided standard normal quantile: 1.959964 for 0.95."""
    cl = check_confidence_level(confidence_level)
    return float(special.ndtri(0.5 + cl / 2.0))


def critical_value(confidence_level: float, distribution: str = "normal", df: float = math.inf) -> float:
    """The two-sided quantile of a ``statistic +- c * SE`` interval: normal, or Student's t on ``df``.

    Examples
    --------
    >>> round(critical_value(0.95), 4), round(critical_value(0.95, "t", 11), 4)
    (1.96, 2.201)
    """
    if distribution == "t":
        # the t quantile itself (what ``scipy.stats.t.ppf`` calls, without its ~0.1 ms of argument handling)
        return float(special.stdtrit(df, 0.5 + check_confidence_level(confidence_level) / 2.0))
    if distribution != "normal":
        raise ValueError(f"`distribution` must be 'normal' or 't'; got {distribution!r}.")
    return z_value(confidence_level)


def _count(x: Any, name: str) -> int:
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be a whole number; got bool {x!r}.")
    if not isinstance(x, numbers.Integral):
        if isinstance(x, numbers.Real) and float(x).is_integer():
            x = int(x)  # type: ignore[call-overload]  # numbers.Real declares no __int__; its types have one
        else:
            raise TypeError(f"`{name}` must be a whole number; got {type(x).__name__} {x!r}.")
    x = int(x)
    if x < 0:
        raise ValueError(f"`{name}` must be >= 0; got {x}.")
    return x


def _counts_pair(successes: Any, n: Any) -> tuple[int, int]:
    s = _count(successes, "successes")
    t = _count(n, "n")
    if s > t:
        raise ValueError(f"`successes` ({s}) must not exceed `n` ({t}).")
    return s, t


def _as_count_arrays(successes: Any, n: Any) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(successes, dtype=float)
    t = np.asarray(n, dtype=float)
    if np.isnan(s).any() or np.isnan(t).any():
        raise ValueError("`successes` and `n` must not contain NaN.")
    if (s < 0).any() or (t < 0).any():
        raise ValueError("`successes` and `n` must be >= 0.")
    if (s > t).any():
        raise ValueError("`successes` must not exceed `n`.")
    return np.broadcast_arrays(s, t)  # type: ignore[return-value]


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class ProportionInterval(ResultShape):
    """A rate with its confidence interval.

    Attributes
    ----------
    statistic : float or Abstention
        ``successes / n``; an abstention when ``n == 0``.
    confidence_interval : ConfidenceInterval or Abstention
        ``(low, high)``, inside [0, 1].
    successes, n : int
        The counts.
    confidence_level : float
    method : str
        ``"wilson"``, ``"wilson_cc"`` or ``"clopper_pearson"``.
    """

    statistic: float | Abstention
    confidence_interval: ConfidenceInterval | Abstention
    successes: int
    n: int
    confidence_level: float
    method: str

    @property
    def half_width(self) -> float | Abstention:
        """Half the interval's width (the interval need not be symmetric); the abstention when undefined."""
        ci = self.confidence_interval
        return ci if isinstance(ci, Abstention) else (ci.high - ci.low) / 2.0

    def to_frame(self) -> pd.DataFrame:
        """One-row tidy frame: ``statistic, cause, reason, ci_low, ci_high, ci_cause, successes, n, ...``."""
        return pd.DataFrame(
            [
                {
                    **self.summary_row(),
                    "successes": self.successes,
                    "n": self.n,
                    "confidence_level": self.confidence_level,
                    "method": self.method,
                }
            ]
        )


@dataclass(frozen=True)
class PairedDifferenceResult(ResultShape):
    """Difference ``p1 - p2`` of two proportions measured on the same items.

    Attributes
    ----------
    statistic : float or Abstention
        ``p1 - p2 = (b - c) / n``; an abstention when the table is empty.
    confidence_interval : ConfidenceInterval or Abstention
        ``(low, high)`` inside [-1, 1].
    p1, p2 : float or Abstention
        The first and second proportion (row and column positive rates).
    table : tuple of int
        ``(a, b, c, d)``: both positive, only the first, only the second, neither.
    n : int
    confidence_level : float
    method : str
    """

    statistic: float | Abstention
    confidence_interval: ConfidenceInterval | Abstention
    p1: float | Abstention
    p2: float | Abstention
    table: tuple[int, int, int, int]
    n: int
    confidence_level: float
    method: str = "newcombe_hybrid_score"

    def to_frame(self) -> pd.DataFrame:
        """One-row tidy frame with the difference, its interval, both rates and the four cells."""
        a, b, c, d = self.table
        return pd.DataFrame(
            [
                {
                    **self.summary_row(),
                    "p1": None if isinstance(self.p1, Abstention) else self.p1,
                    "p2": None if isinstance(self.p2, Abstention) else self.p2,
                    "n11": a,
                    "n10": b,
                    "n01": c,
                    "n00": d,
                    "n": self.n,
                    "confidence_level": self.confidence_level,
                    "method": self.method,
                }
            ]
        )


# --------------------------------------------------------------------------- vectorised cores


def wilson_bounds(
    successes: Any, n: Any, *, confidence_level: float = 0.95, continuity: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score limits for arrays of counts (NaN where ``n`` is 0).

    Parameters
    ----------
    successes, n : array_like
        Counts, broadcast against each other.
    confidence_level : float
    continuity : bool
        Apply the continuity correction (Newcombe 1998a, method 4).

    Returns
    -------
    low, high : ndarray

    Notes
    -----
    Without correction, with :math:`\\hat p = x/n` and :math:`z` the two-sided
    normal quantile,

    .. math:: \\frac{2n\\hat p + z^2 \\pm z\\sqrt{z^2 + 4n\\hat p(1-\\hat p)}}{2(n + z^2)}.

    With correction (Newcombe 1998a, eq. for method 4)

    .. math:: L = \\frac{2n\\hat p + z^2 - 1 - z\\sqrt{z^2 - 2 - 1/n + 4\\hat p(n(1-\\hat p)+1)}}{2(n+z^2)},

    .. math:: U = \\frac{2n\\hat p + z^2 + 1 + z\\sqrt{z^2 + 2 - 1/n + 4\\hat p(n(1-\\hat p)-1)}}{2(n+z^2)},

    with :math:`L = 0` when :math:`x = 0` and :math:`U = 1` when :math:`x = n`.

    Examples
    --------
    >>> low, high = wilson_bounds([81, 0], [263, 20])
    >>> [round(float(v), 4) for v in low], [round(float(v), 4) for v in high]
    ([0.2553, 0.0], [0.3662, 0.1611])
    """
    z = z_value(confidence_level)
    s, t = _as_count_arrays(successes, n)
    z2 = z * z
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(t > 0, s / np.where(t > 0, t, 1.0), np.nan)
        denom = 2.0 * (t + z2)
        if not continuity:
            centre = 2.0 * t * p + z2
            spread = z * np.sqrt(z2 + 4.0 * t * p * (1.0 - p))
            low = (centre - spread) / denom
            high = (centre + spread) / denom
        else:
            tt = np.where(t > 0, t, 1.0)
            rad_lo = z2 - 2.0 - 1.0 / tt + 4.0 * p * (t * (1.0 - p) + 1.0)
            rad_hi = z2 + 2.0 - 1.0 / tt + 4.0 * p * (t * (1.0 - p) - 1.0)
            low = (2.0 * t * p + z2 - 1.0 - z * np.sqrt(np.maximum(rad_lo, 0.0))) / denom
            high = (2.0 * t * p + z2 + 1.0 + z * np.sqrt(np.maximum(rad_hi, 0.0))) / denom
            low = np.where(s == 0, 0.0, low)
            high = np.where(s == t, 1.0, high)
    low = np.where(t > 0, np.clip(low, 0.0, 1.0), np.nan)
    high = np.where(t > 0, np.clip(high, 0.0, 1.0), np.nan)
    # exact limits at the boundary (rounding can leave 1e-17 otherwise)
    low = np.where((t > 0) & (s == 0), 0.0, low)
    high = np.where((t > 0) & (s == t), 1.0, high)
    return low, high


def clopper_pearson_bounds(
    successes: Any, n: Any, *, confidence_level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson limits for arrays of counts (NaN where ``n`` is 0).

    Notes
    -----
    ``low = B(alpha/2; x, n - x + 1)`` and ``high = B(1 - alpha/2; x + 1, n - x)``
    with ``B`` the beta quantile, ``low = 0`` at ``x = 0`` and ``high = 1`` at ``x = n``.

    Examples
    --------
    >>> low, high = clopper_pearson_bounds(15, 148)
    >>> round(float(low), 4), round(float(high), 4)
    (0.0578, 0.1617)
    """
    cl = check_confidence_level(confidence_level)
    alpha = 1.0 - cl
    s, t = _as_count_arrays(successes, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        low = np.where(s > 0, stats.beta.ppf(alpha / 2.0, np.maximum(s, 1e-300), t - s + 1.0), 0.0)
        high = np.where(s < t, stats.beta.ppf(1.0 - alpha / 2.0, s + 1.0, np.maximum(t - s, 1e-300)), 1.0)
    low = np.where(t > 0, low, np.nan)
    high = np.where(t > 0, high, np.nan)
    return low, high


# --------------------------------------------------------------------------- single proportion


def _rate_interval(successes: Any, n: Any, confidence_level: Any, method: str,
                   bounds: Callable[[int, int, float], tuple[Any, Any]]) -> ProportionInterval:
    """A rate and its interval by ``bounds(s, n, cl)``; abstains (with a warning) over zero trials."""
    s, t = _counts_pair(successes, n)
    cl = check_confidence_level(confidence_level)
    if t == 0:
        ab = undefined("a rate over zero trials is undefined")
        return ProportionInterval(statistic=ab, confidence_interval=ab, successes=s, n=0,
                                  confidence_level=cl, method=method)
    low, high = bounds(s, t, cl)
    return ProportionInterval(statistic=s / t, confidence_interval=ConfidenceInterval(float(low), float(high)),
                              successes=s, n=t, confidence_level=cl, method=method)


def wilson_interval(
    successes: int, n: int, *, confidence_level: float = 0.95, continuity: bool = False
) -> ProportionInterval:
    """Wilson score interval for a proportion, optionally continuity-corrected.

    Parameters
    ----------
    successes : int
        Number of successes (agreements, positives), ``0 <= successes <= n``.
    n : int
        Number of trials.  Abstained items are not trials: leave them out of
        ``n`` and report them beside the rate.
    confidence_level : float, default 0.95
    continuity : bool, default False
        Newcombe's (1998a) method 4 instead of method 3.

    Returns
    -------
    ProportionInterval
        ``statistic`` and ``confidence_interval`` are abstentions
        (``missing_evidence``, with an :class:`~evaltk.values.UndefinedWarning`)
        when ``n == 0``: a rate over no trials is undefined.

    Notes
    -----
    See :func:`wilson_bounds` for the formulae.  The interval never leaves [0, 1]
    and is not degenerate at 0 or n successes, unlike the Wald interval; its
    coverage is close to nominal down to small n (Newcombe 1998a).

    References
    ----------
    Wilson (1927); Newcombe (1998a), Table II.

    Examples
    --------
    >>> r = wilson_interval(81, 263)
    >>> round(r.statistic, 4), tuple(round(v, 4) for v in r.confidence_interval)
    (0.308, (0.2553, 0.3662))
    >>> r = wilson_interval(81, 263, continuity=True)
    >>> tuple(round(v, 4) for v in r.confidence_interval)
    (0.2535, 0.3682)
    """
    return _rate_interval(successes, n, confidence_level, "wilson_cc" if continuity else "wilson",
                          lambda s, t, cl: wilson_bounds(s, t, confidence_level=cl, continuity=continuity))


def clopper_pearson_interval(
    successes: int, n: int, *, confidence_level: float = 0.95
) -> ProportionInterval:
    """Clopper-Pearson ("exact") interval for a proportion.

    Guaranteed coverage of at least ``confidence_level`` for every true
    proportion, at the price of being conservative (wider than Wilson).

    Parameters
    ----------
    successes, n : int
    confidence_level : float, default 0.95

    Returns
    -------
    ProportionInterval
        With abstentions for ``statistic`` and ``confidence_interval`` when ``n == 0``.

    References
    ----------
    Clopper and Pearson (1934); Newcombe (1998a), method 5, Table II.

    Examples
    --------
    >>> r = clopper_pearson_interval(1, 29)
    >>> tuple(round(v, 4) for v in r.confidence_interval)
    (0.0009, 0.1776)
    """
    return _rate_interval(successes, n, confidence_level, "clopper_pearson",
                          lambda s, t, cl: clopper_pearson_bounds(s, t, confidence_level=cl))


# --------------------------------------------------------------------------- paired difference


def _table_2x2(table: Any) -> tuple[int, int, int, int]:
    arr = np.asarray(table, dtype=object)
    if arr.shape != (2, 2):
        raise ValueError(
            "`table` must be a 2x2 table [[both positive, first only], [second only, neither]]; "
            f"got shape {arr.shape}."
        )
    names = ("table[0][0]", "table[0][1]", "table[1][0]", "table[1][1]")
    a, b, c, d = (_count(v, nm) for v, nm in zip(arr.ravel(), names, strict=True))
    return a, b, c, d


def paired_difference_interval(
    table: Any, *, confidence_level: float = 0.95
) -> PairedDifferenceResult:
    """Newcombe's hybrid score interval for a difference of paired proportions.

    For items rated by two sources (a judge and a human) the table counts

    ============  ===============  ===============
    .             second positive  second negative
    first pos.    ``a``            ``b``
    first neg.    ``c``            ``d``
    ============  ===============  ===============

    and the estimate is ``p1 - p2 = (a + b)/n - (a + c)/n = (b - c)/n``: the first
    source's positive rate minus the second's.

    Parameters
    ----------
    table : array_like, shape (2, 2)
        ``[[a, b], [c, d]]`` counts.
    confidence_level : float, default 0.95

    Returns
    -------
    PairedDifferenceResult
        With abstentions for the statistic, the interval and both rates when the
        table is empty (no paired item).

    Notes
    -----
    Newcombe (1998b), method 10: with Wilson limits ``(l1, u1)`` for ``p1`` and
    ``(l2, u2)`` for ``p2``,

    .. math::

        L = \\hat\\theta - \\sqrt{(p_1 - l_1)^2 - 2\\hat\\phi (p_1 - l_1)(u_2 - p_2) + (u_2 - p_2)^2}

        U = \\hat\\theta + \\sqrt{(p_2 - l_2)^2 - 2\\hat\\phi (p_2 - l_2)(u_1 - p_1) + (u_1 - p_1)^2}

    where :math:`\\hat\\phi = C/\\sqrt{(a+b)(c+d)(a+c)(b+d)}` with
    :math:`C = ad - bc - n/2` if :math:`ad - bc > n/2`, :math:`C = 0` if
    :math:`0 \\le ad - bc \\le n/2`, and :math:`C = ad - bc` if negative;
    :math:`\\hat\\phi = 0` when the product of margins is 0.

    References
    ----------
    Newcombe (1998b), method 10 and Table II.

    Examples
    --------
    Newcombe's (1998b) first worked example, 36 / 12 / 2 / 0:

    >>> r = paired_difference_interval([[36, 12], [2, 0]])
    >>> round(r.statistic, 4), tuple(round(v, 4) for v in r.confidence_interval)
    (0.2, (0.0569, 0.3404))
    """
    a, b, c, d = _table_2x2(table)
    cl = check_confidence_level(confidence_level)
    n = a + b + c + d
    if n == 0:
        ab = undefined("a difference of rates over zero paired items is undefined")
        return PairedDifferenceResult(statistic=ab, confidence_interval=ab, p1=ab, p2=ab, table=(a, b, c, d),
                                      n=0, confidence_level=cl)
    x1, x2 = a + b, a + c
    p1, p2 = x1 / n, x2 / n
    (l1, l2), (u1, u2) = wilson_bounds([x1, x2], [n, n], confidence_level=cl)
    phi = _newcombe_phi(a, b, c, d)
    theta = p1 - p2
    dl = _hybrid_half_width(p1 - l1, u2 - p2, phi)
    du = _hybrid_half_width(p2 - l2, u1 - p1, phi)
    return PairedDifferenceResult(
        statistic=theta,
        confidence_interval=ConfidenceInterval(max(-1.0, theta - dl), min(1.0, theta + du)),
        p1=p1,
        p2=p2,
        table=(a, b, c, d),
        n=n,
        confidence_level=cl,
    )


def _newcombe_phi(a: int, b: int, c: int, d: int) -> float:
    """Newcombe's (1998b) continuity-corrected phi of the 2x2 table (0 when a margin is 0)."""
    n = a + b + c + d
    margins = float(a + b) * float(c + d) * float(a + c) * float(b + d)
    det = float(a) * d - float(b) * c
    if det > n / 2.0:
        cc = det - n / 2.0
    elif det >= 0.0:
        cc = 0.0
    else:
        cc = det
    return cc / math.sqrt(margins) if margins > 0 else 0.0


def _hybrid_half_width(near: float, far: float, phi: float) -> float:
    """``sqrt(near^2 - 2 phi near far + far^2)``: one side of method 10 (clipped at 0 for rounding)."""
    return math.sqrt(max(near ** 2 - 2.0 * phi * near * far + far ** 2, 0.0))
