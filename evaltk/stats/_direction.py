"""Direction of error: which way a judge leans against a human anchor.

Seed 002 ("What stands in for each construct, and which way the error runs")
asks, per dimension, whether the measure *overstates*, *understates*, has *no
detectable lean*, or whether the direction is *unknown* because there is no
anchor.  This module fills that table from paired data (a judge's label and a
human's label on the same items) instead of by hand:

* :func:`signed_bias`: judge positive rate minus human positive rate, with
  Newcombe's paired hybrid score interval (:func:`evaltk.stats.paired_difference_interval`);
* :func:`mcnemar_test`: exact, mid-p and asymptotic (with or without continuity
  correction) McNemar tests of the same hypothesis;
* :func:`stuart_maxwell_test`: marginal homogeneity for k categories;
* :func:`class_bias`: per-class over- and under-prediction, one row per class;
* :func:`confusion_asymmetry`: per pair of classes, how often the judge says i
  where the human says j against the reverse;
* :func:`mean_signed_difference`: for ordinal scales, the mean of judge minus
  human on the declared scale, with a t interval;
* :func:`direction_of_error` and :func:`direction_table`: the lean in words.

Abstentions ("Cannot tell", "Unsure", ``None``, NaN, an
:class:`~evaltk.values.Abstention`) on either side take the pair out of every
count; how many left, and on which side, is reported on each result.

The lean is read from the interval: ``overstates`` when its lower limit is above
zero (the judge gives the positive or higher label more often than the human),
``understates`` when its upper limit is below zero, ``no detectable lean`` when
it covers zero, ``unknown`` when there is no anchor (no human labels, or no item
labelled by both).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from .._validation import check_choice, check_columns, check_confidence_level, lazy_module
from ..errors import InputError
from ..values import (
    ABSTAIN_WORDS,
    Abstention,
    Cause,
    UndefinedWarning,
    abstain_labels,
    is_missing_label,
)
from ._intervals import paired_difference_interval
from ._result import NO_INTERVAL, ConfidenceInterval, ResultShape, _num, undefined
from ._tables import ConfusionTable

stats = lazy_module("scipy.stats")

OVERSTATES = "overstates"
UNDERSTATES = "understates"
NO_DETECTABLE_LEAN = "no detectable lean"
UNKNOWN = "unknown"
#: The four words a lean is stated in, in seed 002's order.
LEANS: tuple[str, ...] = (OVERSTATES, UNDERSTATES, NO_DETECTABLE_LEAN, UNKNOWN)

_MCNEMAR_METHODS = ("exact", "mid-p", "asymptotic")
#: The one McNemar test evaltk decides with (signed bias, class bias, confusion asymmetry and the
#: regression gate's binary dimensions): the mid-p test, which Fagerland, Lydersen and Laake (2013)
#: found to keep the nominal level in the cases they studied while the exact conditional test is
#: conservative (its actual level far below nominal for small discordant counts).
MCNEMAR_METHOD = "mid-p"


# --------------------------------------------------------------------------- pairing


@dataclass(frozen=True)
class PairCounts:
    """How many items were paired and how many left, on which side.

    Attributes
    ----------
    n_items : int
        Items given.
    n_pairs : int
        Items with a judge label and a human label (the denominator).
    n_judge_abstained : int
        Items where only the judge abstained.
    n_human_abstained : int
        Items where only the human abstained.
    n_both_abstained : int
        Items where both abstained.
    """

    n_items: int
    n_pairs: int
    n_judge_abstained: int
    n_human_abstained: int
    n_both_abstained: int

    @property
    def n_excluded(self) -> int:
        return self.n_items - self.n_pairs

    @property
    def coverage(self) -> float | Abstention:
        """Share of items that entered the comparison."""
        if self.n_items == 0:
            return Abstention(Cause.MISSING_EVIDENCE, "no items")
        return self.n_pairs / self.n_items

    def as_dict(self) -> dict[str, Any]:
        cov = self.coverage
        return {
            "n_items": self.n_items,
            "n_pairs": self.n_pairs,
            "n_excluded": self.n_excluded,
            "n_judge_abstained": self.n_judge_abstained,
            "n_human_abstained": self.n_human_abstained,
            "n_both_abstained": self.n_both_abstained,
            "coverage": None if isinstance(cov, Abstention) else cov,
        }


def _as_list(x: Any, name: str) -> list[Any]:
    if isinstance(x, (str, bytes)) or not isinstance(x, Iterable):
        raise TypeError(f"`{name}` must be a sequence of labels; got {type(x).__name__}.")
    if isinstance(x, pd.Series):
        return x.tolist()
    if isinstance(x, np.ndarray):
        if x.ndim != 1:
            raise ValueError(f"`{name}` must be one-dimensional; got shape {x.shape}.")
        return x.tolist()
    return list(x)


def _pair(judge: Any, human: Any, abstain: Iterable[Any]) -> tuple[list[Any], list[Any], PairCounts]:
    j = _as_list(judge, "judge")
    h = _as_list(human, "human")
    if len(j) != len(h):
        raise ValueError(
            f"`judge` and `human` must label the same items; got {len(j)} and {len(h)} labels."
        )
    if not j:
        raise InputError("`judge` and `human` are empty: there are no items to compare.", field="judge")
    ab = abstain_labels(abstain)
    jm = [is_missing_label(x, ab) for x in j]
    hm = [is_missing_label(x, ab) for x in h]
    keep = [not a and not b for a, b in zip(jm, hm, strict=True)]
    counts = PairCounts(
        n_items=len(j),
        n_pairs=sum(keep),
        n_judge_abstained=sum(a and not b for a, b in zip(jm, hm, strict=True)),
        n_human_abstained=sum(b and not a for a, b in zip(jm, hm, strict=True)),
        n_both_abstained=sum(a and b for a, b in zip(jm, hm, strict=True)),
    )
    return [x for x, k in zip(j, keep, strict=True) if k], [x for x, k in zip(h, keep, strict=True) if k], counts


def _binary(labels: list[Any], positive: Any, name: str, negative: Any = None) -> np.ndarray:
    if positive is None:
        raise ValueError(f"`positive` must name the positive label of `{name}`; got None.")
    out = np.fromiter((x == positive for x in labels), dtype=bool, count=len(labels))
    if negative is not None:
        bad = [x for x in labels if x != positive and x != negative]
        if bad:
            raise ValueError(
                f"`{name}` has label {bad[0]!r}, neither `positive` ({positive!r}) nor "
                f"`negative` ({negative!r}); declare it in `abstain` if it is an abstention."
            )
    return out


def _table_from_binary(j: np.ndarray, h: np.ndarray) -> list[list[int]]:
    a = int(np.sum(j & h))
    b = int(np.sum(j & ~h))
    c = int(np.sum(~j & h))
    d = int(np.sum(~j & ~h))
    return [[a, b], [c, d]]


def lean_from_interval(low: float, high: float) -> str:
    """``overstates`` if ``low > 0``, ``understates`` if ``high < 0``, else ``no detectable lean``.

    Examples
    --------
    >>> lean_from_interval(0.02, 0.3), lean_from_interval(-0.2, -0.01), lean_from_interval(-0.1, 0.1)
    ('overstates', 'understates', 'no detectable lean')
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        return UNKNOWN
    if low > 0:
        return OVERSTATES
    if high < 0:
        return UNDERSTATES
    return NO_DETECTABLE_LEAN


def holm_adjust(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's (1979) step-down adjusted p-values (family-wise error), NaN kept out of the family.

    With the ``m`` defined p-values sorted, ``p_(1) <= ... <= p_(m)``, the adjusted value
    is ``max_{j <= i} min(1, (m - j + 1) p_(j))``; a NaN (a test that could not be run)
    stays NaN and does not count in ``m``.

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure.
    *Scandinavian Journal of Statistics* 6, 65-70.

    Examples
    --------
    >>> holm_adjust([0.01, 0.04, 0.03, float("nan")]).round(3).tolist()
    [0.03, 0.06, 0.06, nan]
    """
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"`pvalues` must be one-dimensional; got shape {p.shape}.")
    if np.any((p < 0) | (p > 1)):
        raise ValueError("`pvalues` must lie in [0, 1] (NaN for a test not run).")
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if ok.size:
        order = ok[np.argsort(p[ok], kind="stable")]
        m = order.size
        out[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    return out


# --------------------------------------------------------------------------- McNemar


@dataclass(frozen=True)
class McNemarResult(ResultShape):
    """McNemar test of ``b == c`` in a paired 2x2 table.

    Attributes
    ----------
    statistic : float or Abstention
        ``min(b, c)`` for the exact and mid-p tests (as statsmodels reports it),
        the chi-square statistic for the asymptotic test; an abstention when the
        asymptotic test has no discordant pair.
    pvalue : float or Abstention
        Two-sided.
    method : str
        ``"exact"``, ``"mid-p"`` or ``"asymptotic"``.
    correction : bool
        Continuity correction (asymptotic only).
    b, c : int
        Discordant counts: first positive only, second positive only.
    confidence_interval : Abstention
        A test has no interval (``not_applicable``).
    """

    statistic: float | Abstention
    pvalue: float | Abstention
    method: str
    correction: bool
    b: int
    c: int
    confidence_interval: Abstention = NO_INTERVAL

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{**self.summary_row(), "pvalue": _num(self.pvalue), "method": self.method,
                              "correction": self.correction, "b": self.b, "c": self.c}])


def _discordant(table: Any) -> tuple[int, int]:
    arr = np.asarray(table)
    if arr.shape != (2, 2):
        raise ValueError(f"`table` must be a 2x2 table of counts; got shape {arr.shape}.")
    if not np.issubdtype(arr.dtype, np.number) or (arr < 0).any() or (np.asarray(arr, float) % 1 != 0).any():
        raise ValueError("`table` must hold non-negative whole counts.")
    return int(arr[0, 1]), int(arr[1, 0])


def mcnemar_test(
    table: Any, *, method: str = MCNEMAR_METHOD, correction: bool = False
) -> McNemarResult:
    """McNemar's test for paired binary labels: exact, mid-p or asymptotic.

    Parameters
    ----------
    table : array_like, shape (2, 2)
        ``[[a, b], [c, d]]``: rows the first source (positive, negative), columns the second.
    method : {"mid-p", "exact", "asymptotic"}, default :data:`MCNEMAR_METHOD` ("mid-p")
        Fagerland, Lydersen and Laake (2013) recommend the mid-p and the
        uncorrected asymptotic tests; the exact conditional test is conservative.
        Every decision evaltk makes with McNemar uses the default (one choice, one home).
    correction : bool, default False
        Edwards' continuity correction for the asymptotic test.

    Returns
    -------
    McNemarResult
        The asymptotic test is undefined without discordant pairs (statistic and
        p-value are abstentions, with a warning); the exact and mid-p tests then give p = 1.

    Notes
    -----
    With ``m = b + c`` and ``X ~ Binomial(m, 1/2)``: exact ``p = min(1, 2 P(X <= min(b, c)))``;
    mid-p ``p = 2 [P(X <= min(b, c)) - P(X = min(b, c)) / 2]``; asymptotic
    ``chi2 = (b - c)^2 / m`` or ``(|b - c| - 1)^2 / m`` with correction, on 1 df.
    With correction and ``b == c`` the statistic is 0 (p = 1), as R's ``mcnemar.test``
    reports it (R applies the correction only to an asymmetric table); statsmodels'
    ``mcnemar(exact=False, correction=True)`` squares ``-1`` there and reports ``1 / m``.

    References
    ----------
    McNemar, Q. (1947). Psychometrika 12, 153-157.
    Fagerland, M. W., Lydersen, S. and Laake, P. (2013). The McNemar test for binary
    matched-pairs data: mid-p and asymptotic are better than exact conditional.
    *BMC Medical Research Methodology* 13, 91.

    Examples
    --------
    Bentur et al. (2009), as analysed by Fagerland et al. (2013): b = 1, c = 7.

    >>> round(mcnemar_test([[1, 1], [7, 12]], method="mid-p").pvalue, 3)
    0.039
    >>> round(mcnemar_test([[1, 1], [7, 12]], method="exact").pvalue, 3)
    0.07
    """
    check_choice("method", method, _MCNEMAR_METHODS)
    b, c = _discordant(table)
    m = b + c
    k = min(b, c)
    if method == "asymptotic":
        if m == 0:
            ab = undefined("no discordant pairs", what="McNemar's asymptotic test")
            return McNemarResult(ab, ab, method, correction, b, c)
        num = (abs(b - c) - 1.0) ** 2 if correction else float(b - c) ** 2
        if correction and abs(b - c) < 1:
            num = 0.0
        chi2 = num / m
        return McNemarResult(chi2, float(stats.chi2.sf(chi2, 1)), method, correction, b, c)
    cdf = float(stats.binom.cdf(k, m, 0.5)) if m else 1.0
    if method == "exact":
        p = min(1.0, 2.0 * cdf)
    else:
        pmf = float(stats.binom.pmf(k, m, 0.5)) if m else 1.0
        p = min(1.0, 2.0 * (cdf - 0.5 * pmf)) if m else 1.0
    return McNemarResult(float(k), p, method, False, b, c)


# --------------------------------------------------------------------------- Stuart-Maxwell


@dataclass(frozen=True)
class StuartMaxwellResult(ResultShape):
    """Stuart-Maxwell test of marginal homogeneity in a k x k table.

    Attributes
    ----------
    statistic : float or Abstention
        Chi-square statistic ``d' V^-1 d``; an abstention when fewer than two
        categories carry disagreements.
    df : int
        Degrees of freedom (k - 1 over the categories that carry off-diagonal counts).
    pvalue : float or Abstention
    categories : tuple
        Categories used (those with no off-diagonal count add nothing and are dropped).
    confidence_interval : Abstention
        A test has no interval (``not_applicable``).
    """

    statistic: float | Abstention
    df: int
    pvalue: float | Abstention
    categories: tuple[Any, ...]
    method: str = "stuart_maxwell"
    confidence_interval: Abstention = NO_INTERVAL

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{**self.summary_row(), "df": self.df, "pvalue": _num(self.pvalue),
                              "method": self.method, "categories": list(self.categories)}])


def stuart_maxwell_test(
    table: Any, *, categories: Sequence[Any] | None = None, method: str = "stuart_maxwell"
) -> StuartMaxwellResult:
    """Stuart-Maxwell test that the judge's and the human's marginal distributions agree.

    Parameters
    ----------
    table : array_like, shape (k, k)
        Counts, rows the judge's label, columns the human's, in one category order.
    categories : sequence, optional
        Names of the k categories (for the result).
    method : {"stuart_maxwell", "bhapkar"}
        Bhapkar's (1966) variant uses the unrestricted covariance estimate:
        ``W = S / (1 - S / n)`` with ``S`` the Stuart-Maxwell statistic; it is
        slightly larger (more powerful, less conservative).

    Returns
    -------
    StuartMaxwellResult
        With abstentions for the statistic and p-value (and a warning) when fewer
        than two categories carry off-diagonal counts.

    Notes
    -----
    With ``d_i = n_i. - n_.i`` for the first k - 1 categories and
    ``V_ii = n_i. + n_.i - 2 n_ii``, ``V_ij = -(n_ij + n_ji)``, the statistic
    ``d' V^{-1} d`` is chi-square on k - 1 df under marginal homogeneity.  A
    category with no off-diagonal count makes V singular; it carries no
    information about the margins and is dropped (df falls by one).

    References
    ----------
    Stuart, A. (1955). A test for homogeneity of the marginal distributions in a
    two-way classification. *Biometrika* 42, 412-416.
    Maxwell, A. E. (1970). Comparing the classification of subjects by two
    independent judges. *British Journal of Psychiatry* 116, 651-655.
    Bhapkar, V. P. (1966). A note on the equivalence of two test criteria for
    hypotheses in categorical data. *JASA* 61, 228-235.

    Examples
    --------
    >>> r = stuart_maxwell_test([[20, 5, 1], [2, 15, 4], [1, 1, 30]])
    >>> r.df, round(r.statistic, 4)
    (2, 1.8305)
    """
    check_choice("method", method, ("stuart_maxwell", "bhapkar"))
    arr = np.asarray(table, dtype=float)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 2:
        raise ValueError(f"`table` must be a square k x k table with k >= 2; got shape {arr.shape}.")
    if np.isnan(arr).any() or (arr < 0).any():
        raise ValueError("`table` must hold non-negative counts.")
    k = arr.shape[0]
    cats = tuple(categories) if categories is not None else tuple(range(k))
    if len(cats) != k:
        raise ValueError(f"`categories` has {len(cats)} names for a {k} x {k} table.")
    off = arr.copy()
    np.fill_diagonal(off, 0.0)
    used = np.flatnonzero(off.sum(axis=0) + off.sum(axis=1) > 0)
    if used.size < 2:
        ab = undefined("no disagreement between the two sources", what="Stuart-Maxwell")
        return StuartMaxwellResult(ab, 0, ab, tuple(cats[i] for i in used), method)
    sub = arr[np.ix_(used, used)]
    row, col = sub.sum(axis=1), sub.sum(axis=0)
    d = (row - col)[:-1]
    v = -(sub + sub.T)
    np.fill_diagonal(v, row + col - 2.0 * np.diag(sub))
    v = v[:-1, :-1]
    try:
        chi2 = float(d @ np.linalg.solve(v, d))
    except np.linalg.LinAlgError:
        chi2 = float(d @ np.linalg.pinv(v) @ d)
    df = int(used.size - 1)
    if method == "bhapkar":
        n = float(arr.sum())
        chi2 = chi2 / (1.0 - chi2 / n) if chi2 < n else math.inf
    return StuartMaxwellResult(chi2, df, float(stats.chi2.sf(chi2, df)), tuple(cats[i] for i in used), method)


# --------------------------------------------------------------------------- signed bias


@dataclass(frozen=True)
class SignedBiasResult(ResultShape):
    """Judge positive rate minus human positive rate, on the items both labelled.

    Attributes
    ----------
    statistic : float or Abstention
        ``judge_rate - human_rate``; an abstention when no item has both labels.
    confidence_interval : ConfidenceInterval or Abstention
        Newcombe's paired hybrid score interval.
    judge_rate, human_rate : float or Abstention
    table : tuple of int
        ``(both positive, judge only, human only, neither)``.
    counts : PairCounts
    lean : str
        One of :data:`LEANS`.
    mcnemar : McNemarResult
        Mid-p McNemar test of the same hypothesis.
    confidence_level : float
    """

    statistic: float | Abstention
    confidence_interval: ConfidenceInterval | Abstention
    judge_rate: float | Abstention
    human_rate: float | Abstention
    table: tuple[int, int, int, int]
    counts: PairCounts
    lean: str
    mcnemar: McNemarResult
    confidence_level: float

    @property
    def over_predicted(self) -> int:
        """Items the judge calls positive and the human does not."""
        return self.table[1]

    @property
    def under_predicted(self) -> int:
        """Items the human calls positive and the judge does not."""
        return self.table[2]

    def to_frame(self) -> pd.DataFrame:
        row = {
            **self.summary_row(),
            "judge_rate": _num(self.judge_rate),
            "human_rate": _num(self.human_rate),
            "over_predicted": self.over_predicted,
            "under_predicted": self.under_predicted,
            "lean": self.lean,
            "mcnemar_midp": _num(self.mcnemar.pvalue),
            "confidence_level": self.confidence_level,
        }
        row.update(self.counts.as_dict())
        return pd.DataFrame([row])


def signed_bias(
    judge: Sequence[Any],
    human: Sequence[Any],
    *,
    positive: Any = True,
    negative: Any = None,
    abstain: Iterable[Any] = ABSTAIN_WORDS,
    confidence_level: float = 0.95,
) -> SignedBiasResult:
    """Signed bias of a binary judge against a human anchor, with a paired interval.

    Parameters
    ----------
    judge, human : sequence
        Labels on the same items, in the same order.  ``None``, NaN, an
        :class:`~evaltk.values.Abstention` or a label in ``abstain`` is an
        abstention: the item leaves the comparison and is counted.
    positive : label, default True
        The positive label ("Yes", "Successful", 1).
    negative : label, optional
        The negative label.  When given, any other label is an error (a typo
        such as "yes " would otherwise count silently as negative).
    abstain : label or labels, default :data:`evaltk.values.ABSTAIN_WORDS`
        Labels meaning "the rater declined" ("cannot_tell", "Unsure", ...): excluded
        and counted.  ``abstain=()`` for none.
    confidence_level : float, default 0.95

    Returns
    -------
    SignedBiasResult
        With abstentions for the statistic, interval and rates (``missing_evidence``,
        with a warning) and the lean ``"unknown"`` when no item has both labels.

    Notes
    -----
    With ``b`` items the judge calls positive and the human does not, and ``c``
    the reverse, the bias is ``(b - c) / n``; the interval is Newcombe's (1998b)
    method 10 (:func:`evaltk.stats.paired_difference_interval`), which
    accounts for the pairing.  Positive bias: the judge overstates the positive
    label.

    Examples
    --------
    >>> j = ["Yes"] * 30 + ["No"] * 20
    >>> h = ["Yes"] * 20 + ["No"] * 30
    >>> r = signed_bias(j, h, positive="Yes")
    >>> round(r.statistic, 2), r.lean
    (0.2, 'overstates')
    """
    cl = check_confidence_level(confidence_level)
    jl, hl, counts = _pair(judge, human, abstain)
    if counts.n_pairs == 0:
        ab = undefined("no item has both a judge and a human label", what="signed bias")
        return SignedBiasResult(statistic=ab, confidence_interval=ab, judge_rate=ab, human_rate=ab,
                                table=(0, 0, 0, 0), counts=counts, lean=UNKNOWN,
                                mcnemar=McNemarResult(ab, ab, "mid-p", False, 0, 0), confidence_level=cl)
    jb = _binary(jl, positive, "judge", negative)
    hb = _binary(hl, positive, "human", negative)
    table = _table_from_binary(jb, hb)
    diff = paired_difference_interval(table, confidence_level=cl)
    mc = mcnemar_test(table)
    return SignedBiasResult(
        statistic=diff.statistic,
        confidence_interval=diff.confidence_interval,
        judge_rate=diff.p1,
        human_rate=diff.p2,
        table=diff.table,
        counts=counts,
        lean=lean_from_interval(*cast(ConfidenceInterval, diff.confidence_interval)),  # n_pairs > 0
        mcnemar=mc,
        confidence_level=cl,
    )


# --------------------------------------------------------------------------- k categories


def _categories(jl: list[Any], hl: list[Any], categories: Sequence[Any] | None) -> list[Any]:
    if categories is None:
        seen = list(dict.fromkeys([*hl, *jl]))
        try:
            return sorted(seen)
        except TypeError:
            return seen
    cats = list(categories)
    if len(set(cats)) != len(cats):
        raise ValueError("`categories` has duplicates.")
    known = set(cats)
    unknown = [x for x in (*jl, *hl) if x not in known]
    if unknown:
        raise ValueError(
            f"label {unknown[0]!r} is not among `categories` {cats}; declare it, or list it in `abstain`."
        )
    return cats


def _square_table(jl: list[Any], hl: list[Any], cats: list[Any]) -> np.ndarray:
    idx = {c: i for i, c in enumerate(cats)}
    k = len(cats)
    ji = np.fromiter((idx[x] for x in jl), dtype=np.int64, count=len(jl))
    hi = np.fromiter((idx[x] for x in hl), dtype=np.int64, count=len(hl))
    return np.bincount(ji * k + hi, minlength=k * k).reshape(k, k)


def class_bias(
    judge: Sequence[Any],
    human: Sequence[Any],
    *,
    categories: Sequence[Any] | None = None,
    abstain: Iterable[Any] = ABSTAIN_WORDS,
    confidence_level: float = 0.95,
) -> pd.DataFrame:
    """Per-class over- and under-prediction of a judge against a human anchor.

    One row per class: how often the judge uses it against how often the human
    does, on the items both labelled, with the one-vs-rest paired interval.

    Returns
    -------
    DataFrame
        ``category, judge_rate, human_rate, bias, ci_low, ci_high, over_predicted,
        under_predicted, lean, mcnemar_midp, mcnemar_midp_holm, n_pairs`` (plus
        ``n_items``, ``n_excluded`` and the per-side abstention counts).
        ``over_predicted`` counts items the judge puts in the class and the human
        does not; ``under_predicted`` the reverse.  ``mcnemar_midp`` is the raw
        one-vs-rest McNemar p-value of each class (:data:`MCNEMAR_METHOD`),
        ``mcnemar_midp_holm`` the Holm-adjusted one over the classes
        (:func:`holm_adjust`): one test per class is a family of tests, and the
        ``lean`` of one class among many is read with the adjusted value.

    Examples
    --------
    >>> j = ["A", "A", "B", "C", "A", "B"]
    >>> h = ["A", "B", "B", "C", "B", "B"]
    >>> class_bias(j, h)[["category", "over_predicted", "under_predicted"]].values.tolist()
    [['A', 2, 0], ['B', 0, 2], ['C', 0, 0]]
    """
    cl = check_confidence_level(confidence_level)
    jl, hl, counts = _pair(judge, human, abstain)
    cats = _categories(jl, hl, categories)
    cols = ["category", "judge_rate", "human_rate", "bias", "ci_low", "ci_high",
            "over_predicted", "under_predicted", "lean", "mcnemar_midp", "mcnemar_midp_holm",
            *counts.as_dict().keys()]
    if counts.n_pairs == 0:
        warnings.warn("class bias is undefined: no item has both a judge and a human label",
                      UndefinedWarning, stacklevel=2)
        rows = [{"category": c, "lean": UNKNOWN, **counts.as_dict()} for c in cats]
        return pd.DataFrame(rows, columns=cols)
    tab = _square_table(jl, hl, cats)
    n = int(tab.sum())
    rows = []
    for i, c in enumerate(cats):
        a = int(tab[i, i])
        b = int(tab[i, :].sum() - a)  # judge says c, human another class
        cc = int(tab[:, i].sum() - a)  # human says c, judge another class
        d = n - a - b - cc
        r = paired_difference_interval([[a, b], [cc, d]], confidence_level=cl)
        ci = cast(ConfidenceInterval, r.confidence_interval)  # n > 0: defined
        rows.append({
            "category": c, "judge_rate": r.p1, "human_rate": r.p2, "bias": r.statistic,
            "ci_low": ci[0], "ci_high": ci[1],
            "over_predicted": b, "under_predicted": cc, "lean": lean_from_interval(*ci),
            "mcnemar_midp": mcnemar_test([[a, b], [cc, d]]).pvalue,
            **counts.as_dict(),
        })
    out = pd.DataFrame(rows, columns=cols)
    out["mcnemar_midp_holm"] = holm_adjust(out["mcnemar_midp"].to_numpy(float))
    return out


def confusion_asymmetry(
    judge: Sequence[Any],
    human: Sequence[Any],
    *,
    categories: Sequence[Any] | None = None,
    abstain: Iterable[Any] = ABSTAIN_WORDS,
) -> pd.DataFrame:
    """Asymmetry of the confusion table, one row per unordered pair of classes.

    For classes ``i`` before ``j`` in ``categories``: ``judge_i_human_j`` items the
    judge labels i where the human says j, ``judge_j_human_i`` the reverse,
    ``asymmetry = (judge_i_human_j - judge_j_human_i) / (sum)`` in [-1, 1]
    (positive: the judge pushes items toward ``i``), and the mid-p McNemar
    p-value of that pair (the pairwise components of Bowker's test) with its
    Holm-adjusted value over the pairs tested (``mcnemar_midp_holm``,
    :func:`holm_adjust`).  A pair with no confusion has no asymmetry and no test:
    the values are missing, ``cause`` says why, and it does not count in the family.

    Examples
    --------
    >>> j = ["Yes", "Yes", "Yes", "No", "Yes"]
    >>> h = ["No", "No", "Yes", "No", "Yes"]
    >>> confusion_asymmetry(j, h, categories=["Yes", "No"])[["class_i", "class_j", "asymmetry"]].values.tolist()
    [['Yes', 'No', 1.0]]
    """
    jl, hl, counts = _pair(judge, human, abstain)
    cats = _categories(jl, hl, categories)
    tab = _square_table(jl, hl, cats) if jl else np.zeros((len(cats), len(cats)), dtype=np.int64)
    rows = []
    for i in range(len(cats)):
        for j in range(i + 1, len(cats)):
            nij, nji = int(tab[i, j]), int(tab[j, i])
            m = nij + nji
            mc = mcnemar_test([[0, nij], [nji, 0]])
            rows.append({
                "class_i": cats[i], "class_j": cats[j],
                "judge_i_human_j": nij, "judge_j_human_i": nji,
                "asymmetry": (nij - nji) / m if m else np.nan,
                "cause": None if m else Cause.MISSING_EVIDENCE.value,
                "mcnemar_midp": mc.pvalue if m else np.nan,
                "n_pairs": counts.n_pairs,
            })
    out = pd.DataFrame(rows, columns=["class_i", "class_j", "judge_i_human_j", "judge_j_human_i",
                                      "asymmetry", "cause", "mcnemar_midp", "n_pairs"])
    out.insert(7, "mcnemar_midp_holm", holm_adjust(out["mcnemar_midp"].to_numpy(float)))
    return out


# --------------------------------------------------------------------------- ordinal


@dataclass(frozen=True)
class MeanSignedDifferenceResult(ResultShape):
    """Mean of judge minus human on an ordinal scale, with a t interval.

    Attributes
    ----------
    statistic : float or Abstention
        Mean signed difference, in scale units (positions when ``categories`` was
        given); an abstention with fewer than two paired items.
    confidence_interval : ConfidenceInterval or Abstention
    std_error : float or Abstention
    counts : PairCounts
    lean : str
    confidence_level : float
    pvalue : float or Abstention
        Two-sided test of a zero mean: the one-sample t test, or the exact sign test
        when every difference is equal (the t statistic is then undefined).
    test : str
        ``"t"`` or ``"sign"``.
    """

    statistic: float | Abstention
    confidence_interval: ConfidenceInterval | Abstention
    std_error: float | Abstention
    counts: PairCounts
    lean: str
    confidence_level: float
    pvalue: float | Abstention
    test: str

    def to_frame(self) -> pd.DataFrame:
        row = {**self.summary_row(), "std_error": _num(self.std_error),
               "lean": self.lean, "confidence_level": self.confidence_level,
               "pvalue": _num(self.pvalue), "test": self.test}
        row.update(self.counts.as_dict())
        return pd.DataFrame([row])


def _scores(labels: list[Any], categories: Sequence[Any] | Mapping[Any, float] | None, name: str) -> np.ndarray:
    if categories is None:
        bad = [x for x in labels if isinstance(x, bool) or not isinstance(x, numbers.Real)]
        if bad:
            raise ValueError(
                f"`{name}` has non-numeric label {bad[0]!r}; pass the ordered scale as `categories`."
            )
        return np.asarray(labels, dtype=float)
    mapping = dict(categories) if isinstance(categories, Mapping) else {c: float(i) for i, c in enumerate(categories)}
    unknown = [x for x in labels if x not in mapping]
    if unknown:
        raise ValueError(
            f"`{name}` has label {unknown[0]!r} outside the declared scale {list(mapping)}; "
            "declare it, or list it in `abstain`."
        )
    return np.asarray([mapping[x] for x in labels], dtype=float)


def mean_signed_difference(
    judge: Sequence[Any],
    human: Sequence[Any],
    *,
    categories: Sequence[Any] | Mapping[Any, float] | None = None,
    abstain: Iterable[Any] = ABSTAIN_WORDS,
    confidence_level: float = 0.95,
) -> MeanSignedDifferenceResult:
    """Mean signed difference (judge minus human) on an ordinal scale.

    Parameters
    ----------
    judge, human : sequence
        Labels on the same items.
    categories : sequence or mapping, optional
        The declared scale, lowest first (positions 0, 1, ...), or a mapping
        label -> score (seed 002's efficiency: ``{"Lots": 0.0, "A few": 0.5,
        "None": 1.0}``).  Required unless the labels are numbers.
    abstain : label or labels, default :data:`evaltk.values.ABSTAIN_WORDS`
        Labels meaning "the rater declined" ("cannot_tell", "Unsure", ...): excluded
        and counted.  ``abstain=()`` for none.
    confidence_level : float, default 0.95

    Returns
    -------
    MeanSignedDifferenceResult
        With abstentions for the statistic, interval and standard error (and a
        warning) when fewer than two items have both labels.

    Notes
    -----
    ``d_i = s(judge_i) - s(human_i)``; the interval is ``mean(d) +- t_{n-1} sd(d)/sqrt(n)``
    and the p-value the one-sample t test's.  When every difference is equal the
    sample shows no spread: the standard error and the interval abstain with the cause
    (a zero-width interval would claim certainty), and the p-value and the lean come
    from the exact sign test, ``p = min(1, 2 * 0.5^n)`` when all ``n`` differences share
    one nonzero sign (two items give p = 0.5: no detectable lean).

    Examples
    --------
    >>> scale = ["Lots", "A few", "None"]
    >>> r = mean_signed_difference(["None", "None", "A few", "None"], ["A few", "None", "Lots", "A few"],
    ...                            categories=scale)
    >>> r.statistic
    0.75
    """
    cl = check_confidence_level(confidence_level)
    jl, hl, counts = _pair(judge, human, abstain)
    if counts.n_pairs < 2:
        ab = undefined(f"{counts.n_pairs} paired item(s); at least two needed", what="mean signed difference")
        return MeanSignedDifferenceResult(ab, ab, ab, counts, UNKNOWN, cl, ab, "none")
    d = _scores(jl, categories, "judge") - _scores(hl, categories, "human")
    n = d.size
    mean = float(d.mean())
    if bool(np.all(d == d[0])):
        return _constant_differences(float(d[0]), n, counts, cl)
    se = float(d.std(ddof=1) / math.sqrt(n))
    t = float(stats.t.ppf(0.5 + cl / 2.0, n - 1))
    ci = ConfidenceInterval(mean - t * se, mean + t * se)
    p = float(2.0 * stats.t.sf(abs(mean / se), n - 1))
    return MeanSignedDifferenceResult(mean, ci, se, counts, lean_from_interval(*ci), cl, p, "t")


def _constant_differences(d: float, n: int, counts: PairCounts, cl: float) -> MeanSignedDifferenceResult:
    """Every difference equals ``d``: no spread, so no t interval; the exact sign test decides the lean."""
    p = 1.0 if d == 0 else float(stats.binomtest(n, n, 0.5).pvalue)
    lean = NO_DETECTABLE_LEAN
    if d != 0 and p < 1.0 - cl:
        lean = OVERSTATES if d > 0 else UNDERSTATES
    reason = (f"all {n} differences equal {d:g}: the sample shows no spread, so the t interval would have "
              f"zero width; the lean is read from the exact sign test (p = {p:.3g})")
    ab = undefined(reason, what="the mean signed difference's interval")
    return MeanSignedDifferenceResult(d, ab, ab, counts, lean, cl, p, "sign")


# --------------------------------------------------------------------------- the lean in words


@dataclass(frozen=True)
class DirectionResult(ResultShape):
    """Which way a judge's error runs on one dimension, in words and numbers.

    Attributes
    ----------
    lean : str
        One of :data:`LEANS`.
    statistic : float or Abstention
        Signed bias (binary) or mean signed difference (ordinal); an abstention
        (with its cause) when the lean is unknown.
    confidence_interval : ConfidenceInterval or Abstention
    pvalue : float or Abstention
        Mid-p McNemar (binary) or the t test of a zero mean (ordinal).
    scale : str
        ``"binary"`` or ``"ordinal"``.
    method : str
    counts : PairCounts
        Items given, paired and excluded (with no human anchor every item is
        excluded on the human side).
    reason : str
        Why the lean is unknown, or what the statistic is.
    """

    lean: str
    statistic: float | Abstention
    confidence_interval: ConfidenceInterval | Abstention
    pvalue: float | Abstention
    scale: str
    method: str
    counts: PairCounts
    reason: str = ""
    detail: Any = field(default=None, repr=False, compare=False)

    def to_frame(self) -> pd.DataFrame:
        shape = self.summary_row()
        row = {"lean": self.lean, **shape, "pvalue": _num(self.pvalue), "scale": self.scale,
               "method": self.method, "reason": self.reason}
        row.update(self.counts.as_dict())
        return pd.DataFrame([row])


_SCALES = ("binary", "ordinal")


def _unknown_direction(ab: Abstention, scale: str, method: str, counts: PairCounts) -> DirectionResult:
    reason = f"no anchor on these items: {ab.reason}"
    return DirectionResult(UNKNOWN, undefined(reason, what="the direction of error"), ab, ab, scale, method,
                           counts, reason)


def direction_of_error(
    judge: Sequence[Any],
    human: Sequence[Any] | None,
    *,
    scale: str = "binary",
    positive: Any = True,
    negative: Any = None,
    categories: Sequence[Any] | Mapping[Any, float] | None = None,
    abstain: Iterable[Any] = ABSTAIN_WORDS,
    confidence_level: float = 0.95,
) -> DirectionResult:
    """State which way a judge's error runs against a human anchor.

    Parameters
    ----------
    judge : sequence
        The judge's labels.
    human : sequence or None
        The human anchor on the same items; ``None`` when no human labels exist
        (the lean is then ``"unknown"``: seed 002's efficiency row).
    scale : {"binary", "ordinal"}
        Binary: signed bias of the ``positive`` rate (:func:`signed_bias`).
        Ordinal: :func:`mean_signed_difference` on ``categories``.
    positive, negative : label
        For a binary scale.
    categories : sequence or mapping
        For an ordinal scale (lowest first, or label -> score).
    abstain : label or labels, default :data:`evaltk.values.ABSTAIN_WORDS`
        Labels meaning "the rater declined" ("cannot_tell", "Unsure", ...): excluded
        and counted.  ``abstain=()`` for none.
    confidence_level : float, default 0.95

    Returns
    -------
    DirectionResult

    Examples
    --------
    >>> direction_of_error(["Yes", "No"], None, positive="Yes").lean
    'unknown'
    >>> j = ["Yes"] * 40 + ["No"] * 60
    >>> h = ["Yes"] * 60 + ["No"] * 40
    >>> direction_of_error(j, h, positive="Yes").lean
    'understates'
    """
    check_choice("scale", scale, _SCALES)
    cl = check_confidence_level(confidence_level)
    if human is None:
        reason = "no human anchor: there is nothing to establish a lean against"
        ab = undefined(reason, what="the direction of error")
        _, _, counts = _pair(judge, [None] * len(_as_list(judge, "judge")), abstain)
        return DirectionResult(UNKNOWN, ab, ab, ab, scale, "none", counts, reason)
    if scale == "binary":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedWarning)
            r = signed_bias(judge, human, positive=positive, negative=negative, abstain=abstain,
                            confidence_level=cl)
        if not r.defined:
            return _unknown_direction(cast(Abstention, r.statistic), scale, "signed_bias", r.counts)
        return DirectionResult(
            r.lean, r.statistic, r.confidence_interval, r.mcnemar.pvalue, scale,
            "signed_bias (Newcombe hybrid score) + McNemar mid-p", r.counts,
            f"judge positive rate {r.judge_rate:.4g} vs human {r.human_rate:.4g}", detail=r,
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedWarning)
        m = mean_signed_difference(judge, human, categories=categories, abstain=abstain, confidence_level=cl)
    if not m.defined:
        return _unknown_direction(cast(Abstention, m.statistic), scale, "mean_signed_difference", m.counts)
    how = ("mean_signed_difference (t interval)" if m.test == "t" else
           "mean_signed_difference (exact sign test: every difference is equal, no t interval)")
    return DirectionResult(m.lean, m.statistic, m.confidence_interval, m.pvalue, scale, how, m.counts,
                           "mean of judge minus human on the declared scale", detail=m)


def direction_table(
    data: pd.DataFrame,
    *,
    dimension: str = "dimension",
    judge: str = "judge",
    human: str = "human",
    scales: Mapping[str, str] | None = None,
    positive: Mapping[str, Any] | Any = True,
    categories: Mapping[str, Sequence[Any] | Mapping[Any, float]] | None = None,
    abstain: Iterable[Any] = ABSTAIN_WORDS,
    confidence_level: float = 0.95,
) -> pd.DataFrame:
    """Seed 002's direction-of-error table, filled from data: one row per dimension.

    Parameters
    ----------
    data : DataFrame
        Long format: one row per (dimension, item) with the judge's label and the
        human's label (missing where there is none).
    dimension, judge, human : str
        Column names.
    scales : mapping dimension -> "binary" | "ordinal", optional
        Default binary.
    positive : label or mapping dimension -> label
        The positive label of each binary dimension.
    categories : mapping dimension -> scale, optional
        The ordered scale of each ordinal dimension.
    abstain : label or labels, default :data:`evaltk.values.ABSTAIN_WORDS`
        Labels meaning "the rater declined" ("cannot_tell", "Unsure", ...): excluded
        and counted.  ``abstain=()`` for none.
    confidence_level : float

    Returns
    -------
    DataFrame
        ``dimension, lean, statistic, ci_low, ci_high, pvalue, scale, method, reason,
        n_items, n_pairs, n_excluded, ...``.  A dimension whose human column is
        empty reads ``unknown``.

    Examples
    --------
    >>> df = pd.DataFrame({"dimension": ["t_task"] * 4 + ["t_eff"] * 2,
    ...                    "judge": ["Yes", "No", "No", "No", "None", "Lots"],
    ...                    "human": ["Yes", "Yes", "Yes", "No", None, None]})
    >>> direction_table(df, positive="Yes").set_index("dimension").loc["t_eff", "lean"]
    'unknown'
    """
    check_columns(data, (dimension, judge, human))
    scales = dict(scales or {})
    categories = dict(categories or {})
    frames = []
    dim: Any
    for dim, g in data.groupby(dimension, sort=False):
        sc = scales.get(dim, "binary")
        pos = positive.get(dim, True) if isinstance(positive, Mapping) else positive
        hcol = g[human]
        anchor = None if hcol.isna().all() else g[human].tolist()
        r = direction_of_error(g[judge].tolist(), anchor, scale=sc, positive=pos,
                               categories=categories.get(dim), abstain=abstain,
                               confidence_level=confidence_level)
        f = r.to_frame()
        f.insert(0, "dimension", dim)
        frames.append(f)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["dimension", "lean"])


def table_direction(
    table: ConfusionTable,
    *,
    scale: str = "binary",
    positive: Any = None,
    confidence_level: float = 0.95,
) -> DirectionResult:
    """:func:`direction_of_error` from a judge-vs-human :class:`ConfusionTable` (rows: the judge,
    columns: the human), so a scored dataset's mergeable summaries give the lean without rows.

    The table holds everything the statistic needs: the pairable units by (judge, human) label,
    and how many units each side left out.  Units where only the judge, only the human, or both
    gave no label are recovered exactly from ``n_units``, ``n_pairable`` and the two exclusion
    counts (``|A & B| = |A| + |B| - |A | B|``), and enter as items excluded on that side, so
    ``n_items``, the exclusions and the coverage are those of the rows.  The result is the one
    :func:`direction_of_error` gives on the units' label lists.

    Parameters
    ----------
    table : ConfusionTable
    scale : {"binary", "ordinal"}
        Binary: the signed bias of the ``positive`` rate.  Ordinal: the mean of judge minus
        human, the categories being their own scores (numeric categories, lowest first).
    positive : label, optional
        The positive category of a binary table; default the last category.
    confidence_level : float, default 0.95

    Examples
    --------
    >>> from evaltk.stats import confusion_table
    >>> t = confusion_table([1, 1, 1, 0, None], [1, 0, 0, 0, 1], categories=[0, 1])
    >>> r = table_direction(t)
    >>> r.counts.n_pairs, r.counts.n_judge_abstained, round(float(r.statistic), 2)
    (4, 1, 0.5)
    """
    check_choice("scale", scale, _SCALES)
    cats = list(table.categories)
    if not cats:
        raise InputError("the table has no categories: there is nothing to compare.", field="table")
    counts = np.asarray(table.counts, dtype=np.int64)
    ja, hb = np.nonzero(counts)
    reps = counts[ja, hb]
    judge: list[Any] = np.repeat(np.array(cats, dtype=object)[ja], reps).tolist()
    human: list[Any] = np.repeat(np.array(cats, dtype=object)[hb], reps).tolist()
    n_a, n_b = sum(table.excluded_a.values()), sum(table.excluded_b.values())
    n_either = table.n_units - table.n_pairable
    both = n_a + n_b - n_either
    if both < 0 or both > min(n_a, n_b):
        raise InputError(f"the table's exclusions ({n_a} judge, {n_b} human) do not fit its {n_either} units "
                         "with a missing label", field="table")
    # a placeholder label on the side that has one: the item is excluded before any statistic
    for jl, hl, k in ((None, cats[0], n_a - both), (cats[0], None, n_b - both), (None, None, both)):
        judge += [jl] * k
        human += [hl] * k
    if not judge:
        raise InputError("the table has no units: there are no items to compare.", field="table")
    if scale == "binary":
        return direction_of_error(judge, human, scale="binary", positive=cats[-1] if positive is None else positive,
                                  abstain=(), confidence_level=confidence_level)
    return direction_of_error(judge, human, scale="ordinal", categories={c: float(c) for c in cats}, abstain=(),
                              confidence_level=confidence_level)
