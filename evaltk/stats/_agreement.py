"""Agreement coefficients with standard errors, intervals, declared domains and counted abstentions.

Two-rater coefficients (:func:`cohen_kappa`, :func:`scott_pi`, :func:`pabak`) take
two label sequences; multi-rater coefficients (:func:`percent_agreement`,
:func:`fleiss_kappa`, :func:`conger_kappa`, :func:`krippendorff_alpha`,
:func:`gwet_ac1`, :func:`gwet_ac2`, :func:`brennan_prediger`) take a units x raters
array-like (missing ratings as ``None``/NaN), two sequences, or a long DataFrame
via ``data=, item=, rater=, rating=``.  Every function returns an
:class:`AgreementResult`: the coefficient (a float, or an
:class:`~evaltk.values.Abstention` with its cause when undefined), the general
standard error, the standard error under the null hypothesis of chance agreement
where the literature defines one, an interval, the counts (units, pairable
ratings, abstained ratings, coverage) and ``to_frame()``.

Abstentions: ratings whose label is in ``abstain=`` (e.g. ``"cannot_tell"``,
``"Unsure"``) are excluded from the coefficient like missing ratings, but are
counted apart, and ``coverage`` (answered / (answered + abstained)) is reported
beside the agreement.

Interval methods: ``method="analytic"`` (statistic +- c * general SE, clipped to
[-1, 1], ``c`` Student's t on n - 1 df by default or the normal quantile with
``distribution="normal"``) wherever a general SE exists; ``"wilson"`` (the score
interval, percent agreement's default); ``"percentile"``, ``"basic"`` and
``"bca"`` bootstrap the units (all replicates at once from resampled count
tables, :func:`evaltk.stats.bootstrap_table`), with ``unit=``,
``clusters=``, ``strata=``, ``n_resamples=``, ``rng=``.

Judge-vs-anchor classification metrics (:func:`classification_metrics`,
:func:`classification_report`) report accuracy on answered items with coverage
separate.

References
----------
Cohen, J. (1960). A coefficient of agreement for nominal scales. *Educ. Psychol. Meas.* 20, 37-46.
Cohen, J. (1968). Weighted kappa. *Psychol. Bull.* 70, 213-220.
Fleiss, J. L., Cohen, J. & Everitt, B. S. (1969). Large sample standard errors of kappa and
weighted kappa. *Psychol. Bull.* 72, 323-327.
Scott, W. A. (1955). Reliability of content analysis. *Public Opinion Quarterly* 19, 321-325.
Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. *Psychol. Bull.* 76, 378-382.
Fleiss, J. L., Nee, J. C. M. & Landis, J. R. (1979). Large sample variance of kappa in the case
of different sets of raters. *Psychol. Bull.* 86, 974-977.
Conger, A. J. (1980). Integration and generalization of kappas for multiple raters.
*Psychol. Bull.* 88, 322-328.
Brennan, R. L. & Prediger, D. J. (1981). Coefficient kappa: some uses, misuses, and
alternatives. *Educ. Psychol. Meas.* 41, 687-699.
Byrt, T., Bishop, J. & Carlin, J. B. (1993). Bias, prevalence and kappa. *J. Clin. Epidemiol.* 46, 423-429.
Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence of high
agreement. *Br. J. Math. Stat. Psychol.* 61, 29-48.
Gwet, K. L. (2014). *Handbook of Inter-Rater Reliability*, 4th ed. Advanced Analytics.
Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Annenberg School for
Communication, University of Pennsylvania.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .._blas import serial_blas
from .._validation import check_choice, check_confidence_level
from ..errors import InputError
from ..values import (
    ABSTAIN_WORDS,
    LEVELS,
    Abstention,
    Cause,
    UndefinedWarning,
    abstain_labels,
)
from ._bootstrap import BootstrapResult, _config, _undefined_result, bootstrap_table
from ._intervals import critical_value, wilson_bounds
from ._ratings import (
    _as_1d,
    _check_domain,
    _column_pair,
    _encode,
    _hashable,
    _int_uniques,
    _Names,
    _prepare,
    _Ratings,
)
from ._result import ConfidenceInterval, ResultShape, undefined, user_stacklevel

#: ``method=`` values of the agreement functions: ``"wilson"`` (the score interval) is
#: percent agreement's default and only percent agreement's; the others every function's.
INTERVAL_METHODS: tuple[str, ...] = ("analytic", "percentile", "basic", "bca", "wilson")
#: ``method=`` values of :func:`krippendorff_alpha`: the jackknife over distinct unit patterns
#: besides the analytic and bootstrap intervals.
ALPHA_METHODS: tuple[str, ...] = ("analytic", "jackknife", "percentile", "basic", "bca")
#: ``distribution=`` values: the reference distribution of an analytic interval,
#: ``statistic +- c * SE`` with ``c`` the normal quantile or Student's t on ``n - 1`` df
#: (``n`` the units the SE is computed over), as Gwet's irrCAC does.
ANALYTIC_DISTRIBUTIONS: tuple[str, ...] = ("normal", "t")
#: The default reference distribution, chosen from ``benchmarks/interval_coverage.py``
#: (docs/calibration.md, section 6b): t covers closer to 0.95 than z at n <= 200.
DISTRIBUTION = "t"
#: ``weights=`` names of the weighted coefficients (besides a matrix or None).
WEIGHTS: tuple[str, ...] = ("identity", "linear", "quadratic", "ordinal", "ratio")
_EPS = 1e-12


# =========================================================================== weights


def weight_matrix(categories: Sequence[Any], weights: Any = None) -> np.ndarray:
    """Agreement weights ``w[k, l]`` in [0, 1] with ones on the diagonal.

    Parameters
    ----------
    categories : sequence
        The ordered category domain.  ``"linear"`` and ``"quadratic"`` use the
        category *values* when all are numbers (Gwet 2014, ch. 3) and their ranks
        otherwise; ``"ratio"`` needs positive numbers.
    weights : None, "identity", "linear", "quadratic", "ordinal", "ratio", or a (q, q) matrix
        ``None``/``"identity"``: 1 on the diagonal, 0 elsewhere.
        ``"linear"``: ``1 - |x_k - x_l| / (x_max - x_min)``;
        ``"quadratic"``: ``1 - (x_k - x_l)^2 / (x_max - x_min)^2``;
        ``"ordinal"``: Gwet's ordinal weights ``1 - C(|k-l|+1, 2) / C(q, 2)`` on ranks;
        ``"ratio"``: ``1 - ((x_k - x_l)/(x_k + x_l))^2 / max``.
        A matrix gives the agreement weights directly.

    Examples
    --------
    >>> weight_matrix([1, 2, 3], "linear")
    array([[1. , 0.5, 0. ],
           [0.5, 1. , 0.5],
           [0. , 0.5, 1. ]])
    """
    q = len(categories)
    if weights is None or (isinstance(weights, str) and weights == "identity"):
        return np.eye(q)
    if isinstance(weights, str):
        if weights not in WEIGHTS:
            raise ValueError(f"`weights` must be None, one of {', '.join(map(repr, WEIGHTS))} "
                             f"or a (q, q) matrix; got {weights!r}.")
        numeric = all(isinstance(c, numbers.Real) and not isinstance(c, bool) for c in categories)
        x = np.array(categories, dtype=float) if numeric else np.arange(1, q + 1, dtype=float)
        if q < 2:
            return np.ones((q, q))
        d = x[:, None] - x[None, :]
        if weights == "linear":
            span = x.max() - x.min()
            return 1.0 - np.abs(d) / span if span > 0 else np.eye(q)
        if weights == "quadratic":
            span = x.max() - x.min()
            return 1.0 - d ** 2 / span ** 2 if span > 0 else np.eye(q)
        if weights == "ordinal":
            rk = np.arange(1, q + 1)
            m = np.abs(rk[:, None] - rk[None, :]) + 1
            nk = m * (m - 1) / 2.0
            return 1.0 - nk / nk.max()
        # ratio
        if not numeric or np.any(x <= 0):
            raise ValueError("`weights='ratio'` needs positive numeric categories.")
        rr = (d / (x[:, None] + x[None, :])) ** 2
        return 1.0 - rr / rr.max()
    w = np.asarray(weights, dtype=float)
    if w.shape != (q, q):
        raise ValueError(f"`weights` matrix must be ({q}, {q}) for categories {list(categories)!r}; "
                         f"got shape {w.shape}.")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or np.any(w > 1):
        raise ValueError("`weights` matrix entries must be agreement weights in [0, 1].")
    if not np.allclose(np.diag(w), 1.0):
        raise ValueError("`weights` matrix must have ones on the diagonal (full agreement).")
    return w


# =========================================================================== result


@dataclass(frozen=True, eq=False)
class AgreementResult(ResultShape):
    """An agreement coefficient with its uncertainty and the counts behind it.

    Attributes
    ----------
    coefficient : str
        Name of the coefficient (``"cohen_kappa"``, ``"fleiss_kappa"``, ...).
    statistic : float or Abstention
        The coefficient; an abstention (with cause and reason) when undefined.
    standard_error : float or Abstention
        General (non-null) standard error: the large-sample SE of Fleiss, Cohen &
        Everitt (1969) for Cohen's kappa, Gwet's (2008, 2014) linearised SE for the
        multi-rater coefficients; the bootstrap SE where no analytic SE exists and
        a bootstrap was run.
    standard_error_null : float or Abstention
        SE under the hypothesis of chance agreement (kappa = 0), for testing only,
        where the literature defines one (Cohen's kappa; Fleiss' kappa with a
        constant number of raters, Fleiss, Nee & Landis 1979).  Never use it for
        an interval.
    confidence_interval : ConfidenceInterval or Abstention
    confidence_level : float
    method : str
        Interval method actually used: ``"analytic"``, ``"wilson"`` (percent
        agreement's score interval), or the bootstrap method.
    observed_agreement, expected_agreement : float or Abstention
        ``p_a`` and ``p_e`` (coefficient = (p_a - p_e) / (1 - p_e)).
    n_units : int
        Units given (rows), including ones with no usable rating.
    n_units_pairable : int
        Units with at least two answered ratings (they carry agreement information).
    n_ratings : int
        Ratings present (answered plus abstained; missing cells not counted).
    n_pairable_ratings : int
        Answered ratings in pairable units.
    n_abstained : int
        Ratings with an ``abstain=`` label.
    n_missing : int
        Missing cells (None/NaN, or a rater who did not rate a unit).
    coverage : float or Abstention
        Answered / (answered + abstained) ratings.
    categories : tuple
        The category domain used.
    weights : str
        ``"identity"``, a weight name, ``"custom"``, or the Krippendorff level.
    per_category : pandas.DataFrame or None
        Per-category kappas (Fleiss 1971) where the coefficient defines them
        (built on access from ``per_category_columns``).
    bootstrap : BootstrapResult or None
        The bootstrap behind the interval, when one was run; :attr:`seed` is its seed.
    distribution : str or None
        The reference distribution of an analytic interval (``"normal"`` or ``"t"``);
        None for a score or bootstrap interval.
    df : int or None
        Degrees of freedom of the t quantile (units behind the SE, minus one).
    """

    coefficient: str
    statistic: float | Abstention
    standard_error: float | Abstention
    standard_error_null: float | Abstention
    confidence_interval: ConfidenceInterval | Abstention
    confidence_level: float
    method: str
    observed_agreement: float | Abstention
    expected_agreement: float | Abstention
    n_units: int
    n_units_pairable: int
    n_ratings: int
    n_pairable_ratings: int
    n_abstained: int
    n_missing: int
    coverage: float | Abstention
    categories: tuple[Any, ...]
    weights: str
    per_category_columns: dict[str, Any] | None = field(default=None, repr=False)
    bootstrap: BootstrapResult | None = field(default=None, repr=False)
    distribution: str | None = None
    df: int | None = None

    @classmethod
    def abstaining(cls, coefficient: str, abstention: Abstention, *, confidence_level: float,
                   method: str = "none", categories: Sequence[Any] = (), weights: str = "identity",
                   n_units: int = 0) -> AgreementResult:
        """The result of a coefficient that was never computable here (every number is ``abstention``).

        For callers that must report a coefficient on data that has no pairable unit
        at all (a judge with no answered item), so the shape stays one result.
        """
        ab = abstention
        return cls(coefficient=coefficient, statistic=ab, standard_error=ab, standard_error_null=ab,
                   confidence_interval=ab, confidence_level=confidence_level, method=method,
                   observed_agreement=ab, expected_agreement=ab, n_units=n_units, n_units_pairable=0,
                   n_ratings=0, n_pairable_ratings=0, n_abstained=0, n_missing=0, coverage=ab,
                   categories=tuple(categories), weights=weights)

    @property
    def per_category(self) -> pd.DataFrame | None:
        """Per-category table (``category, proportion, kappa, cause, standard_error_null``), or None."""
        if self.per_category_columns is None:
            return None
        return pd.DataFrame(self.per_category_columns)

    def __float__(self) -> float:
        return float(self.statistic)  # raises for an abstention, by design

    @property
    def seed(self) -> int | None:
        """The ``rng=`` int that reproduces the bootstrap interval (:attr:`BootstrapResult.seed`)."""
        return None if self.bootstrap is None else self.bootstrap.seed

    @property
    def seed_reason(self) -> str | None:
        """Why :attr:`seed` is None: no bootstrap was run, or its seed is not knowable."""
        if self.bootstrap is None:
            return f"no resampling: the {self.method} interval draws no random numbers"
        return self.bootstrap.seed_reason

    def to_frame(self) -> pd.DataFrame:
        """One tidy row: ``coefficient, statistic, cause, reason, standard_error, ...``."""
        def num(x: Any) -> float | None:
            return None if isinstance(x, Abstention) else x

        shape = self.summary_row()
        row = {
            "coefficient": self.coefficient,
            **{k: shape[k] for k in ("statistic", "cause", "reason")},
            "standard_error": num(self.standard_error),
            "standard_error_null": num(self.standard_error_null),
            **{k: shape[k] for k in ("ci_low", "ci_high", "ci_cause")},
            "confidence_level": self.confidence_level,
            "method": self.method,
            "distribution": self.distribution,
            "df": self.df,
            "observed_agreement": num(self.observed_agreement),
            "expected_agreement": num(self.expected_agreement),
            "n_units": self.n_units,
            "n_units_pairable": self.n_units_pairable,
            "n_ratings": self.n_ratings,
            "n_pairable_ratings": self.n_pairable_ratings,
            "n_abstained": self.n_abstained,
            "n_missing": self.n_missing,
            "coverage": num(self.coverage),
            "weights": self.weights,
            "n_categories": len(self.categories),
            "n_resamples": None if self.bootstrap is None else self.bootstrap.n_resamples,
            "n_undefined_resamples": None if self.bootstrap is None else self.bootstrap.n_undefined,
            "seed": self.seed,
        }
        return pd.DataFrame([row])


# =========================================================================== engines
#
# Every coefficient is computed by a *batch* function of type counts W, shape
# (B, T): row b says how many units of each type a (re)sample holds.  The point
# estimate is the batch function on the observed counts; a bootstrap calls it on
# multinomial count matrices (evaltk.stats.bootstrap_table).


def _safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den``, NaN where ``|den| <= 1e-12`` (an undefined replicate), without warnings."""
    ok = np.abs(den) > _EPS
    if ok.all():
        return num / den
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=ok)
    return out


# ---------------------------------------------------------------- two-rater tables

_TWO_RATER = ("cohen", "scott", "pabak")


def _pair_table_batch(kind: str, w: np.ndarray, q: int) -> Callable[[np.ndarray], np.ndarray]:
    def stat(W: np.ndarray) -> np.ndarray:
        P = W.reshape(W.shape[0], q, q)
        n = P.sum(axis=(1, 2))
        P = P / np.where(n > 0, n, 1.0)[:, None, None]
        pa = np.einsum("bkl,kl->b", P, w)
        pe = _pair_pe(kind, P, w, q)
        out = _safe_ratio(pa - pe, 1.0 - pe)
        out[n < 1] = np.nan
        return out
    return stat


def _pair_pe(kind: str, P: np.ndarray, w: np.ndarray, q: int) -> np.ndarray:
    r, c = P.sum(axis=2), P.sum(axis=1)
    if kind == "cohen":
        return np.einsum("bk,kl,bl->b", r, w, c)
    if kind == "scott":
        pi = (r + c) / 2.0
        return np.einsum("bk,kl,bl->b", pi, w, pi)
    if kind == "pa":  # percent agreement: no chance correction
        return np.zeros(P.shape[0])
    return np.full(P.shape[0], w.sum() / q ** 2)  # pabak / Brennan-Prediger


def _cohen_variances(P: np.ndarray, w: np.ndarray, n: np.ndarray, kappa: np.ndarray, pe: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """General and null variances of Cohen's weighted kappa for tables of proportions ``P`` (m, q, q).

    Fleiss, Cohen & Everitt (1969): with ``wbar_k. = sum_l p_.l w_kl`` and
    ``wbar_.l = sum_k p_k. w_kl``,
    ``var = [sum p_kl (w_kl - (wbar_k. + wbar_.l)(1 - kappa))^2 - (kappa - p_e (1 - kappa))^2] / (n (1 - p_e)^2)``
    and ``var_0 = [sum p_k. p_.l (w_kl - (wbar_k. + wbar_.l))^2 - p_e^2] / (n (1 - p_e)^2)``.
    """
    r, c = P.sum(axis=2), P.sum(axis=1)
    wsum = np.einsum("kl,ml->mk", w, c)[:, :, None] + np.einsum("mk,kl->ml", r, w)[:, None, :]
    den = n * (1.0 - pe) ** 2
    a = (P * (w[None] - wsum * (1.0 - kappa)[:, None, None]) ** 2).sum(axis=(1, 2))
    a0 = (r[:, :, None] * c[:, None, :] * (w[None] - wsum) ** 2).sum(axis=(1, 2))
    return (a - (kappa - pe * (1.0 - kappa)) ** 2) / den, (a0 - pe ** 2) / den


def kappa_from_tables(tables: Any, *, weights: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Cohen's kappa and its large-sample SE for a stack of ``k x k`` count tables, vectorised.

    The array core of :func:`cohen_kappa` for callers that need many tables at once
    (simulations of a sample size, a bootstrap of tables).

    Parameters
    ----------
    tables : array_like, shape (m, k, k)
        Counts, rows the first rater, columns the second.
    weights : None, "linear", "quadratic" or a (k, k) matrix
        As in :func:`weight_matrix` over the ranks ``0 .. k-1``.

    Returns
    -------
    kappa, standard_error : ndarray, shape (m,)
        NaN where undefined (an empty table, or expected agreement 1).

    Notes
    -----
    ``kappa = (p_o - p_e) / (1 - p_e)``; the SE is Fleiss, Cohen & Everitt (1969).

    Examples
    --------
    >>> k, se = kappa_from_tables([[[20, 5], [10, 15]]])
    >>> round(float(k[0]), 4), round(float(se[0]), 4)
    (0.4, 0.127)
    """
    T = np.asarray(tables, dtype=float)
    if T.ndim != 3 or T.shape[1] != T.shape[2]:
        raise ValueError(f"`tables` must have shape (m, k, k); got {T.shape}.")
    q = T.shape[-1]
    w = weight_matrix(list(range(q)), weights)
    n = T.sum(axis=(1, 2))
    ok = n > 0
    P = T / np.where(ok, n, 1.0)[:, None, None]
    pa = np.einsum("bkl,kl->b", P, w)
    pe = _pair_pe("cohen", P, w, q)
    kappa = _safe_ratio(pa - pe, 1.0 - pe)
    with np.errstate(divide="ignore", invalid="ignore"):
        var, _ = _cohen_variances(P, w, np.where(ok, n, 1.0), kappa, pe)
    good = ok & np.isfinite(kappa)
    return np.where(good, kappa, np.nan), np.where(good, np.sqrt(np.maximum(var, 0.0)), np.nan)


def _pair_se(kind: str, P: np.ndarray, w: np.ndarray, n: float, q: int, coef: float
             ) -> tuple[float, float | None]:
    """General SE and null SE (two raters).

    Cohen: Fleiss, Cohen & Everitt (1969) eqs. for var(kappa_w) and var_0(kappa_w).
    Scott: Gwet (2014) eq. for Scott's pi on a contingency table.
    PABAK / Brennan-Prediger: Gwet (2014), var = (sum p_kl w_kl^2 - p_a^2) / (n (1 - p_e)^2).
    """
    r, c = P.sum(axis=1), P.sum(axis=0)
    pa = float((P * w).sum())
    if kind == "cohen":
        pe = _pair_pe("cohen", P[None], w, q)
        var, var0 = _cohen_variances(P[None], w, np.array([n]), np.array([coef]), pe)
        return math.sqrt(max(float(var[0]), 0.0)), math.sqrt(max(float(var0[0]), 0.0))
    if kind == "scott":
        pi = (r + c) / 2.0
        pe = float(pi @ w @ pi)  # type: ignore[assignment]  # a float here, an array for cohen
        pbk = ((w * c[:, None]).sum(axis=0) + (w * r[:, None]).sum(axis=0)) / 2.0
        a = (P * (w - (1.0 - coef) * (pbk[:, None] + pbk[None, :])) ** 2).sum()
        var = (a - (pa - 2.0 * (1.0 - coef) * pe) ** 2) / (n * (1.0 - pe) ** 2)
        return math.sqrt(max(var, 0.0)), None
    pe = w.sum() / q ** 2
    var = ((P * w ** 2).sum() - pa ** 2) / (n * (1.0 - pe) ** 2)
    return math.sqrt(max(var, 0.0)), None


# ---------------------------------------------------------------- multi-rater patterns


@dataclass(frozen=True)
class _Patterns:
    C: np.ndarray          # (T, q) category counts per unit type
    r: np.ndarray          # (T,) answered ratings per unit type
    # (n_rated_units,) type of each unit with >= 1 answered rating, or a function giving it (the
    # bootstrap alone reads it: a point estimate and its analytic SE need only the types)
    type_index: np.ndarray | Callable[[], np.ndarray]
    counts: np.ndarray     # (T,) observed units per type
    unit_codes: np.ndarray  # Conger: (T, n_raters) codes of each type; else (n_rated_units, n_raters) codes, maybe int8
    rated: np.ndarray | None = None  # mask of units with an answered rating (None: all)


def _key_types(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Type index, distinct keys (sorted) and counts of an int64 key: a bincount when the range allows."""
    got = _int_uniques(key, as_array=True)
    if got is None:
        ukeys, tidx, tcounts = np.unique(key, return_inverse=True, return_counts=True)
        return tidx.reshape(-1), ukeys, tcounts
    return got


def _row_types(rows: np.ndarray, base: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows of a small non-negative int matrix: (representative rows, type index, counts).

    Rows are encoded as base-``base`` integers when that fits in int64 (then a 1-D
    bincount or unique), which is much faster than ``np.unique(axis=0)``.
    """
    m, q = rows.shape
    if q and base ** q < 2 ** 62:
        key = rows[:, q - 1].astype(np.int64)
        for j in range(q - 2, -1, -1):           # Horner: a column loop beats an axis-1 reduction
            key *= base
            key += rows[:, j]
        tidx, _, tcounts = _key_types(key)
        rep = np.empty(tcounts.size, dtype=np.intp)
        rep[tidx] = np.arange(m)
        return rows[rep], tidx.astype(np.intp), tcounts
    uniq, tidx, tcounts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    return uniq, tidx.reshape(-1).astype(np.intp), tcounts


#: Every unit's row of rater codes is read as one int16 number (a rater pattern) when there are at
#: most this many possible patterns ...
_MAX_PATTERNS = 2 ** 15
#: ... and no more than the units or this many (building the per-pattern tables then costs
#: little beside reading the units).
_SMALL_PATTERNS = 4096


class _RaterKeys(NamedTuple):
    """Each unit's rater pattern (:func:`_rater_keys`) and the units of every possible pattern."""

    key: np.ndarray     # (n,) int16: sum_g digit_g * base ** g, rater 0 least significant
    hist: np.ndarray    # (base ** R,) units of each pattern
    digits: np.ndarray  # (base ** R, R) rater codes of each pattern, -1 missing or abstained


def _rater_keys(rt: _Ratings) -> _RaterKeys | None:
    """The rater pattern of every unit: the digits are the category codes (base ``q``) when no cell
    is missing or abstained, else the codes + 1 with 0 for a missing or abstained cell (base
    ``q + 1``).  Either way the patterns sort as the rows of codes do (rater ``R - 1`` first), so
    types taken in key order are those of a sort of the rows.  The key is made in int16 column by
    column (a Horner pass of ``R`` narrow operations on a 1-byte copy of the codes, twice as fast
    as on the intp columns themselves), counted with one bincount; None when the patterns could
    outnumber :data:`_MAX_PATTERNS` or, beyond :data:`_SMALL_PATTERNS`, the units."""
    codes = rt.codes
    q = len(rt.categories)
    n, R = codes.shape
    shift = 1 if rt.n_missing or rt.n_abstained else 0
    base = q + shift
    n_pat = base ** R
    if not q or n_pat > min(_MAX_PATTERNS, max(n, _SMALL_PATTERNS)):
        return None
    small = codes if codes.dtype == np.int8 else codes.astype(np.int8 if q < 127 else np.int16)  # -2 .. q - 1
    if rt.n_abstained:
        small = np.maximum(small, -1)               # abstained reads as missing
    key = small[:, R - 1].astype(np.int16)
    for g in range(R - 2, -1, -1):
        key *= np.int16(base)
        np.add(key, small[:, g], out=key)           # |key| < base ** R <= 2 ** 15 throughout
    if shift:
        key += np.int16(sum(base ** g for g in range(R)))   # every digit + 1: a missing cell reads 0
    hist = np.bincount(key, minlength=n_pat)
    digits = (np.arange(n_pat)[:, None] // base ** np.arange(R)[None, :]) % base - shift
    return _RaterKeys(key, hist, digits)


def _unit_types(keys: _RaterKeys, tlookup: np.ndarray) -> tuple[Callable[[], np.ndarray], np.ndarray | None]:
    """Each rated unit's type through its rater pattern's (``tlookup``: -1 for a pattern of no
    answered rating), as a function (one gather when the bootstrap asks), and the mask of the
    rated units (None: all)."""
    unrated = tlookup < 0
    rated = None
    if bool((unrated & (keys.hist > 0)).any()):
        rated = ~np.take(unrated, keys.key)

    def type_index() -> np.ndarray:
        t = np.take(tlookup, keys.key)
        return t if rated is None else t[rated]
    return type_index, rated


def _rater_patterns(codes: np.ndarray, q: int, keys: _RaterKeys | None = None) -> _Patterns:
    """Conger's unit types: each unit's row of rater codes as one base-(q+1) integer (0 missing).

    The per-type category counts come from the decoded distinct rows, so nothing of size
    (n, q) is built; the types are those (and in the order) of :func:`_row_types`.
    """
    n, R = codes.shape
    type_index: np.ndarray | Callable[[], np.ndarray]
    if keys is not None:   # the types are the patterns that occur, in key order
        seen = (keys.hist > 0) & (keys.digits.max(axis=1) >= 0)   # (not the pattern of no rating)
        type_index, rated_mask = _unit_types(keys, np.where(seen, np.cumsum(seen, dtype=np.intp) - 1, -1))
        U = keys.digits[seen].astype(np.intp)
        tcounts = keys.hist[seen]
    else:
        base = q + 1
        key = np.zeros(n, dtype=np.int64)
        for g in range(R - 1, -1, -1):               # Horner, rater 0 least significant
            key *= base
            key += np.maximum(codes[:, g], -1) + 1
        rated = key > 0
        rated_mask = None if bool(rated.all()) else rated
        if rated_mask is not None:
            key = key[rated_mask]
        tidx, ukeys, tcounts = _key_types(key)
        type_index = np.asarray(tidx, dtype=np.intp)
        pw = base ** np.arange(R, dtype=np.int64)
        U = ((ukeys[:, None] // pw[None, :]) % base).astype(np.intp) - 1          # (T, R), -1 missing
    T = U.shape[0]
    tt, gg = np.nonzero(U >= 0)
    C = np.bincount(tt * q + U[tt, gg], minlength=T * q).reshape(T, q).astype(float)
    return _Patterns(C=C, r=C.sum(axis=1), type_index=type_index,
                     counts=np.asarray(tcounts, dtype=float), unit_codes=U, rated=rated_mask)


def _patterns(rt: _Ratings, *, by_rater: bool = False, dedupe: bool = True) -> _Patterns:
    """Unit types for the batch statistics.

    A unit's type is its vector of category counts (``by_rater=True``: its row of
    rater-specific codes, for Conger).  ``dedupe=True`` merges units of the same
    type (few types: the bootstrap draws one multinomial cell per type);
    ``dedupe=False`` may keep one type per unit when merging would cost more than
    it saves (only the point estimate and the analytic SE are needed then).
    The codes may be int8 (:func:`_prepare` with ``narrow=True``): the rater-pattern route
    reads them as they are, every other route widens them to intp first.
    """
    codes = rt.codes
    q = len(rt.categories)
    n, R = codes.shape
    base = R + 1
    keys = _rater_keys(rt) if by_rater or (q and base ** q <= 1_000_000) else None
    if keys is None:
        codes = codes.astype(np.intp, copy=False)
    if by_rater and q and (keys is not None or (q + 1) ** R < 2 ** 62):
        return _rater_patterns(codes, q, keys)
    if keys is not None:
        # the count vector of each rater pattern (as below, one base-(R+1) integer), so each
        # unit's type is one gather through the pattern's
        pw = np.zeros(q + 2, dtype=np.int64)
        pw[:q] = base ** np.arange(q, dtype=np.int64)
        pkeys = np.take(pw, keys.digits).sum(axis=1)     # digits -1 (missing) take pw[-1] = 0
        seen = (keys.hist > 0) & (pkeys > 0)
        ukeys, inv = np.unique(pkeys[seen], return_inverse=True)
        tlookup = np.full(pkeys.size, -1, dtype=np.intp)
        tlookup[seen] = inv.reshape(-1)
        types_of, rated_mask = _unit_types(keys, tlookup)
        codes_r = codes if rated_mask is None else codes[rated_mask]
        C = ((ukeys[:, None] // pw[None, :q]) % base).astype(float)
        return _Patterns(C=C, r=C.sum(axis=1), type_index=types_of, unit_codes=codes_r, rated=rated_mask,
                         counts=np.bincount(inv.reshape(-1), weights=keys.hist[seen], minlength=ukeys.size))
    if not by_rater and q and base ** q <= 1_000_000:
        # The count vector as one base-(R+1) integer, summed straight from the codes:
        # key_i = sum_g base ** code_ig (missing / abstained cells add 0).
        pw = np.zeros(q + 2, dtype=np.int64)
        pw[:q] = base ** np.arange(q, dtype=np.int64)
        key = np.take(pw, codes[:, 0])
        for g in range(1, R):
            key += np.take(pw, codes[:, g])
        rated_mask = None
        codes_r = codes
        if rt.n_missing or rt.n_abstained:
            rated = key > 0
            if not bool(rated.all()):
                rated_mask = rated
                key = key[rated]
                codes_r = codes[rated]
        # small key range: the distinct types come from one bincount
        got = _int_uniques(key)
        assert got is not None  # the key range is at most 10^6
        tidx, labels, tcounts = got
        ukeys = np.asarray(labels, dtype=np.int64)
        C = ((ukeys[:, None] // pw[None, :q]) % base).astype(float)
        return _Patterns(C=C, r=C.sum(axis=1), type_index=np.asarray(tidx, dtype=np.intp),
                         counts=np.asarray(tcounts, dtype=float), unit_codes=codes_r, rated=rated_mask)
    # general path: the count matrix, then distinct rows
    key2 = np.maximum(codes, -1)
    key2 += (np.arange(n) * (q + 1) + 1)[:, None]
    full = np.bincount(key2.reshape(-1), minlength=n * (q + 1)).reshape(n, q + 1)
    rated = full[:, 0] < R
    rated_mask = None if bool(rated.all()) else rated
    codes_r = codes if rated_mask is None else codes[rated]
    cnt = full[:, 1:] if rated_mask is None else full[rated, 1:]
    if by_rater:
        uniq, tidx, tcounts = _row_types(np.where(codes_r >= 0, codes_r + 1, 0), q + 1)
        uniq = uniq - 1
        C = cnt[np.unique(tidx, return_index=True)[1]].astype(float)
    elif dedupe:
        uniq_c, tidx, tcounts = _row_types(cnt, R + 1)
        C = uniq_c.astype(float)
        uniq = np.zeros((C.shape[0], 0), dtype=np.intp)
    else:
        m = cnt.shape[0]
        C, tidx, tcounts = cnt.astype(float), np.arange(m, dtype=np.intp), np.ones(m)
        uniq = np.zeros((m, 0), dtype=np.intp)
    return _Patterns(C=C, r=C.sum(axis=1), type_index=tidx,
                     counts=tcounts.astype(float), unit_codes=uniq if by_rater else codes_r,
                     rated=rated_mask)


def _multi_parts(W: np.ndarray, pat: _Patterns, w: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return pa (B,), pi (B, q), n (B,), n2 (B,) - Gwet's raw-data components."""
    C, r = pat.C, pat.r
    two = r >= 2
    cw = C @ w.T                              # agree.mat.w: sum_l w_kl r_il
    sum_q = (C * (cw - 1.0)).sum(axis=1)
    pa_t = np.zeros_like(r)
    pa_t[two] = sum_q[two] / (r[two] * (r[two] - 1.0))
    n = W.sum(axis=1)
    n2 = W @ two.astype(float)
    pa = _safe_ratio(W @ pa_t, n2)
    pi = _safe_ratio_2d(W @ (C / r[:, None]), n)
    return pa, pi, n, n2


def _safe_ratio_2d(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Rows of ``num`` divided by ``den``; NaN rows where ``den <= 0``."""
    ok = den > 0
    if ok.all():
        return num / den[:, None]
    out = np.full(num.shape, np.nan)
    np.divide(num, den[:, None], out=out, where=ok[:, None])
    return out


def _multi_pe(kind: str, pi: np.ndarray, w: np.ndarray, q: int) -> np.ndarray:
    if kind == "fleiss":
        return np.einsum("bk,kl,bl->b", pi, w, pi)
    if kind == "gwet":
        if q < 2:
            return np.full(pi.shape[0], np.nan)
        return w.sum() * (pi * (1.0 - pi)).sum(axis=1) / (q * (q - 1))
    if kind == "bp":
        return np.full(pi.shape[0], w.sum() / q ** 2)
    if kind == "pa":
        return np.zeros(pi.shape[0])
    raise ValueError(kind)


def _multi_batch(kind: str, pat: _Patterns, w: np.ndarray, q: int) -> Callable[[np.ndarray], np.ndarray]:
    def stat(W: np.ndarray) -> np.ndarray:
        pa, pi, n, n2 = _multi_parts(W, pat, w)
        if kind == "pa":
            return pa
        pe = _multi_pe(kind, pi, w, q)
        return _safe_ratio(pa - pe, 1.0 - pe)
    return stat


def _multi_se(kind: str, pat: _Patterns, w: np.ndarray, q: int, coef: float, pa: float, pe: float,
              pi: np.ndarray) -> float:
    """Gwet's (2008; 2014, ch. 5) linearised variance over units; f = 0 (infinite population)."""
    C, r, cnt = pat.C, pat.r, pat.counts
    n = cnt.sum()
    two = r >= 2
    n2 = cnt[two].sum()
    cw = C @ w.T
    sum_q = (C * (cw - 1.0)).sum(axis=1)
    den = r * (r - 1.0)
    pa_i = np.where(two, sum_q / np.where(two, den, 1.0), 0.0)
    if kind == "pa":
        x = (n / n2) * pa_i
        x_star, centre = x, pa
    else:
        pe_r2 = pe * two
        k_i = (n / n2) * (pa_i - pe_r2) / (1.0 - pe)
        if kind == "fleiss":
            piw = (w @ pi + w.T @ pi) / 2.0
            pe_i = (C @ piw) / r
        elif kind == "gwet":
            pe_i = (w.sum() / (q * (q - 1))) * (C @ (1.0 - pi)) / r
        else:  # bp: chance agreement is a constant
            pe_i = np.full_like(r, pe)
        x_star = k_i - 2.0 * (1.0 - coef) * (pe_i - pe) / (1.0 - pe)
        centre = coef
    if n < 2:
        return math.nan
    var = float((cnt * (x_star - centre) ** 2).sum()) / (n * (n - 1.0))
    return math.sqrt(max(var, 0.0))


# ---------------------------------------------------------------- Krippendorff


def _kripp_weights_batch(level: str, cats: tuple[Any, ...], nc: np.ndarray) -> np.ndarray:
    """(B, q, q) agreement weights 1 - delta^2 / max(delta^2), Krippendorff (2011) metrics."""
    B, q = nc.shape
    if level == "nominal":
        return np.broadcast_to(np.eye(q), (B, q, q))
    if level == "ordinal":
        S = np.cumsum(nc, axis=1)
        Sm = np.concatenate([np.zeros((B, 1)), S[:, :-1]], axis=1)
        k = np.arange(q)
        lo = np.minimum(k[:, None], k[None, :])
        hi = np.maximum(k[:, None], k[None, :])
        d = S[:, hi] - Sm[:, lo] - (nc[:, lo] + nc[:, hi]) / 2.0
        d2 = d ** 2
    else:
        x = np.asarray(cats, dtype=float)
        diff = x[:, None] - x[None, :]
        if level == "interval":
            d2 = np.broadcast_to(diff ** 2, (B, q, q))
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                d2 = np.broadcast_to(np.nan_to_num((diff / (x[:, None] + x[None, :])) ** 2), (B, q, q))
    mx = d2.max(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 - d2 / mx[:, None, None]
    out[~(mx > 0)] = np.nan
    return out


class _KrippSums(NamedTuple):
    """Sums over units that alpha is a function of (each adds across units, so one resample or one
    deleted unit is a matrix product or a subtraction): units, pairable values ``n..``, value
    marginals ``n_c``, and the coincidence term (nominal: ``sum_c n_uc (n_uc - 1) / (m_u - 1)``;
    else the coincidences ``sum_u n_uc n_uk / (m_u - 1)`` and ``sum_u m_u / (m_u - 1)``)."""

    n: np.ndarray        # (B,)
    tot: np.ndarray      # (B,)
    nc: np.ndarray       # (B, q)
    agree: np.ndarray    # (B,) nominal, (B, q * q) otherwise
    r_frac: np.ndarray   # (B,) (zeros for nominal)


class _KrippFeatures(NamedTuple):
    """Per pairable unit type: the rows whose weighted sums are :class:`_KrippSums`."""

    two: np.ndarray       # mask of pairable types among all types
    all_two: bool
    r2: np.ndarray        # (T2,)
    C2: np.ndarray        # (T2, q)
    agree: np.ndarray     # (T2,) or (T2, q * q)
    r_frac: np.ndarray    # (T2,)

    def sums(self, W: np.ndarray) -> _KrippSums:
        W2 = W if self.all_two else W[:, self.two]
        return _KrippSums(W2.sum(axis=1), W2 @ self.r2, W2 @ self.C2, W2 @ self.agree,
                          W2 @ self.r_frac)

    def deleted(self, full: _KrippSums) -> _KrippSums:
        """The sums with one unit of each pairable type left out (the delete-one jackknife)."""
        return _KrippSums(np.full(self.r2.shape, full.n[0] - 1.0), full.tot - self.r2, full.nc - self.C2, full.agree - self.agree,
                          full.r_frac - self.r_frac)


def _kripp_features(pat: _Patterns, level: str) -> _KrippFeatures:
    C, r = pat.C, pat.r
    two = r >= 2
    all_two = bool(two.all())
    C2, r2 = (C, r) if all_two else (C[two], r[two])
    q = C.shape[1]
    if level == "nominal":
        agree = (C2 * (C2 - 1.0)).sum(axis=1) / (r2 - 1.0)
        r_frac = np.zeros_like(r2)
    else:
        agree = (C2[:, :, None] * C2[:, None, :]).reshape(C2.shape[0], q * q) / (r2 - 1.0)[:, None]
        r_frac = r2 / (r2 - 1.0)
    return _KrippFeatures(two, all_two, r2, C2, agree, r_frac)


def _kripp_value(s: _KrippSums, level: str, cats: tuple[Any, ...]) -> np.ndarray:
    """Alpha (B,) from its sums, in Gwet's (2014) agreement form (NaN where undefined)."""
    q = s.nc.shape[1]
    pi = _safe_ratio_2d(s.nc, s.tot)
    eps = _safe_ratio(np.ones_like(s.tot), s.tot)
    if level == "nominal":            # identity weights: no (B, q, q) intermediate
        pa = _safe_ratio(s.agree, s.tot)
        pe = (pi * pi).sum(axis=1)
    else:
        wts = _kripp_weights_batch(level, cats, s.nc)   # (B, q, q)
        # observed: sum_kl w_kl coinc_kl - sum_u m_u / (m_u - 1), over n..
        sq = np.einsum("bkl,bkl->b", wts, s.agree.reshape(-1, q, q)) - s.r_frac
        pa = _safe_ratio(sq, s.tot)
        pe = np.einsum("bk,bkl,bl->b", pi, wts, pi)
    pa_full = (1.0 - eps) * pa + eps  # Gwet (2014): p_a = (1 - 1/n..) p_a' + 1/n..
    out = _safe_ratio(pa_full - pe, 1.0 - pe)
    out[s.n < 1] = np.nan
    return out


def _kripp_batch(pat: _Patterns, level: str, cats: tuple[Any, ...]) -> Callable[[np.ndarray], np.ndarray]:
    feats = _kripp_features(pat, level)

    def stat(W: np.ndarray) -> np.ndarray:
        return _kripp_value(feats.sums(W), level, cats)
    return stat


def _kripp_jackknife_se(pat: _Patterns, level: str, cats: tuple[Any, ...]) -> float:
    """Delete-one-unit jackknife SE of alpha over the pairable units (Efron & Tibshirani 1993, ch. 11).

    Units of one type give the same leave-one-out value, so the cost is one evaluation per
    distinct pairable unit type, each from the full sums less that type's row: O(T q^2), not
    O(n) evaluations.  Alpha is a smooth function of unit means, where the jackknife variance
    is consistent.  NaN when fewer than two pairable units or a leave-one-out value is undefined.
    """
    feats = _kripp_features(pat, level)
    cnt = pat.counts if feats.all_two else pat.counts[feats.two]
    N = float(cnt.sum())
    if N < 2:
        return math.nan
    loo = _kripp_value(feats.deleted(feats.sums(pat.counts[None, :])), level, cats)
    if not np.all(np.isfinite(loo)):
        return math.nan
    mean = float(cnt @ loo) / N
    dev = loo - mean
    return math.sqrt((N - 1.0) / N * float(cnt @ (dev * dev)))


def _kripp_se(pat: _Patterns, w: np.ndarray, pe: float) -> float:
    """Gwet's (2014) linearised SE of Krippendorff's alpha (irrCAC ``krippen.alpha.raw``)."""
    two = pat.r >= 2
    if two.all():
        C, r, cnt = pat.C, pat.r, pat.counts
    else:
        C, r, cnt = pat.C[two], pat.r[two], pat.counts[two]
    n = cnt.sum()
    if n < 2:
        return math.nan
    rbar = float((cnt * r).sum() / n)
    nominal = bool(np.array_equal(w, np.eye(w.shape[0])))
    cw = C if nominal else C @ w.T
    sum_q = (C * (cw - 1.0)).sum(axis=1)
    paprime = float((cnt * sum_q / (rbar * (r - 1.0))).sum() / n)
    pi = (cnt @ C) / (n * rbar)
    alpha_p = (paprime - pe) / (1.0 - pe)
    eps = 1.0 / float((cnt * r).sum())
    pa = (1.0 - eps) * paprime + eps
    # centring term uses p_a, as irrCAC's published output does (Gwet 2014 worked examples)
    pa_i = sum_q / (rbar * (r - 1.0)) - pa * (r - rbar) / rbar
    k_i = (pa_i - pe) / (1.0 - pe)
    piw = pi if nominal else (w @ pi + w.T @ pi) / 2.0
    pe_i = (C @ piw) / rbar - pe * (r - rbar) / rbar
    x = k_i - 2.0 * (1.0 - alpha_p) * (pe_i - pe) / (1.0 - pe)
    dev = x - alpha_p
    var = float(np.dot(cnt, dev * dev)) / (n * (n - 1.0))
    return math.sqrt(max(var, 0.0))


# ---------------------------------------------------------------- Conger


def _conger_parts(W: np.ndarray, pat: _Patterns, w: np.ndarray, q: int, R: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """pa and pe (B,) for Conger's kappa from rater-specific unit patterns."""
    pa, _, _, _ = _multi_parts(W, pat, w)
    U = pat.unit_codes                                # (T, R)
    onehot = np.zeros((U.shape[0], R, q))
    t_idx, g_idx = np.nonzero(U >= 0)
    onehot[t_idx, g_idx, U[t_idx, g_idx]] = 1.0
    cl = (W @ onehot.reshape(U.shape[0], R * q)).reshape(-1, R, q)   # (B, R, q)
    ng = cl.sum(axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        pgk = cl / ng[:, :, None]
    pbar = pgk.mean(axis=1)                             # (B, q)
    s2 = (np.einsum("bgk,bgl->bkl", pgk, pgk) - R * np.einsum("bk,bl->bkl", pbar, pbar)) / (R - 1)
    pe = np.einsum("kl,bkl->b", w, np.einsum("bk,bl->bkl", pbar, pbar) - s2 / R)
    bad = ~(ng > 0).all(axis=1)
    pe[bad] = np.nan
    return pa, pe


def _conger_se(pat: _Patterns, w: np.ndarray, q: int, coef: float, pe: float) -> float:
    """Gwet's (2014) linearised SE of Conger's kappa (irrCAC ``conger.kappa.raw``), per unit pattern.

    A unit's term depends only on its row of rater-specific codes, so it is computed once per
    distinct row (``pat.unit_codes``, multiplicities ``pat.counts``).  The chance-agreement
    term ``pe_i = sum_{g,k} lambda_igk (r pbar_k - p_gk) / (r (r - 1))`` with
    ``lambda_igk = (n / n_g) sum_l w_kl (delta_igl - (eps_ig - n_g / n) p_gl)`` is, with
    ``M = (r pbar - p) w``, ``sum_g (n / n_g) [eps_ig M_g,c_ig - (eps_ig - n_g / n) (p_g . M_g)]``:
    a gather per (pattern, rater), no (n, r, q) tensor.
    """
    U, cnt, C, r = pat.unit_codes, pat.counts, pat.C, pat.r
    n = float(cnt.sum())
    T, R = U.shape
    valid = U >= 0
    ng = cnt @ valid                                      # (R,) units each rater rated
    pgk = np.zeros((R, q))
    tt, gg = np.nonzero(valid)
    np.add.at(pgk, (gg, U[tt, gg]), cnt[tt])
    pgk /= ng[:, None]
    fac = R * pgk.mean(axis=0)[None, :] - pgk             # (R, q)
    M = fac @ w                                           # M_gl = sum_k fac_gk w_kl
    s_g = (pgk * M).sum(axis=1)                           # (R,)
    hit = np.zeros((T, R))
    hit[tt, gg] = M[gg, U[tt, gg]]
    eps = valid.astype(float)
    pe_i = ((hit - (eps - ng[None, :] / n) * s_g[None, :]) * (n / ng)[None, :]).sum(axis=1) / (R * (R - 1))
    two = r >= 2
    n2 = float(cnt[two].sum())
    cw = C @ w.T
    sum_q = (C * (cw - 1.0)).sum(axis=1)
    pa_i = np.where(two, sum_q / np.where(two, r * (r - 1.0), 1.0), 0.0)
    k_i = (n / n2) * (pa_i - pe * two) / (1.0 - pe)
    x = k_i - 2.0 * (1.0 - coef) * (pe_i - pe) / (1.0 - pe)
    if n < 2:
        return math.nan
    var = float(cnt @ ((x - coef) ** 2)) / (n * (n - 1.0))
    return math.sqrt(max(var, 0.0))


# =========================================================================== shared driver


def _analytic_ci(stat: float, se: float | Abstention, confidence_level: float, distribution: str = "normal",
                 df: int = 0) -> ConfidenceInterval | Abstention:
    if isinstance(se, Abstention) or not math.isfinite(se):
        return Abstention(Cause.MISSING_EVIDENCE, "no standard error")
    c = critical_value(confidence_level, distribution, df)
    return ConfidenceInterval(max(-1.0, stat - c * se), min(1.0, stat + c * se))


def _zero_se_reason(n: int, what: str = "the large-sample standard error") -> str:
    """Why an SE of 0 from a sample abstains: a boundary of the sample space, not precision."""
    return (f"{what} is 0 at this boundary (every unit agrees in the same way, e.g. perfect "
            f"agreement); it measures no precision from {n} unit(s), so no interval follows from it")


def _wilson_ci(pa: float, n: int, confidence_level: float) -> ConfidenceInterval:
    """Wilson's score interval of percent agreement over ``n`` pairable units.

    Exact in form for two raters and identity weights (each unit agrees or not); for
    fractional per-unit agreement (more raters, weights) the unit mean lies in [0, 1], so
    its variance is at most ``p (1 - p) / n`` and the score interval is conservative.
    """
    low, high = wilson_bounds(pa * n, n, confidence_level=confidence_level)
    return ConfidenceInterval(float(low), float(high))


def _finish(
    *, fn: str, rt: _Ratings, coef: float, pa: float, pe: float, se: float | None,
    se0: float | None, se0_reason: str, n_pairable_units: int, n_pairable_ratings: int,
    undefined_reason: str | None, weights_name: str, method: str, confidence_level: float,
    boot: Callable[[], BootstrapResult] | None, per_category: dict[str, Any] | None = None,
    no_se_reason: str = "no analytic standard error is defined; use a bootstrap method",
    no_interval_reason: str | None = None, distribution: str = "normal", n_se: int = 0,
) -> AgreementResult:
    n_units = rt.codes.shape[0]
    if undefined_reason is None and n_pairable_units < 2:
        # one unit cannot support agreement beyond chance: never a 0.0 or 1.0 by accident
        undefined_reason = f"{n_pairable_units} pairable unit(s): agreement needs at least two"
    answered = int(rt.codes.size - rt.n_missing - rt.n_abstained)
    n_ratings = answered + rt.n_abstained
    coverage: float | Abstention = (answered / n_ratings if n_ratings
                                    else Abstention(Cause.MISSING_EVIDENCE, "no ratings"))
    common = dict(
        coefficient=fn, confidence_level=confidence_level, n_units=n_units,
        n_units_pairable=n_pairable_units, n_ratings=n_ratings,
        n_pairable_ratings=n_pairable_ratings, n_abstained=rt.n_abstained, n_missing=rt.n_missing,
        coverage=coverage, categories=rt.categories, weights=weights_name,
    )
    if undefined_reason is not None:
        ab = undefined(undefined_reason, what=fn)
        pa_v: float | Abstention = pa if math.isfinite(pa) else ab
        pe_v: float | Abstention = pe if math.isfinite(pe) else ab
        return AgreementResult(statistic=ab, standard_error=ab, standard_error_null=ab,
                               confidence_interval=ab, method=method, observed_agreement=pa_v,
                               expected_agreement=pe_v, per_category_columns=per_category, **common)
    few = "fewer than two pairable units: the standard error is undefined"
    se_v = _se_value(se, no_se_reason, few, n_se)
    se0_v = _se_value(se0, se0_reason, few, n_se, what="the null-hypothesis standard error")
    bres = None
    dist: str | None = None
    df: int | None = None
    if method == "wilson":
        if fn != "percent_agreement":
            raise ValueError(f"{fn}: method='wilson' is percent agreement's score interval; pass "
                             "method='analytic', 'percentile', 'basic' or 'bca'.")
        ci: ConfidenceInterval | Abstention = _wilson_ci(coef, n_pairable_units, confidence_level)
        used = "wilson"
    elif method == "analytic":
        if se is None:
            raise ValueError(f"{fn}: method='analytic' is unavailable ({no_se_reason}); "
                             "pass method='percentile', 'basic' or 'bca'.")
        dist, df = distribution, max(n_se - 1, 1)
        if isinstance(se_v, Abstention):
            warnings.warn(f"{fn}: no interval ({se_v.reason}).", UndefinedWarning, stacklevel=user_stacklevel())
            ci = se_v
        else:
            ci = _analytic_ci(coef, se_v, confidence_level, distribution, df)
            if fn == "percent_agreement" and isinstance(ci, ConfidenceInterval):  # a share lives in [0, 1]
                ci = ConfidenceInterval(max(0.0, ci.low), ci.high)
        used = "analytic"
    else:
        assert boot is not None
        bres = boot()
        ci = bres.confidence_interval
        used = bres.method
        if isinstance(se_v, Abstention):
            se_v = bres.standard_error
    if no_interval_reason is not None:  # a boundary where every resample repeats the estimate
        warnings.warn(f"{fn}: no interval ({no_interval_reason}).", UndefinedWarning,
                      stacklevel=user_stacklevel())
        se_v = ci = Abstention(Cause.MISSING_EVIDENCE, no_interval_reason)
        if not (isinstance(se0_v, Abstention) and se0_v.cause is Cause.NOT_APPLICABLE):
            se0_v = Abstention(Cause.MISSING_EVIDENCE, f"no null-hypothesis SE at this boundary: {no_interval_reason}")
    return AgreementResult(statistic=coef, standard_error=se_v, standard_error_null=se0_v,
                           confidence_interval=ci, method=used, observed_agreement=pa,
                           expected_agreement=pe, per_category_columns=per_category, bootstrap=bres,
                           distribution=dist, df=df, **common)


def _se_value(se: float | None, none_reason: str, few: str, n: int,
              what: str = "the large-sample standard error") -> float | Abstention:
    """An SE as reported: not defined here, undefined (too few units), 0 at a boundary (abstains), or the number."""
    if se is None:
        return Abstention(Cause.NOT_APPLICABLE, none_reason)
    if not math.isfinite(se):
        return Abstention(Cause.MISSING_EVIDENCE, few)
    if se <= _EPS:
        return Abstention(Cause.MISSING_EVIDENCE, _zero_se_reason(n, what))
    return se


def _boot_factory(type_index: np.ndarray | Callable[[], np.ndarray], n_types: int,
                  stat: Callable[[np.ndarray], np.ndarray],
                  rt_rated: np.ndarray | Callable[[], np.ndarray] | None, *, n_all_units: int, method: str, confidence_level: float, n_resamples: int,
                  rng: Any, unit: str, clusters: Any, strata: Any, undefined: str
                  ) -> Callable[[], BootstrapResult]:
    def run() -> BootstrapResult:
        cl = None if clusters is None else np.asarray(clusters, dtype=object)
        stt = None if strata is None else np.asarray(strata, dtype=object)
        n_units = n_all_units
        keep = slice(None) if rt_rated is None else rt_rated() if callable(rt_rated) else rt_rated
        for name, arr in (("clusters", cl), ("strata", stt)):
            if arr is not None and arr.shape != (n_units,):
                raise InputError(f"`{name}` must have one label per unit ({n_units}); got shape {arr.shape}.",
                                 field=name)
        return bootstrap_table(
            type_index() if callable(type_index) else type_index, stat, n_types=n_types, method=method, unit=unit,
            clusters=None if cl is None else cl[keep], strata=None if stt is None else stt[keep],
            n_resamples=n_resamples, confidence_level=confidence_level, rng=rng,
            undefined=undefined)
    return run


def _weights_name(weights: Any) -> str:
    if weights is None:
        return "identity"
    return weights if isinstance(weights, str) else "custom"


# =========================================================================== two-rater API

_DOC_COMMON = """
    categories : sequence, optional
        The declared category domain, in order.  Labels outside it (and not in
        ``abstain``) raise :class:`~evaltk.errors.InputError`; declared but unseen
        categories count in chance agreement for the weighted forms (with a
        :class:`CategoryDomainWarning`).
    abstain : label or sequence of labels, optional
        Labels that mean "the rater declined": excluded from agreement, counted in
        ``n_abstained`` and ``coverage``.  Default: the answer vocabulary's abstain
        words (:data:`evaltk.values.ABSTAIN_WORDS`: "cannot_tell", "Cannot tell",
        "Unsure", ...); a label declared in ``categories`` is never an abstention.
        ``abstain=()`` treats every label as a category.
    confidence_level : float, default 0.95
    method : {"analytic", "percentile", "basic", "bca"} (percent agreement also "wilson", its default)
        Interval: analytic (general SE) or a bootstrap over units.  At a boundary
        where the SE is 0 (perfect agreement) the SE and the analytic interval
        abstain with the cause, and a bootstrap whose resamples all equal the
        estimate abstains too: never a zero-width interval from a sample.
    distribution : {"t", "normal"}, default "t"
        Reference distribution of the analytic interval: ``statistic +- c * SE``
        with ``c`` Student's t quantile on ``n - 1`` degrees of freedom (``n`` the
        units the SE is computed over; Gwet's irrCAC) or the normal quantile.
        Recorded as ``distribution`` and ``df`` on the result; the default is the
        one ``benchmarks/interval_coverage.py`` supports (docs/calibration.md).
    n_resamples, rng, unit, clusters, strata, undefined
        Bootstrap options (see :func:`evaltk.stats.bootstrap_table`);
        ``clusters``/``strata`` carry one label per unit (row).
    data, item, rater, rating
        A long DataFrame and its column names instead of arrays.
"""



_MULTI_DOC = """
    Parameters
    ----------
    ratings : array-like (units x raters) or DataFrame (rows units, columns raters)
        Labels; None/NaN where a rater did not rate a unit.  With ``y2`` given,
        ``ratings`` and ``y2`` are two raters' sequences.
    y2 : sequence, optional
""" + _DOC_COMMON


def _fill_doc(f: Callable[..., Any]) -> Callable[..., Any]:
    """Insert the shared parameter descriptions into a public docstring."""
    if f.__doc__:
        f.__doc__ = f.__doc__.replace("{multi}", _MULTI_DOC).replace("{common}", _DOC_COMMON)
    return f


def _int_pair_table(y1: Any, y2: Any, categories: Any, fn: str
                    ) -> tuple[_Ratings, np.ndarray, Callable[[], np.ndarray]] | None:
    """Fast path for two int label arrays: the q x q table straight from one bincount.

    Returns None when the inputs are not plain int arrays of a small range (the
    general path handles them).  The per-unit cell codes (needed only by a
    cluster or stratified bootstrap) are computed lazily.
    """
    names = _Names(y1.index, y1.columns) if isinstance(y1, pd.DataFrame) else _Names()
    if y2 is None and isinstance(y1, pd.DataFrame | np.ndarray) and y1.ndim == 2 and y1.shape[1] == 2:
        y1, y2 = (y1.iloc[:, 0], y1.iloc[:, 1]) if isinstance(y1, pd.DataFrame) else (y1[:, 0], y1[:, 1])
    y1, y2 = (y.to_numpy() if isinstance(y, pd.Series) and isinstance(y.dtype, np.dtype) else y for y in (y1, y2))
    if y2 is None or not isinstance(y1, np.ndarray) or not isinstance(y2, np.ndarray):
        return None
    if y1.ndim != 1 or y2.ndim != 1 or y1.dtype.kind not in "iu" or y2.dtype.kind not in "iu":
        return None
    if y1.shape[0] != y2.shape[0] or y1.shape[0] == 0:
        return None
    lo = int(min(y1.min(), y2.min()))
    hi = int(max(y1.max(), y2.max()))
    span = hi - lo + 1
    if span > 256:
        return None
    raw = y1.astype(np.intp, copy=True)
    if lo:
        raw -= lo
    raw *= span
    raw += y2
    if lo:
        raw -= lo
    full = np.bincount(raw, minlength=span * span).reshape(span, span)
    present = (full.sum(axis=0) + full.sum(axis=1)) > 0
    values = (np.flatnonzero(present) + lo).tolist()
    if categories is None:
        cats = tuple(values)
        pos = np.arange(len(values))
        declared = False
    else:
        if isinstance(categories, (str, bytes)) or not isinstance(categories, Iterable):
            raise TypeError(f"{fn}: `categories` must be a sequence of labels; got {categories!r}.")
        cats = tuple(categories)
        if len(set(map(_hashable, cats))) != len(cats):
            raise ValueError(f"{fn}: `categories` has duplicates: {list(cats)!r}.")
        index = {_hashable(c): i for i, c in enumerate(cats)}
        pos_list = []
        for v in values:
            k = index.get(v)
            if k is None:
                bad = np.flatnonzero((y1 == v) | (y2 == v))[0]
                rname = names.rater(0 if y1[bad] == v else 1)
                raise InputError(
                    f"{fn}: label {v!r} (rater {rname!r}) is not in the declared `categories` "
                    f"{list(cats)!r} and not an `abstain` label.", record=names.unit(int(bad)), field="ratings")
            pos_list.append(k)
        pos = np.asarray(pos_list, dtype=np.intp)
        declared = True
    q = len(cats)
    obs_idx = np.flatnonzero(present)
    table = np.zeros((q, q))
    table[np.ix_(pos, pos)] = full[np.ix_(obs_idx, obs_idx)]
    observed = np.zeros(q, dtype=bool)
    observed[pos] = True
    n = y1.shape[0]
    rt = _Ratings(codes=np.broadcast_to(np.zeros(1, dtype=np.intp), (n, 2)), categories=cats,
                  n_missing=0, n_abstained=0, observed=observed, declared=declared)

    def cells() -> np.ndarray:
        lookup = np.full(span * span, -1, dtype=np.intp)
        src = (obs_idx[:, None] * span + obs_idx[None, :]).reshape(-1)
        dst = (pos[:, None] * q + pos[None, :]).reshape(-1)
        lookup[src] = dst
        return lookup[raw]

    return rt, table.reshape(-1), cells


def _two_rater(kind: str, fn: str, y1: Any, y2: Any, *, weights: Any, categories: Any, abstain: Any,
               confidence_level: float, method: str, distribution: str, n_resamples: int, rng: Any, unit: str,
               clusters: Any, strata: Any, undefined: str, data: Any, item: str, rater: str,
               rating: str) -> AgreementResult:
    confidence_level = check_confidence_level(confidence_level)
    method = check_choice("method", method, INTERVAL_METHODS)
    distribution = check_choice("distribution", distribution, ANALYTIC_DISTRIBUTIONS)
    fast = (_int_pair_table(y1, y2, categories, fn)  # a text abstain label never matches an int
            if data is None and all(isinstance(a, (str, bytes)) for a in abstain_labels(abstain)) else None)
    pair = _column_pair(y1, y2, categories, abstain, fn) if fast is None and data is None else None
    cells: np.ndarray | Callable[[], np.ndarray]
    both: np.ndarray | Callable[[], np.ndarray] | None
    if fast is not None:
        rt, table, cells = fast
        q = len(rt.categories)
        both = None
    elif pair is not None:  # two label columns: the table from each column's codes
        rt, table, cells, both = pair
        q = len(rt.categories)
    else:
        rt = _prepare(y1, y2, data, item, rater, rating, categories, abstain, fn, two=True)
        q = len(rt.categories)
        if rt.n_missing == 0 and rt.n_abstained == 0:
            both = None
            cells = rt.codes[:, 0] * q + rt.codes[:, 1]
        else:
            both = (rt.codes[:, 0] >= 0) & (rt.codes[:, 1] >= 0)
            cells = rt.codes[both, 0] * q + rt.codes[both, 1]
        table = np.bincount(cells, minlength=q * q).astype(float)  # type: ignore[arg-type]  # numpy stubs: codes[both, 0] is an array
    w = weight_matrix(rt.categories, weights)
    weighted = weights is not None and _weights_name(weights) != "identity"
    _check_domain(rt, weighted, fn, ordered=f"weights={_weights_name(weights)!r}" if weighted else None)
    n = int(table.sum())
    stat = _pair_table_batch(kind, w, q)
    P = table.reshape(q, q) / max(n, 1)
    pa = float((P * w).sum()) if n else math.nan
    pe = float(_pair_pe(kind, P[None], w, q)[0]) if n else math.nan
    reason = None
    if n < 1:
        reason = "no unit has two answered ratings"
    elif q < 2:
        reason = "the category domain has a single category, so chance agreement is 1"
    elif 1.0 - pe <= _EPS:
        reason = "expected (chance) agreement is 1: every rating falls in one category"
    coef, se, se0 = math.nan, None, None
    if reason is None:
        coef = float(stat(table[None])[0])
        se, se0 = _pair_se(kind, P, w, n, q, coef) if n >= 2 else (math.nan, math.nan)
    se0_reason = ("the literature defines a null-hypothesis SE for Cohen's kappa only"
                  if kind != "cohen" else "undefined")
    no_interval = None
    if reason is None and kind == "cohen" and min((P.sum(axis=1) > 0).sum(), (P.sum(axis=0) > 0).sum()) == 1:
        # one rater used a single category: p_o = p_e in this sample and in every resample of
        # it, so kappa is 0 with a large-sample SE of 0 -- a boundary, not precision
        no_interval = ("one rater used a single category, so kappa is 0 in this sample and in every "
                       "resample of it; its standard error is 0 at this boundary and no interval "
                       "follows from the sample")
    boot = _boot_factory(cells, q * q, stat, both, n_all_units=rt.codes.shape[0], method=method,
                         confidence_level=confidence_level, n_resamples=n_resamples, rng=rng,
                         unit=unit, clusters=clusters, strata=strata, undefined=undefined)
    return _finish(fn=fn, rt=rt, coef=coef, pa=pa, pe=pe, se=se, se0=se0, se0_reason=se0_reason,
                   n_pairable_units=n, n_pairable_ratings=2 * n, undefined_reason=reason,
                   weights_name=_weights_name(weights), method=method,
                   confidence_level=confidence_level, boot=boot, no_interval_reason=no_interval,
                   distribution=distribution, n_se=n)


@_fill_doc
@serial_blas
def cohen_kappa(
    y1: Any = None, y2: Any = None, *, weights: Any = None, categories: Sequence[Any] | None = None,
    abstain: Any = ABSTAIN_WORDS, confidence_level: float = 0.95, method: str = "analytic",
    distribution: str = DISTRIBUTION,
    n_resamples: int = 2000, rng: Any = None, unit: str = "item", clusters: Any = None,
    strata: Any = None, undefined: str = "drop", data: pd.DataFrame | None = None,
    item: str = "item_id", rater: str = "rater", rating: str = "rating",
) -> AgreementResult:
    """Cohen's kappa (weighted or not) between two raters.

    Parameters
    ----------
    y1, y2 : sequence
        The two raters' labels, one per unit (None/NaN missing).  Alternatively
        ``y1`` is a units x 2 array, or pass ``data=``.
    weights : None, "linear", "quadratic", "ordinal", "ratio", or a (q, q) matrix
        Agreement weights (Cohen 1968); see :func:`weight_matrix`.  A matrix holds
        agreement weights (1 on the diagonal), not disagreement weights.
    {common}
    Returns
    -------
    AgreementResult
        ``standard_error`` is the large-sample SE of Fleiss, Cohen & Everitt (1969);
        ``standard_error_null`` the SE under kappa = 0 (for a test, not an interval).

    Notes
    -----
    ``kappa_w = (p_o - p_e) / (1 - p_e)`` with ``p_o = sum w_kl p_kl`` and
    ``p_e = sum w_kl p_k. p_.l``.  Units with a missing or abstained rating from
    either rater are left out (and counted).

    References
    ----------
    Cohen (1960); Cohen (1968); Fleiss, Cohen & Everitt (1969).

    Examples
    --------
    >>> res = cohen_kappa(["a", "a", "b", "b", "a"], ["a", "b", "b", "b", "a"])
    >>> round(res.statistic, 4), res.n_units_pairable
    (0.6154, 5)
    """
    return _two_rater("cohen", "cohen_kappa", y1, y2, weights=weights, categories=categories,
                      abstain=abstain, confidence_level=confidence_level, method=method,
                      distribution=distribution, n_resamples=n_resamples, rng=rng, unit=unit, clusters=clusters, strata=strata,
                      undefined=undefined, data=data, item=item, rater=rater, rating=rating)


@_fill_doc
@serial_blas
def scott_pi(
    y1: Any = None, y2: Any = None, *, weights: Any = None, categories: Sequence[Any] | None = None,
    abstain: Any = ABSTAIN_WORDS, confidence_level: float = 0.95, method: str = "analytic",
    distribution: str = DISTRIBUTION,
    n_resamples: int = 2000, rng: Any = None, unit: str = "item", clusters: Any = None,
    strata: Any = None, undefined: str = "drop", data: pd.DataFrame | None = None,
    item: str = "item_id", rater: str = "rater", rating: str = "rating",
) -> AgreementResult:
    """Scott's pi between two raters (chance agreement from the pooled marginals).

    Parameters
    ----------
    y1, y2 : sequence
        The two raters' labels.
    weights : None, weight name or matrix
        As in :func:`cohen_kappa` (weighted pi, Gwet 2014).
    {common}
    Returns
    -------
    AgreementResult
        ``standard_error`` from Gwet (2014), contingency-table form.

    Notes
    -----
    ``p_e = sum w_kl pi_k pi_l`` with ``pi_k = (p_k. + p_.k) / 2``.

    References
    ----------
    Scott (1955); Gwet (2014), ch. 5.

    Examples
    --------
    >>> round(scott_pi(["a", "a", "b", "b", "a"], ["a", "b", "b", "b", "a"]).statistic, 4)
    0.6
    """
    return _two_rater("scott", "scott_pi", y1, y2, weights=weights, categories=categories,
                      abstain=abstain, confidence_level=confidence_level, method=method,
                      distribution=distribution, n_resamples=n_resamples, rng=rng, unit=unit, clusters=clusters, strata=strata,
                      undefined=undefined, data=data, item=item, rater=rater, rating=rating)


@_fill_doc
@serial_blas
def pabak(
    y1: Any = None, y2: Any = None, *, categories: Sequence[Any] | None = None,
    abstain: Any = ABSTAIN_WORDS, confidence_level: float = 0.95, method: str = "analytic",
    distribution: str = DISTRIBUTION,
    n_resamples: int = 2000, rng: Any = None, unit: str = "item", clusters: Any = None,
    strata: Any = None, undefined: str = "drop", data: pd.DataFrame | None = None,
    item: str = "item_id", rater: str = "rater", rating: str = "rating",
) -> AgreementResult:
    """Prevalence-adjusted bias-adjusted kappa between two raters.

    ``PABAK = (q p_o - 1) / (q - 1)``, which is ``2 p_o - 1`` for two categories
    (Byrt, Bishop & Carlin 1993) and Brennan-Prediger's coefficient with the
    uniform chance agreement ``1/q``.  ``q`` is the size of the *declared* domain
    when ``categories=`` is given, so declare it: a binary task where only one
    label was seen still has ``q = 2``.

    Parameters
    ----------
    y1, y2 : sequence
        The two raters' labels.
    {common}
    Returns
    -------
    AgreementResult

    References
    ----------
    Byrt, Bishop & Carlin (1993); Brennan & Prediger (1981); Gwet (2014).

    Examples
    --------
    >>> round(pabak([1, 1, 0, 0, 1], [1, 0, 0, 0, 1]).statistic, 4)
    0.6
    """
    return _two_rater("pabak", "pabak", y1, y2, weights=None, categories=categories,
                      abstain=abstain, confidence_level=confidence_level, method=method,
                      distribution=distribution, n_resamples=n_resamples, rng=rng, unit=unit, clusters=clusters, strata=strata,
                      undefined=undefined, data=data, item=item, rater=rater, rating=rating)


# =========================================================================== multi-rater API


def _multi(kind: str, fn: str, ratings: Any, y2: Any, *, weights: Any, categories: Any, abstain: Any,
           confidence_level: float, method: str, distribution: str, n_resamples: int, rng: Any, unit: str,
           clusters: Any, strata: Any, undefined: str, data: Any, item: str, rater: str,
           rating: str) -> AgreementResult:
    confidence_level = check_confidence_level(confidence_level)
    method = check_choice("method", method, INTERVAL_METHODS)
    distribution = check_choice("distribution", distribution, ANALYTIC_DISTRIBUTIONS)
    # narrow: _patterns and the counts below only compare codes (int8 codes save an intp copy)
    rt = _prepare(ratings, y2, data, item, rater, rating, categories, abstain, fn, two=False, narrow=True)
    q = len(rt.categories)
    w = weight_matrix(rt.categories, weights)
    weighted = _weights_name(weights) != "identity"
    _check_domain(rt, weighted or kind == "bp", fn,
                  ordered=f"weights={_weights_name(weights)!r}" if weighted else None)
    by_rater = kind == "conger"
    if by_rater and (rt.n_missing or rt.n_abstained):
        # a rater with no answered rating has undefined marginals and rates no pair: drop them
        # (the reader counts every cell it did not code as a rating, so with none missing or
        # abstained every rater rates every unit and this scan, ~2.5 ms on 100,000 x 5, is skipped)
        active = (rt.codes >= 0).any(axis=0)
        if not bool(active.all()):
            rt = dataclasses.replace(rt, codes=np.ascontiguousarray(rt.codes[:, active]))
    pat = _patterns(rt, by_rater=by_rater, dedupe=method != "analytic")
    rated = pat.rated
    R = rt.codes.shape[1]
    if kind == "conger":
        def stat(W: np.ndarray) -> np.ndarray:
            pa_b, pe_b = _conger_parts(W, pat, w, q, R)
            return _safe_ratio(pa_b - pe_b, 1.0 - pe_b)
    else:
        stat = _multi_batch(kind, pat, w, q)  # type: ignore[assignment]  # the same signature as the def above
    two = pat.r >= 2
    n_pair_units = int(pat.counts[two].sum())
    n_pair_ratings = int((pat.counts * pat.r)[two].sum())
    obs = pat.counts[None, :]
    reason = None
    pa = pe = coef = math.nan
    pi = np.full(q, np.nan)
    if n_pair_units < 1:
        reason = "no unit has two or more answered ratings"
    else:
        pa_b, pi_b, _, _ = _multi_parts(obs, pat, w)
        pa, pi = float(pa_b[0]), pi_b[0]
        if kind == "conger":
            pe = float(_conger_parts(obs, pat, w, q, R)[1][0])
        else:
            pe = float(_multi_pe(kind, pi_b, w, q)[0]) if q >= 2 or kind == "pa" else math.nan
        if kind != "pa" and q < 2:
            reason = "the category domain has a single category, so chance agreement is 1"
        elif kind != "pa" and not (1.0 - pe > _EPS):
            reason = "expected (chance) agreement is 1: every rating falls in one category"
        else:
            coef = float(stat(obs)[0])
            if not math.isfinite(coef):
                reason = "a rater has no answered rating, so their marginals are undefined"
    se = se0 = None
    se0_reason = "the literature defines no null-hypothesis SE for this coefficient"
    per_cat = None
    if reason is None:
        if kind == "conger":
            se = _conger_se(pat, w, q, coef, pe)
        else:
            se = _multi_se(kind, pat, w, q, coef, pa, pe, pi)
        if kind == "fleiss":
            per_cat, se0, se0_reason = _fleiss_extras(pat, pi, rt.categories, _weights_name(weights))
    boot = _boot_factory(pat.type_index, pat.C.shape[0], stat, rated, n_all_units=rt.codes.shape[0], method=method,
                         confidence_level=confidence_level, n_resamples=n_resamples, rng=rng,
                         unit=unit, clusters=clusters, strata=strata, undefined=undefined)
    if kind == "pa":
        # percent agreement lives in [0, 1]: report p_e = 0 and keep the same result shape
        pe = 0.0 if reason is None else pe
    return _finish(fn=fn, rt=rt, coef=coef, pa=pa, pe=pe, se=se, se0=se0, se0_reason=se0_reason,
                   n_pairable_units=n_pair_units, n_pairable_ratings=n_pair_ratings,
                   undefined_reason=reason, weights_name=_weights_name(weights), method=method,
                   confidence_level=confidence_level, boot=boot, per_category=per_cat,
                   distribution=distribution, n_se=int(pat.counts.sum()))


def _fleiss_extras(pat: _Patterns, pi: np.ndarray, cats: tuple[Any, ...], wname: str
                   ) -> tuple[dict[str, Any], float | None, str]:
    """Per-category kappas (Fleiss 1971) and null SEs (Fleiss, Nee & Landis 1979)."""
    two = pat.r >= 2
    C, r, cnt = pat.C[two], pat.r[two], pat.counts[two]
    N = cnt.sum()
    # p_j over pairable units, weighting every rating alike (Fleiss 1971: p_j = sum x_ij / (N m))
    p = (cnt @ C) / (cnt @ r)
    qj = 1.0 - p
    dis = (cnt[:, None] * C * (r[:, None] - C) / (r * (r - 1.0))[:, None]).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        kj = 1.0 - dis / (N * p * qj)
    constant_m = bool(np.all(r == r[0]))
    m = float(r[0])
    se0_j = np.full(len(cats), math.sqrt(2.0 / (N * m * (m - 1.0)))) if constant_m else np.full(len(cats), np.nan)
    undefined_j = ~(p * qj > _EPS)
    frame = {
        "category": list(cats),
        "proportion": p,
        "kappa": np.where(undefined_j, np.nan, kj),
        "cause": np.where(undefined_j, Cause.MISSING_EVIDENCE.value, None),  # type: ignore[call-overload]  # numpy stubs: None as a value
        "standard_error_null": np.where(undefined_j, np.nan, se0_j),
    }
    if not constant_m:
        return frame, None, ("Fleiss, Nee & Landis (1979) define the null SE for a constant number "
                             "of raters per unit; the units here have different numbers")
    if wname != "identity":
        return frame, None, "the null SE of Fleiss, Nee & Landis (1979) is for unweighted kappa"
    pq = p * qj
    s = pq.sum()
    var0 = 2.0 / (N * m * (m - 1.0)) * (s ** 2 - (pq * (qj - p)).sum()) / s ** 2
    return frame, math.sqrt(max(var0, 0.0)), ""





@_fill_doc
@serial_blas
def fleiss_kappa(
    ratings: Any = None, y2: Any = None, *, weights: Any = None,
    categories: Sequence[Any] | None = None, abstain: Any = ABSTAIN_WORDS, confidence_level: float = 0.95,
    method: str = "analytic", distribution: str = DISTRIBUTION, n_resamples: int = 2000, rng: Any = None,
    unit: str = "item",
    clusters: Any = None, strata: Any = None, undefined: str = "drop",
    data: pd.DataFrame | None = None, item: str = "item_id", rater: str = "rater",
    rating: str = "rating",
) -> AgreementResult:
    """Fleiss' kappa for any number of raters (Gwet's generalisation to missing ratings and weights).
    {multi}
    weights : None, weight name or matrix
        Weighted form as Gwet (2014) defines it.

    Returns
    -------
    AgreementResult
        ``standard_error``: Gwet's (2008) general linearised SE (valid without the
        independence hypothesis).  ``standard_error_null``: Fleiss, Nee & Landis
        (1979) SE under kappa = 0, defined for a constant number of raters and
        unweighted kappa; on Fleiss' (1971) table it is about half the general
        SE, so never build an interval from it.  ``per_category``: per-category
        kappas (Fleiss 1971, eq. 20) with their null SEs.

    Notes
    -----
    ``p_a`` averages over units with two or more ratings
    ``sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1))``, ``r*_ik = sum_l w_kl r_il``;
    ``pi_k`` averages ``r_ik / r_i`` over units with a rating;
    ``p_e = sum w_kl pi_k pi_l``.  With complete data and no weights this is
    Fleiss' (1971) kappa.

    References
    ----------
    Fleiss (1971); Fleiss, Nee & Landis (1979); Gwet (2008; 2014).

    Examples
    --------
    >>> r = [[1, 1, 1], [1, 2, 2], [2, 2, 2], [1, 1, 2]]
    >>> round(fleiss_kappa(r).statistic, 4)
    0.3333
    """
    return _multi("fleiss", "fleiss_kappa", ratings, y2, weights=weights, categories=categories,
                  abstain=abstain, confidence_level=confidence_level, method=method,
                  distribution=distribution, n_resamples=n_resamples, rng=rng, unit=unit, clusters=clusters, strata=strata,
                  undefined=undefined, data=data, item=item, rater=rater, rating=rating)


@_fill_doc
@serial_blas
def conger_kappa(
    ratings: Any = None, y2: Any = None, *, weights: Any = None,
    categories: Sequence[Any] | None = None, abstain: Any = ABSTAIN_WORDS, confidence_level: float = 0.95,
    method: str = "analytic", distribution: str = DISTRIBUTION, n_resamples: int = 2000, rng: Any = None,
    unit: str = "item",
    clusters: Any = None, strata: Any = None, undefined: str = "drop",
    data: pd.DataFrame | None = None, item: str = "item_id", rater: str = "rater",
    rating: str = "rating",
) -> AgreementResult:
    """Conger's (1980) kappa: Cohen's kappa generalised to several fixed raters.
    {multi}
    weights : None, weight name or matrix

    Returns
    -------
    AgreementResult
        ``standard_error``: Gwet's (2014) linearised SE.

    Notes
    -----
    Same ``p_a`` as :func:`fleiss_kappa`; chance agreement from the rater-specific
    marginals ``p_gk``: ``p_e = sum w_kl (pbar_k pbar_l - s2_kl / r)`` with
    ``s2_kl`` the covariance of ``p_gk`` and ``p_gl`` across the ``r`` raters.
    With two raters and complete data this equals Cohen's kappa.

    References
    ----------
    Conger (1980); Gwet (2014), ch. 5.

    Examples
    --------
    >>> round(conger_kappa([[1, 1], [1, 2], [2, 2], [2, 2]]).statistic, 4)
    0.5
    """
    return _multi("conger", "conger_kappa", ratings, y2, weights=weights, categories=categories,
                  abstain=abstain, confidence_level=confidence_level, method=method,
                  distribution=distribution, n_resamples=n_resamples, rng=rng, unit=unit, clusters=clusters, strata=strata,
                  undefined=undefined, data=data, item=item, rater=rater, rating=rating)


@_fill_doc
@serial_blas
def gwet_ac1(
    ratings: Any = None, y2: Any = None, *, categories: Sequence[Any] | None = None,
    abstain: Any = ABSTAIN_WORDS, confidence_level: float = 0.95, method: str = "analytic",
    distribution: str = DISTRIBUTION,
    n_resamples: int = 2000, rng: Any = None, unit: str = "item", clusters: Any = None,
    strata: Any = None, undefined: str = "drop", data: pd.DataFrame | None = None,
    item: str = "item_id", rater: str = "rater", rating: str = "rating",
) -> AgreementResult:
    """Gwet's AC1 for any number of raters.
    {multi}
    Returns
    -------
    AgreementResult
        ``standard_error``: Gwet's (2008) linearised SE.

    Notes
    -----
    ``p_e = sum_k pi_k (1 - pi_k) / (q - 1)``; ``q`` is the size of the declared
    domain (``categories=``), so declare unseen categories.

    References
    ----------
    Gwet (2008); Gwet (2014), ch. 5.

    Examples
    --------
    >>> round(gwet_ac1([[1, 1], [1, 2], [2, 2], [2, 2]]).statistic, 4)
    0.5294
    """
    return _multi("gwet", "gwet_ac1", ratings, y2, weights=None, categories=categories,
                  abstain=abstain, confidence_level=confidence_level, method=method,
                  distribution=distribution, n_resamples=n_resamples, rng=rng, unit=unit, clusters=clusters, strata=strata,
                  undefined=undefined, data=data, item=item, rater=rater, rating=rating)


@_fill_doc
@serial_blas
def gwet_ac2(
    ratings: Any = None, y2: Any = None, *, weights: Any, categories: Sequence[Any] | None,
    abstain: Any = ABSTAIN_WORDS, confidence_level: float = 0.95, method: str = "analytic",
    distribution: str = DISTRIBUTION,
    n_resamples: int = 2000, rng: Any = None, unit: str = "item", clusters: Any = None,
    strata: Any = None, undefined: str = "drop", data: pd.DataFrame | None = None,
    item: str = "item_id", rater: str = "rater", rating: str = "rating",
) -> AgreementResult:
    """Gwet's AC2: AC1 with agreement weights for ordered (or partially agreeing) categories.

    ``weights`` and ``categories`` are required (``categories=None`` is accepted
    only explicitly, meaning "the observed labels"): the weights and chance
    agreement depend on the whole domain.
    {multi}
    weights : weight name or matrix
        Required, see :func:`weight_matrix`.

    Returns
    -------
    AgreementResult

    Notes
    -----
    ``p_e = (sum_kl w_kl) sum_k pi_k (1 - pi_k) / (q (q - 1))``.

    References
    ----------
    Gwet (2014), ch. 5.

    Examples
    --------
    >>> r = [[1, 1], [1, 2], [2, 3], [3, 3]]
    >>> round(gwet_ac2(r, weights="quadratic", categories=[1, 2, 3]).statistic, 4)
    0.6364
    """
    return _multi("gwet", "gwet_ac2", ratings, y2, weights=weights, categories=categories,
                  abstain=abstain, confidence_level=confidence_level, method=method,
                  distribution=distribution, n_resamples=n_resamples, rng=rng, unit=unit, clusters=clusters, strata=strata,
                  undefined=undefined, data=data, item=item, rater=rater, rating=rating)


@_fill_doc
@serial_blas
def brennan_prediger(
    ratings: Any = None, y2: Any = None, *, weights: Any = None,
    categories: Sequence[Any] | None = None, abstain: Any = ABSTAIN_WORDS, confidence_level: float = 0.95,
    method: str = "analytic", distribution: str = DISTRIBUTION, n_resamples: int = 2000, rng: Any = None,
    unit: str = "item",
    clusters: Any = None, strata: Any = None, undefined: str = "drop",
    data: pd.DataFrame | None = None, item: str = "item_id", rater: str = "rater",
    rating: str = "rating",
) -> AgreementResult:
    """Brennan-Prediger coefficient (uniform chance agreement) for any number of raters.
    {multi}
    weights : None, weight name or matrix

    Returns
    -------
    AgreementResult

    Notes
    -----
    ``p_e = sum_kl w_kl / q^2`` over the declared domain (``1/q`` unweighted).
    With two raters and two categories this is PABAK.

    References
    ----------
    Brennan & Prediger (1981); Gwet (2014), ch. 5.

    Examples
    --------
    >>> brennan_prediger([[1, 1], [1, 2], [2, 2], [2, 2]]).statistic
    0.5
    """
    return _multi("bp", "brennan_prediger", ratings, y2, weights=weights, categories=categories,
                  abstain=abstain, confidence_level=confidence_level, method=method,
                  distribution=distribution, n_resamples=n_resamples, rng=rng, unit=unit, clusters=clusters, strata=strata,
                  undefined=undefined, data=data, item=item, rater=rater, rating=rating)


@_fill_doc
@serial_blas
def percent_agreement(
    ratings: Any = None, y2: Any = None, *, weights: Any = None,
    categories: Sequence[Any] | None = None, abstain: Any = ABSTAIN_WORDS, confidence_level: float = 0.95,
    method: str = "wilson", distribution: str = DISTRIBUTION, n_resamples: int = 2000, rng: Any = None,
    unit: str = "item",
    clusters: Any = None, strata: Any = None, undefined: str = "drop",
    data: pd.DataFrame | None = None, item: str = "item_id", rater: str = "rater",
    rating: str = "rating",
) -> AgreementResult:
    """Percent agreement: the share of agreeing rater pairs, averaged over units.
    {multi}
    weights : None, weight name or matrix

    Returns
    -------
    AgreementResult
        ``expected_agreement`` is 0 (no chance correction).

    Notes
    -----
    ``p_a = mean_i sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1))`` over units with two
    or more answered ratings (Gwet 2014); for two raters the share of units on
    which they agree.

    References
    ----------
    Gwet (2014), ch. 2.

    Examples
    --------
    >>> percent_agreement(["a", "a", "b", "b"], ["a", "b", "b", "b"]).statistic
    0.75
    """
    return _multi("pa", "percent_agreement", ratings, y2, weights=weights, categories=categories,
                  abstain=abstain, confidence_level=confidence_level, method=method,
                  distribution=distribution, n_resamples=n_resamples, rng=rng, unit=unit, clusters=clusters, strata=strata,
                  undefined=undefined, data=data, item=item, rater=rater, rating=rating)


def _check_level_values(categories: tuple[Any, ...], level: str, fn: str) -> None:
    """Interval and ratio alpha need numbers (ratio: non-negative ones) as values."""
    if level not in ("interval", "ratio"):
        return
    if not all(isinstance(c, numbers.Real) and not isinstance(c, bool) for c in categories):
        raise InputError(f"{fn}: level={level!r} needs numeric values; categories are "
                         f"{list(categories)!r}.", field="ratings")
    if level == "ratio" and any(float(c) < 0 for c in categories):
        raise InputError(f"{fn}: level='ratio' needs non-negative values.", field="ratings")


class _KrippPoint(NamedTuple):
    """Alpha on the observed data: ``1 - D_o / D_e`` with ``p_a``, ``p_e``, the SE, or why it is undefined."""

    coef: float = math.nan
    pa: float = math.nan
    pe: float = math.nan
    se: float | None = None
    reason: str | None = None


def _kripp_point(pat: Any, stat: Callable[[np.ndarray], np.ndarray], level: str,
                 categories: tuple[Any, ...]) -> _KrippPoint:
    """The point estimate over the pairable units (Krippendorff 2011); undefined when ``D_e`` is 0."""
    one_value = "all pairable values are equal (one category), so expected disagreement is 0"
    q = len(categories)
    two = pat.r >= 2
    obs = pat.counts[None, :]
    nc = obs @ pat.C if bool(two.all()) else obs[:, two] @ pat.C[two]
    wts = np.eye(q) if level == "nominal" else _kripp_weights_batch(level, categories, nc)[0]
    pi = nc[0] / nc[0].sum()
    if q < 2 or not np.all(np.isfinite(wts)):
        return _KrippPoint(reason=one_value)
    pe = float(pi @ wts @ pi)
    if not (1.0 - pe > _EPS):
        return _KrippPoint(pe=pe, reason=one_value)
    coef = float(stat(obs)[0])
    return _KrippPoint(coef, coef * (1.0 - pe) + pe, pe, _kripp_se(pat, wts, pe) if level != "ordinal" else None)


@_fill_doc
@serial_blas
def krippendorff_alpha(
    ratings: Any = None, y2: Any = None, *, level: str, categories: Sequence[Any] | None = None,
    abstain: Any = ABSTAIN_WORDS, confidence_level: float = 0.95, method: str | None = None,
    distribution: str = DISTRIBUTION, ci: bool = True,
    n_resamples: int = 2000, rng: Any = None, unit: str = "item", clusters: Any = None,
    strata: Any = None, undefined: str = "drop", data: pd.DataFrame | None = None,
    item: str = "item_id", rater: str = "rater", rating: str = "rating",
) -> AgreementResult:
    """Krippendorff's alpha for any number of raters, missing data and any level of measurement.
    {multi}
    level : {"nominal", "ordinal", "interval", "ratio"}
        Required: no silent default (the ``krippendorff`` package defaults to
        interval).  ``interval`` and ``ratio`` need numeric categories;
        ``ordinal`` uses the order of ``categories``: numbers in their order, text
        only with ``categories=`` declared (an alphabetical order is refused).
    method : None or {"analytic", "jackknife", "percentile", "basic", "bca"}
        Default: ``"analytic"`` (Gwet's 2014 linearised SE) for nominal, interval
        and ratio; ``"jackknife"`` for ordinal, whose metric depends on the marginal
        frequencies and has no analytic SE here.  The jackknife interval is
        ``alpha +- c * SE_jack`` (``c`` from ``distribution``, as for the analytic
        interval) with the delete-one-unit SE over the pairable units,
        one evaluation per distinct unit pattern (cost O(T q^2), T patterns).  A
        bootstrap draws ``n_resamples`` multinomials over the T patterns: its cost is
        O(n_resamples * T * q^2), and T grows with n when ratings are missing or
        raters many.
    ci : bool, default True
        ``ci=False``: the statistic alone (no interval, no resampling; the analytic
        SE is still reported for nominal, interval and ratio).

    Returns
    -------
    AgreementResult

    Notes
    -----
    ``alpha = 1 - D_o / D_e`` on the coincidence matrix of pairable values
    (units with two or more values), with Krippendorff's (2011) metrics
    ``delta^2``: nominal ``[c != k]``, ordinal
    ``(sum_{g=c}^{k} n_g - (n_c + n_k)/2)^2``, interval ``(c - k)^2``, ratio
    ``((c - k)/(c + k))^2``.  Computed in Gwet's equivalent agreement form with
    weights ``1 - delta^2 / max delta^2``.

    References
    ----------
    Krippendorff (2011); Gwet (2014), ch. 5.

    Examples
    --------
    >>> r = [[1, 1], [1, 2], [2, 2], [2, 2]]
    >>> round(krippendorff_alpha(r, level="nominal").statistic, 4)
    0.5333
    """
    if not isinstance(level, str) or level not in LEVELS:
        raise ValueError(f"`level` must be one of {', '.join(map(repr, LEVELS))}; got {level!r}.")
    if not ci and method is not None:
        raise TypeError(f"`ci=False` asks for no interval, and `method={method!r}` for one: pass one of them.")
    if method is None:
        method = "jackknife" if level == "ordinal" else "analytic"
    confidence_level = check_confidence_level(confidence_level)
    method = check_choice("method", method, ALPHA_METHODS)
    distribution = check_choice("distribution", distribution, ANALYTIC_DISTRIBUTIONS)
    fn = "krippendorff_alpha"
    rt = _prepare(ratings, y2, data, item, rater, rating, categories, abstain, fn, two=False)
    _check_level_values(rt.categories, level, fn)
    _check_domain(rt, level != "nominal", fn, ordered="level='ordinal'" if level == "ordinal" else None)
    pat = _patterns(rt, dedupe=method != "analytic")
    stat = _kripp_batch(pat, level, rt.categories)
    two = pat.r >= 2
    n_pair_units = int(pat.counts[two].sum())
    n_pair_ratings = int((pat.counts * pat.r)[two].sum())
    if n_pair_units < 1:
        point = _KrippPoint(reason="no unit has two or more answered ratings (no pairable values)")
    else:
        point = _kripp_point(pat, stat, level, rt.categories)
    boot = _boot_factory(pat.type_index, pat.C.shape[0], stat, pat.rated, n_all_units=rt.codes.shape[0],
                         method=method, confidence_level=confidence_level, n_resamples=n_resamples, rng=rng,
                         unit=unit, clusters=clusters, strata=strata, undefined=undefined)
    se = point.se
    if method == "jackknife" and point.reason is None and ci:
        se = _kripp_jackknife_se(pat, level, rt.categories)
    # the analytic-interval path of the shared driver serves the jackknife SE (its
    # distribution and df too) and ci=False (a placeholder SE of 1, replaced below, so no
    # interval is drawn and nothing is resampled)
    res = _finish(fn=fn, rt=rt, coef=point.coef, pa=point.pa, pe=point.pe,
                  se=se if ci else 1.0, se0=None,
                  se0_reason="the literature defines no null-hypothesis SE for alpha",
                  n_pairable_units=n_pair_units, n_pairable_ratings=n_pair_ratings,
                  undefined_reason=point.reason, weights_name=level,
                  method="analytic" if method == "jackknife" or not ci else method,
                  confidence_level=confidence_level, boot=boot, distribution=distribution,
                  n_se=n_pair_units,
                  no_se_reason="no analytic SE for ordinal alpha (its metric depends on the "
                               "marginals); use method='jackknife' or a bootstrap method")
    if not res.defined:
        return res
    if not ci:
        bare = "not asked for (ci=False); ordinal alpha has no analytic SE"
        return dataclasses.replace(
            res, method="none", distribution=None, df=None,
            confidence_interval=Abstention(Cause.NOT_APPLICABLE, "not asked for (ci=False)"),
            standard_error=_se_value(point.se, bare, "fewer than two pairable units: the standard error "
                                     "is undefined", n_pair_units))
    return dataclasses.replace(res, method="jackknife") if method == "jackknife" else res


# =========================================================================== paired difference

_PAIR_KINDS = {"cohen_kappa": "cohen", "scott_pi": "scott", "pabak": "pabak"}


@serial_blas
def agreement_difference(
    judge_a: Any, judge_b: Any, anchor: Any, *, coefficient: str = "cohen_kappa", weights: Any = None,
    categories: Sequence[Any] | None = None, abstain: Any = ABSTAIN_WORDS, confidence_level: float = 0.95,
    method: str = "percentile", n_resamples: int = 2000, rng: Any = None, unit: str = "item",
    clusters: Any = None, strata: Any = None, undefined: str = "drop",
) -> BootstrapResult:
    """Paired bootstrap of ``agreement(judge_a, anchor) - agreement(judge_b, anchor)``.

    Both judges are scored on the same items, so the items are resampled once
    for both (a paired bootstrap): each item is typed by its (judge_a, judge_b,
    anchor) triple and every replicate's two tables come from one multinomial
    draw.  Only items answered by all three are used.

    Parameters
    ----------
    judge_a, judge_b, anchor : sequence
        Labels per item (None/NaN missing; ``abstain`` labels excluded).
    coefficient : {"cohen_kappa", "scott_pi", "pabak"}
    weights, categories, abstain, confidence_level, method, n_resamples, rng, unit, clusters,
    strata, undefined
        As in :func:`cohen_kappa` and :func:`evaltk.stats.bootstrap_table`.

    Returns
    -------
    BootstrapResult
        ``statistic`` is the difference a - b.

    Examples
    --------
    >>> a = [1, 1, 0, 0, 1, 0, 1, 1, 0, 0] * 5
    >>> b = [1, 0, 0, 1, 1, 0, 0, 1, 0, 1] * 5
    >>> h = [1, 1, 0, 0, 1, 0, 1, 0, 0, 0] * 5
    >>> res = agreement_difference(a, b, h, rng=0, n_resamples=500)
    >>> round(res.statistic, 4)
    0.8
    """
    if coefficient not in _PAIR_KINDS:
        raise ValueError(f"`coefficient` must be one of {', '.join(map(repr, _PAIR_KINDS))}; got {coefficient!r}.")
    kind = _PAIR_KINDS[coefficient]
    fn = "agreement_difference"
    cols = [_as_1d(x, fn, name) for x, name in ((judge_a, "judge_a"), (judge_b, "judge_b"), (anchor, "anchor"))]
    if len({c.shape[0] for c in cols}) != 1:
        raise InputError(f"{fn}: judge_a, judge_b and anchor must have one label per item; got lengths "
                         f"{[c.shape[0] for c in cols]}.", field="anchor")
    values = np.column_stack([c.astype(object) for c in cols])
    rt = _encode(values, categories=None if categories is None else list(categories), abstain=abstain, fn=fn)
    q = len(rt.categories)
    w = weight_matrix(rt.categories, weights)
    all3 = (rt.codes >= 0).all(axis=1)
    c = rt.codes[all3]
    if rt.codes.shape[0] == 0:
        raise InputError(f"{fn}: no items (empty input).", field="anchor")
    if c.shape[0] == 0:
        cfg = _config(method, n_resamples=n_resamples, confidence_level=confidence_level, unit=unit, rng=rng,
                      undefined=undefined)
        return _undefined_result("no item has answers from judge_a, judge_b and anchor", cfg)
    cell = (c[:, 0] * q + c[:, 1]) * q + c[:, 2]
    # marginalise the q^3 triple table onto the two judge-vs-anchor tables
    stat_a = _pair_table_batch(kind, w, q)

    def stat(W: np.ndarray) -> np.ndarray:
        T3 = W.reshape(-1, q, q, q)
        ta = T3.sum(axis=2).reshape(-1, q * q)
        tb = T3.sum(axis=1).reshape(-1, q * q)
        return stat_a(ta) - stat_a(tb)

    cl = None if clusters is None else np.asarray(clusters, dtype=object)[all3]
    stt = None if strata is None else np.asarray(strata, dtype=object)[all3]
    return bootstrap_table(cell, stat, n_types=q ** 3, method=method, unit=unit, clusters=cl, strata=stt,
                           n_resamples=n_resamples, confidence_level=confidence_level, rng=rng,
                           undefined=undefined)


# =========================================================================== classification

NO_POINT_INTERVAL = Abstention(Cause.NOT_APPLICABLE, "point metrics: no interval is computed")


@dataclass(frozen=True, eq=False)
class ClassificationResult(ResultShape):
    """Judge-vs-anchor classification metrics, on answered items, with coverage apart.

    Every metric is a float in [0, 1] or an :class:`~evaltk.values.Abstention`
    (e.g. precision when the judge never said positive).  ``coverage`` is the
    share of items with an anchor label on which the judge answered; the
    metrics are computed on the answered items only, so a judge that abstains
    on hard items shows high accuracy *and* low coverage - read them together.
    ``statistic`` is the accuracy; the metrics are point estimates, so
    ``confidence_interval`` is a ``not_applicable`` abstention (for an interval of
    the accuracy use :func:`evaltk.stats.wilson_interval` on its counts).
    """

    confidence_interval = NO_POINT_INTERVAL

    @property
    def statistic(self) -> float | Abstention:
        """The accuracy."""
        return self.accuracy

    positive: Any
    accuracy: float | Abstention
    balanced_accuracy: float | Abstention
    precision: float | Abstention
    recall: float | Abstention
    f1: float | Abstention
    tpr: float | Abstention
    tnr: float | Abstention
    coverage: float | Abstention
    n_items: int
    n_anchored: int
    n_answered: int
    n_judge_abstained: int
    n_judge_missing: int
    n_anchor_unusable: int
    confusion: pd.DataFrame = field(repr=False)

    def to_frame(self) -> pd.DataFrame:
        """Tidy rows ``metric, value, cause, reason, numerator, denominator`` plus the counts."""
        cm = self.confusion.to_numpy(dtype=float)
        labels = list(self.confusion.index)
        k = labels.index(self.positive) if self.positive in labels else None
        tp = cm[k, k] if k is not None else math.nan
        fp = cm[:, k].sum() - tp if k is not None else math.nan
        fn_ = cm[k, :].sum() - tp if k is not None else math.nan
        tn = cm.sum() - tp - fp - fn_ if k is not None else math.nan
        rows = [
            ("accuracy", self.accuracy, np.trace(cm), cm.sum()),
            ("balanced_accuracy", self.balanced_accuracy, math.nan, math.nan),
            ("precision", self.precision, tp, tp + fp),
            ("recall", self.recall, tp, tp + fn_),
            ("f1", self.f1, 2 * tp, 2 * tp + fp + fn_),
            ("tpr", self.tpr, tp, tp + fn_),
            ("tnr", self.tnr, tn, tn + fp),
            ("coverage", self.coverage, self.n_answered, self.n_anchored),
        ]
        out = []
        for name, v, num, den in rows:
            ab = isinstance(v, Abstention)
            out.append({
                "metric": name, "value": None if ab else v,
                "cause": v.cause.value if ab else None, "reason": v.reason if ab else None,  # type: ignore[union-attr]  # ab: v is an Abstention
                "numerator": num, "denominator": den, "positive": self.positive,
                "n_items": self.n_items, "n_anchored": self.n_anchored, "n_answered": self.n_answered,
                "n_judge_abstained": self.n_judge_abstained, "coverage": None if isinstance(
                    self.coverage, Abstention) else self.coverage,
            })
        return pd.DataFrame(out)


def _ratio(num: float, den: float, what: str) -> float | Abstention:
    if den <= 0:
        return Abstention(Cause.MISSING_EVIDENCE, f"{what}: denominator is 0")
    return float(num / den)


def classification_metrics(
    judge: Any, anchor: Any, *, positive: Any, categories: Sequence[Any] | None = None,
    abstain: Any = ABSTAIN_WORDS,
) -> ClassificationResult:
    """Accuracy, balanced accuracy, precision, recall, F1, TPR and TNR of a judge against an anchor.

    Parameters
    ----------
    judge, anchor : sequence
        Labels per item.  Items whose anchor is missing or abstained are not
        scored (counted in ``n_anchor_unusable``); items where the judge is
        missing or abstained are not scored and lower ``coverage``.
    positive : label
        The positive class (for precision, recall, F1, TPR, TNR; with more than
        two classes, everything else is negative).
    categories : sequence, optional
        Declared domain; other labels raise.
    abstain : label or labels, default :data:`evaltk.values.ABSTAIN_WORDS`
        Labels meaning "the rater declined"; ``abstain=()`` for none.

    Returns
    -------
    ClassificationResult

    Notes
    -----
    Balanced accuracy is the mean recall over the anchor's classes present on
    answered items.  An undefined metric (e.g. precision with no positive
    prediction) is an abstention with cause ``missing_evidence`` and a warning,
    never 0.

    Examples
    --------
    >>> res = classification_metrics([1, 1, 0, "cannot_tell"], [1, 0, 0, 1], positive=1,
    ...                               abstain="cannot_tell")
    >>> res.accuracy, res.coverage, res.precision
    (0.6666666666666666, 0.75, 0.5)
    """
    fn = "classification_metrics"
    a, b = _as_1d(judge, fn, "judge"), _as_1d(anchor, fn, "anchor")
    if a.shape[0] != b.shape[0]:
        raise InputError(f"{fn}: `judge` and `anchor` must have one label per item; got lengths "
                         f"{a.shape[0]} and {b.shape[0]}.", field="anchor")
    if a.shape[0] == 0:
        raise InputError(f"{fn}: no items (empty input).", field="judge")
    values = np.column_stack([a.astype(object), b.astype(object)])
    rt = _encode(values, categories=None if categories is None else list(categories), abstain=abstain, fn=fn)
    cats = list(rt.categories)
    if _hashable(positive) not in {_hashable(c) for c in cats}:
        raise ValueError(f"`positive` {positive!r} is not among the labels {cats!r}.")
    k = [_hashable(c) for c in cats].index(_hashable(positive))
    jc, ac = rt.codes[:, 0], rt.codes[:, 1]
    anchored = ac >= 0
    answered = anchored & (jc >= 0)
    q = len(cats)
    cm = np.bincount(ac[answered] * q + jc[answered], minlength=q * q).reshape(q, q).astype(float)
    n_ans = int(answered.sum())
    tp = cm[k, k]
    fp = cm[:, k].sum() - tp
    fn_ = cm[k, :].sum() - tp
    tn = cm.sum() - tp - fp - fn_
    acc = _ratio(np.trace(cm), cm.sum(), "accuracy (no answered item)")
    rec = _ratio(tp, tp + fn_, "recall (no anchor positive among answered items)")
    prec = _ratio(tp, tp + fp, "precision (the judge never said positive)")
    tnr = _ratio(tn, tn + fp, "TNR (no anchor negative among answered items)")
    f1 = _ratio(2 * tp, 2 * tp + fp + fn_, "F1 (no positive in judge or anchor)")
    row_tot = cm.sum(axis=1)
    present = row_tot > 0
    bal = (float(np.mean(np.diag(cm)[present] / row_tot[present])) if present.any()
           else Abstention(Cause.MISSING_EVIDENCE, "balanced accuracy (no answered item)"))
    n_anch = int(anchored.sum())
    cov = _ratio(n_ans, n_anch, "coverage (no anchored item)")
    for name, v in (("accuracy", acc), ("precision", prec), ("recall", rec), ("f1", f1), ("tnr", tnr)):
        if isinstance(v, Abstention):
            warnings.warn(f"{fn}: {name} is undefined ({v.reason}).", UndefinedWarning, stacklevel=user_stacklevel())
    conf = pd.DataFrame(cm.astype(int), index=pd.Index(cats, name="anchor"),
                        columns=pd.Index(cats, name="judge"))
    return ClassificationResult(
        positive=positive, accuracy=acc, balanced_accuracy=bal, precision=prec, recall=rec, f1=f1,
        tpr=rec, tnr=tnr, coverage=cov, n_items=int(rt.codes.shape[0]), n_anchored=n_anch,
        n_answered=n_ans, n_judge_abstained=int((anchored & (jc == -2)).sum()),
        n_judge_missing=int((anchored & (jc == -1)).sum()), n_anchor_unusable=int((~anchored).sum()),
        confusion=conf)


def classification_report(
    judge: Any, anchor: Any, *, positive: Any, categories: Sequence[Any] | None = None,
    abstain: Any = ABSTAIN_WORDS,
) -> pd.DataFrame:
    """Tidy table of :func:`classification_metrics`: one row per metric.

    Columns ``metric, value, cause, reason, numerator, denominator, positive,
    n_items, n_anchored, n_answered, n_judge_abstained, coverage``; ``value`` is
    missing exactly where ``cause`` is set.

    Examples
    --------
    >>> t = classification_report([1, 0, 1, 1], [1, 0, 0, 1], positive=1)
    >>> round(float(t.set_index("metric").loc["precision", "value"]), 4)
    0.6667
    """
    return classification_metrics(judge, anchor, positive=positive, categories=categories,
                                  abstain=abstain).to_frame()


# =========================================================================== CLI
