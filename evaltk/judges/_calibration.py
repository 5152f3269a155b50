"""Calibration against humans: the ceiling, the baseline, the alt-test and how many labels.

Seed 002's promotion rule: a dimension is *calibrated* only with all five of a
human ceiling, a degenerate baseline, a set held out from everything that shaped
the scorer, a threshold set by decision cost, and a stated interval.  This module
computes the three numbers that rule compares and checks the five conditions:

* :func:`human_ceiling`: human-human agreement on the items two or more humans
  labelled, with intervals (percent agreement with a Wilson interval, and
  Krippendorff's alpha with an item bootstrap);
* :func:`calibration_numbers`: the ceiling, judge-human agreement and an
  always-majority baseline, all on the *same* items;
* :func:`promotion_check`: the five conditions, which are met and on what evidence;
* :func:`alt_test`: the alternative annotator test of Calderon, Reichart and Dror
  (2025): can the judge replace the annotators?
* :func:`kappa_sample_size`: how many human labels a target interval half-width
  on kappa needs, by simulation;
* :func:`agentrewardbench_ceiling`: the human ceiling of AgentRewardBench's expert
  annotations (Lù et al. 2025; read by :func:`evaltk.data.load_agentrewardbench`), the
  real-data worked example.

Abstentions ("Unsure", "Cannot tell", ``None``, NaN) are never a class: a rating
that abstains leaves the comparison and is counted on the result.

The coefficients and their bootstrap intervals come from :mod:`evaltk.agreement`
(every replicate drawn at once from resampled count tables); judge-human
pairs are resampled by item (cluster bootstrap), since the ratings of one item
are not independent.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from .._display import HtmlTable
from .._validation import (
    as_frame,
    check_columns,
    check_confidence_level,
    check_nonempty,
    check_rng,
    lazy_module,
    recorded_seed,
    seeded_rng,
)
from .._validation import plain as _plain
from .._validation import undefined as _undefined
from ..errors import InputError
from ..scoring import CalibrationRecord, promotion_conditions
from ..stats import (
    DISTRIBUTION,
    AgreementResult,
    CategoryDomainWarning,
    ConfidenceInterval,
    ResultShape,
    cohen_kappa,
    critical_value,
    kappa_from_tables,
    krippendorff_alpha,
    percent_agreement,
    wilson_interval,
)
from ..values import (
    ABSTAIN_WORDS,
    LEVELS,
    Abstention,
    Cause,
    Threshold,
    UndefinedWarning,
    abstain_labels,
    answer_categories,
    is_missing_label,
    measure_level,
)

stats = lazy_module("scipy.stats")

#: Calibration compares categories: the first two levels of the one list (values.LEVELS says so).
_LEVELS = LEVELS[:2]


# --------------------------------------------------------------------------- label handling


def _domain(labels: Iterable[Any], categories: Sequence[Any] | None, level: str) -> list[Any]:
    labels = list(labels)
    if categories is not None:
        cats = list(categories)
        if len(set(cats)) != len(cats):
            raise ValueError("`categories` has duplicates.")
        known = set(cats)
        bad = [x for x in labels if x not in known]
        if bad:
            raise ValueError(
                f"label {_plain(bad[0])!r} is not among `categories` {cats}; declare it, or list it in `abstain`."
            )
        seen = set(labels)
        if level == "ordinal" and seen and seen < known:
            warnings.warn(
                f"observed labels are a strict subset of the declared domain (unused: "
                f"{[c for c in cats if c not in seen]}); ordinal distances use the declared domain",
                CategoryDomainWarning,
                stacklevel=3,
            )
        return cats
    if level == "ordinal":
        raise ValueError("an ordinal `level` needs the ordered scale in `categories` (lowest first).")
    uniq = list(dict.fromkeys(labels))
    try:
        return sorted(uniq)
    except TypeError:
        return uniq


def _check_level(level: str | None, measure: str | None = None,
                 categories: Sequence[Any] | None = None) -> tuple[str, Sequence[Any] | None]:
    """The declared level of measurement and domain: ``level`` as given, else the answer
    vocabulary's level for ``measure`` (with its ordered words as the domain when
    ``categories`` is not given).  Never a silent default (STYLE item 7)."""
    if measure is not None:
        known = measure_level(measure)
        if level is not None and level != known:
            raise ValueError(f"`level` {level!r} contradicts the vocabulary: {measure} is {known}.")
        level = known
        if categories is None:
            categories = answer_categories(measure)
    if level is None:
        raise TypeError("`level` is required (one of " + ", ".join(_LEVELS) + "), or name a `measure` "
                        "of the answer vocabulary to take its level; there is no default.")
    if level not in _LEVELS:
        raise ValueError(f"`level` must be one of {', '.join(_LEVELS)}; got {level!r}.")
    return level, categories


# --------------------------------------------------------------------------- human ceiling


@dataclass(frozen=True)
class CeilingResult(ResultShape):
    """Human-human agreement on the items two or more humans labelled.

    Attributes
    ----------
    statistic : float or Abstention
        Percent agreement: the mean over pairable items of the share of agreeing
        pairs of ratings (with two ratings per item: the share of items whose two
        ratings agree); an abstention when no item keeps two ratings.
    confidence_interval : ConfidenceInterval or Abstention
        Wilson interval when every pairable item has exactly two ratings (the
        items are then Bernoulli trials); otherwise an item bootstrap.
    interval_method : str
    alpha : AgreementResult
        Krippendorff's alpha at ``level`` (:func:`evaltk.agreement.krippendorff_alpha`)
        with its item-bootstrap interval.
    level : str
    categories : tuple
    items : tuple
        The pairable items (two or more non-abstained ratings), in order.
    n_items : int
        Items in the data.
    n_multiply_labelled : int
        Items with two or more ratings (abstentions included).
    n_pairable : int
        Items with two or more non-abstained ratings: the denominator.
    n_ratings_abstained : int
        Ratings that abstained ("Unsure"), on multiply-labelled items.
    n_items_lost_to_abstention : int
        Multiply-labelled items that fell below two ratings because of abstentions.
    confidence_level : float
    seed : int or str
        The seed of the bootstrap draws (:func:`evaltk._validation.seeded_rng`): the int
        given, the one drawn for ``rng=None``, or a note that the caller's Generator was used.
    """

    statistic: float | Abstention
    confidence_interval: ConfidenceInterval | Abstention
    interval_method: str
    alpha: AgreementResult
    level: str
    categories: tuple[Any, ...]
    items: tuple[Any, ...] = field(repr=False)
    n_items: int
    n_multiply_labelled: int
    n_pairable: int
    n_ratings_abstained: int
    n_items_lost_to_abstention: int
    confidence_level: float
    seed: int | str

    @property
    def coverage(self) -> float | Abstention:
        """Share of multiply-labelled items that stayed pairable."""
        if self.n_multiply_labelled == 0:
            return Abstention(Cause.MISSING_EVIDENCE, "no item has two ratings")
        return self.n_pairable / self.n_multiply_labelled

    def to_frame(self) -> pd.DataFrame:
        """Two tidy rows: ``percent_agreement`` and ``krippendorff_alpha``."""
        a = self.alpha
        cov = self.coverage
        common = {"n_items": self.n_items, "n_multiply_labelled": self.n_multiply_labelled,
                  "n_pairable": self.n_pairable, "n_ratings_abstained": self.n_ratings_abstained,
                  "n_items_lost_to_abstention": self.n_items_lost_to_abstention,
                  "coverage": None if isinstance(cov, Abstention) else cov,
                  "confidence_level": self.confidence_level}
        return pd.DataFrame([
            {"statistic_name": "percent_agreement", **self.summary_row(),
             "interval_method": self.interval_method, **common},
            {"statistic_name": f"krippendorff_alpha_{self.level}", **a.summary_row(),
             "interval_method": f"bootstrap_{a.method}_item", **common},
        ])


def _long_frame(data: Any, item: str, rater: str, rating: str) -> pd.DataFrame:
    data = as_frame(data)
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"`data` must be a long DataFrame with columns {item!r}, {rater!r}, {rating!r}.")
    check_columns(data, (item, rater, rating))
    if data.empty:
        raise InputError("`data` has no rows: there are no ratings to compare.", field="data")
    return data[[item, rater, rating]]


@dataclass(frozen=True)
class _Ratings:
    """Validated long human ratings with their declared level, domain and abstain set."""

    frame: pd.DataFrame
    item: str
    rater: str
    rating: str
    level: str
    categories: Sequence[Any] | None
    abstain: frozenset
    confidence_level: float


def _ratings(data: Any, *, item: str, rater: str, rating: str, level: str | None, measure: str | None,
             categories: Sequence[Any] | None, abstain: Iterable[Any], confidence_level: float) -> _Ratings:
    """The one validation of :func:`human_ceiling` and :func:`calibration_numbers`."""
    level, categories = _check_level(level, measure, categories)
    cl = check_confidence_level(confidence_level)
    frame = _long_frame(data, item, rater, rating)
    return _Ratings(frame, item, rater, rating, level, categories, abstain_labels(abstain, categories), cl)


def _units(frame: pd.DataFrame, item: str, rater: str, rating: str, abstain: frozenset
           ) -> tuple[dict[Any, list[Any]], dict[str, int]]:
    """Item -> non-abstained ratings (items with >= 2 ratings), and the abstention counts."""
    dup = frame.duplicated([item, rater], keep=False)
    if dup.any():
        row = frame[dup].iloc[0]
        raise ValueError(
            f"rater {_plain(row[rater])!r} rated item {_plain(row[item])!r} more than once; "
            "one rating per rater and item."
        )
    groups: dict[Any, list[Any]] = {}
    for it, lab in zip(frame[item].tolist(), frame[rating].tolist(), strict=True):
        groups.setdefault(it, []).append(lab)
    multi = {k: v for k, v in groups.items() if len(v) >= 2}
    units: dict[Any, list[Any]] = {}
    n_abst = 0
    lost = 0
    for k, v in multi.items():
        kept = [x for x in v if not is_missing_label(x, abstain)]
        n_abst += len(v) - len(kept)
        if len(kept) >= 2:
            units[k] = kept
        else:
            lost += 1
    return units, {"n_items": len(groups), "n_multiply_labelled": len(multi),
                   "n_ratings_abstained": n_abst, "n_items_lost_to_abstention": lost}


def human_ceiling(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    rater: str = "rater",
    rating: str = "rating",
    level: str | None = None,
    measure: str | None = None,
    categories: Sequence[Any] | None = None,
    abstain: Iterable[Any] = ABSTAIN_WORDS,
    confidence_level: float = 0.95,
    method: str = "percentile",
    n_resamples: int = 2000,
    rng: Any = None,
) -> CeilingResult:
    """Human-human agreement on the items two or more humans labelled, with intervals.

    Parameters
    ----------
    data : DataFrame
        Long format: one row per (item, rater) with the rating.
    item, rater, rating : str
        Column names.
    level : {"nominal", "ordinal"}
        Level of measurement for Krippendorff's alpha.  Required unless ``measure``
        is given (there is no default).  Ordinal needs ``categories``.
    measure : str, optional
        A measure of the answer vocabulary (``"x_task"``, ``"x_eff"``, ...): its level
        (:data:`evaltk.values.MEASURE_LEVELS`) and, unless ``categories`` is given, its
        ordered words (:func:`evaltk.values.answer_categories`).
    categories : sequence, optional
        The declared domain (ordered, lowest first, for ordinal).
    abstain : label or labels, default :data:`evaltk.values.ABSTAIN_WORDS`
        Labels meaning "the rater declined" ("cannot_tell", "Unsure", ...): excluded
        and counted.  ``abstain=()`` for none; a declared category never abstains.
    confidence_level : float, default 0.95
    method : {"percentile", "basic", "bca"}
        Bootstrap interval method for alpha.
    n_resamples : int, default 2000
    rng : None, int or Generator

    Returns
    -------
    CeilingResult
        With abstentions for the statistic and interval (and a warning) when no
        item keeps two non-abstained ratings; empty ``data`` raises
        :class:`~evaltk.errors.InputError`.

    Notes
    -----
    Percent agreement is Fleiss' :math:`\\bar P`: the mean over items of
    :math:`\\sum_c n_{uc}(n_{uc}-1) / (m_u(m_u-1))`.  Alpha is
    :math:`1 - (n-1)\\sum o_{ck}\\delta_{ck} / \\sum n_c n_k \\delta_{ck}` over the
    coincidence matrix (Krippendorff 2011).  Because the raters differ from item
    to item (AgentRewardBench pairs any two of eight experts), a pooled-marginal
    coefficient (alpha, or Fleiss/Scott) is the right chance correction, not
    Cohen's kappa, which assumes the same two raters throughout.

    References
    ----------
    Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability.
    Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters.
    *Psychological Bulletin* 76, 378-382.

    Examples
    --------
    >>> df = pd.DataFrame({"item_id": [1, 1, 2, 2, 3, 3, 4, 4],
    ...                    "rater": ["a", "b", "a", "c", "b", "c", "a", "b"],
    ...                    "rating": ["Yes", "Yes", "No", "No", "Yes", "No", "Yes", "Unsure"]})
    >>> r = human_ceiling(df, level="nominal", rng=0, n_resamples=200)
    >>> round(r.statistic, 3), r.n_pairable, r.n_ratings_abstained
    (0.667, 3, 1)
    """
    r = _ratings(data, item=item, rater=rater, rating=rating, level=level, measure=measure, categories=categories,
                 abstain=abstain, confidence_level=confidence_level)
    gen, record = seeded_rng(rng)
    seed = recorded_seed(record)
    return _ceiling(r, r.frame, method=method, n_resamples=n_resamples, gen=gen, seed=seed)


def _ceiling(r: _Ratings, frame: pd.DataFrame, *, method: str, n_resamples: int, gen: np.random.Generator,
             seed: int | str) -> CeilingResult:
    """The human ceiling of ``frame`` (rows of ``r.frame``), drawing from ``gen`` (recorded as ``seed``)."""
    units, counts = _units(frame, r.item, r.rater, r.rating, r.abstain)
    if not units:
        return _undefined_ceiling(r, counts, seed)
    cats = _domain((x for v in units.values() for x in v), r.categories, r.level)
    per_item = np.array([_pairwise_agreement(v) for v in units.values()])
    sub = frame[frame[r.item].isin(set(units))]
    sub = sub[[not is_missing_label(x, r.abstain) for x in sub[r.rating].tolist()]]
    columns = {"data": sub, "item": r.item, "rater": r.rater, "rating": r.rating, "categories": cats}
    boot = {"method": method, "n_resamples": n_resamples, "confidence_level": r.confidence_level, "rng": gen}
    if all(len(v) == 2 for v in units.values()):  # each item a Bernoulli trial: Wilson
        w = wilson_interval(int(round(float(per_item.sum()))), len(units), confidence_level=r.confidence_level)
        pa_ci, pa_method = w.confidence_interval, "wilson"
    else:
        res = percent_agreement(**columns, **boot)
        pa_ci, pa_method = res.confidence_interval, f"bootstrap_{res.method}_item"
    alpha = krippendorff_alpha(**columns, level=r.level, **boot)
    return CeilingResult(
        statistic=float(per_item.mean()), confidence_interval=pa_ci, interval_method=pa_method,
        alpha=alpha, level=r.level, categories=tuple(cats), items=tuple(units),
        n_pairable=len(units), confidence_level=r.confidence_level, seed=seed, **counts,
    )


def _undefined_ceiling(r: _Ratings, counts: dict[str, int], seed: int | str) -> CeilingResult:
    ab = _undefined("no item keeps two non-abstained ratings", what="the human ceiling")
    cats = tuple(r.categories) if r.categories is not None else ()
    cl = r.confidence_level
    alpha = AgreementResult.abstaining("krippendorff_alpha", ab, confidence_level=cl, categories=cats,
                                       weights=r.level, n_units=counts["n_items"])
    return CeilingResult(statistic=ab, confidence_interval=ab, interval_method="none", alpha=alpha, level=r.level,
                         categories=cats, items=(), n_pairable=0, confidence_level=cl, seed=seed, **counts)


def _pairwise_agreement(labels: list[Any]) -> float:
    # Not evaltk.stats.percent_agreement: that one is undefined with a single pairable item
    # ("agreement needs at least two"), where the ceiling reports the item's agreement
    # (tests/data/test_datasets.py::test_alttest_toy_long_table); on >= 2 items they agree bit for bit.
    m = len(labels)
    counts = pd.Series(labels).value_counts().to_numpy(dtype=float)
    return float((counts * (counts - 1.0)).sum() / (m * (m - 1.0)))


# --------------------------------------------------------------------------- the three numbers


@dataclass(frozen=True)
class AgreementWithHumans(ResultShape):
    """Agreement of one labeller (a judge, or the majority baseline) with the human ratings.

    Every (item, human rating) pair counts once; the interval resamples items
    (the pairs of an item are not independent).

    Attributes
    ----------
    name : str
        ``"judge"`` or ``"majority_baseline"``.
    statistic : float or Abstention
        Percent agreement: share of (item, human rating) pairs the labeller matches.
    confidence_interval : ConfidenceInterval or Abstention
    kappa : AgreementResult
        Cohen's kappa of the labeller against the stacked human ratings (quadratic
        weights for an ordinal level), item bootstrap.  For the always-majority
        baseline kappa is 0 by construction.
    n_items, n_pairs : int
    label : Any
        The constant label (baseline only).
    """

    name: str
    statistic: float | Abstention
    confidence_interval: ConfidenceInterval | Abstention
    kappa: AgreementResult
    n_items: int
    n_pairs: int
    interval_method: str
    label: Any = None


@dataclass(frozen=True)
class CalibrationNumbers(ResultShape):
    """Seed 002's three numbers on the same items: human ceiling, judge, degenerate baseline.

    ``statistic`` and ``confidence_interval`` are the judge's (percent agreement
    with the humans); all three numbers are in :meth:`to_frame`.

    Attributes
    ----------
    ceiling : CeilingResult
    judge : AgreementWithHumans
    baseline : AgreementWithHumans
    items : tuple
        The items all three are computed on.
    n_judge_abstained : int
        Pairable items the judge did not answer (left out of all three numbers).
    n_judge_missing : int
        Pairable items with no judge label at all.
    seed : int or str
        The seed of every bootstrap draw of the three numbers (as on :class:`CeilingResult`).
    """

    ceiling: CeilingResult
    judge: AgreementWithHumans
    baseline: AgreementWithHumans
    items: tuple[Any, ...] = field(repr=False)
    n_judge_abstained: int
    n_judge_missing: int
    seed: int | str

    @property
    def statistic(self) -> float | Abstention:
        """The judge's percent agreement with the humans."""
        return self.judge.statistic

    @property
    def confidence_interval(self) -> ConfidenceInterval | Abstention:
        return self.judge.confidence_interval

    @property
    def judge_coverage(self) -> float | Abstention:
        total = len(self.items) + self.n_judge_abstained + self.n_judge_missing
        if total == 0:
            return Abstention(Cause.MISSING_EVIDENCE, "no pairable items")
        return len(self.items) / total

    def to_frame(self) -> pd.DataFrame:
        """Tidy rows ``comparison, statistic_name, statistic, ci_low, ci_high, interval_method, n_items``,
        and where the statistic or its interval abstains, the cause and reason."""
        rows = []
        c = self.ceiling
        for _, r in c.to_frame().iterrows():
            rows.append({"comparison": "human-human", "statistic_name": r["statistic_name"],
                         **{k: r[k] for k in _SHAPE_COLUMNS},
                         "interval_method": r["interval_method"], "n_items": c.n_pairable})
        for a in (self.judge, self.baseline):
            comp = "judge-human" if a.name == "judge" else "majority baseline-human"
            rows.append({"comparison": comp, "statistic_name": "percent_agreement",
                         **a.summary_row(),
                         "interval_method": a.interval_method, "n_items": a.n_items})
            k = a.kappa
            rows.append({"comparison": comp, "statistic_name": "cohen_kappa" + (
                "_quadratic" if c.level == "ordinal" else ""), **k.summary_row(),
                "interval_method": f"bootstrap_{k.method}_cluster(item)", "n_items": a.n_items})
        return pd.DataFrame(rows)


def _labeller_agreement(name: str, labels: list[Any], units: list[list[Any]], items: Sequence[Any],
                        cats: list[Any], level: str, *, method: str, n_resamples: int, cl: float,
                        rng: np.random.Generator, constant: Any = None) -> AgreementWithHumans:
    y1 = [lab for lab, hum in zip(labels, units, strict=True) for _ in hum]
    y2 = [h for hum in units for h in hum]
    clusters = [it for it, hum in zip(items, units, strict=True) for _ in hum]
    weights = "quadratic" if level == "ordinal" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedWarning)
        pa_res = percent_agreement(y1, y2, categories=cats, method=method, n_resamples=n_resamples,
                                   confidence_level=cl, rng=rng, unit="cluster", clusters=clusters)
        k_res = cohen_kappa(y1, y2, weights=weights, categories=cats, method=method, n_resamples=n_resamples,
                            confidence_level=cl, rng=rng, unit="cluster", clusters=clusters)
    ci, ci_method = pa_res.confidence_interval, f"bootstrap_{pa_res.method}_cluster(item)"
    if isinstance(ci, Abstention) and pa_res.statistic in (0.0, 1.0):
        # every pair agrees (or none does): the item bootstrap is degenerate, but each item is then one
        # all-or-nothing trial. Wilson's score interval on the items bounds the pair agreement: the share
        # of fully agreeing items bounds it from below (all agree), the share of items with any agreeing
        # pair from above (none agree)
        n_items = len(units)
        ci = wilson_interval(int(pa_res.statistic) * n_items, n_items, confidence_level=cl).confidence_interval
        ci_method = "wilson_items (the item bootstrap is degenerate: every item agrees alike)"
    return AgreementWithHumans(name=name, statistic=pa_res.statistic,
                               confidence_interval=ci, kappa=k_res, n_items=len(units),
                               n_pairs=len(y1), interval_method=ci_method, label=constant)


def _unanswered(name: str, ab: Abstention, cl: float, ceiling: CeilingResult) -> AgreementWithHumans:
    kappa = AgreementResult.abstaining("cohen_kappa", ab, confidence_level=cl, categories=ceiling.categories)
    return AgreementWithHumans(name=name, statistic=ab, confidence_interval=ab, kappa=kappa, n_items=0, n_pairs=0,
                               interval_method="none")


def calibration_numbers(
    data: pd.DataFrame,
    judge: Mapping[Any, Any] | pd.Series,
    *,
    item: str = "item_id",
    rater: str = "rater",
    rating: str = "rating",
    level: str | None = None,
    measure: str | None = None,
    categories: Sequence[Any] | None = None,
    abstain: Iterable[Any] = ABSTAIN_WORDS,
    majority: Any = None,
    confidence_level: float = 0.95,
    method: str = "percentile",
    n_resamples: int = 2000,
    rng: Any = None,
) -> CalibrationNumbers:
    """Human ceiling, judge-human agreement and an always-majority baseline on the same items.

    Parameters
    ----------
    data : DataFrame
        Human ratings, long format (see :func:`human_ceiling`).
    judge : mapping or Series
        The judge's label per item id.  Items the judge abstained on (or has no
        label for) leave all three numbers and are counted.
    level, measure, categories, abstain, confidence_level, method, n_resamples, rng
        As in :func:`human_ceiling` (``level`` or ``measure`` is required).
    majority : label, optional
        The baseline's constant label.  Default: the most frequent human rating
        on these items (ties: first in ``categories`` order), which flatters the
        baseline; pass the majority of a training split to avoid that.

    Returns
    -------
    CalibrationNumbers
        When no pairable item has a judge label, the judge's and the baseline's
        numbers are abstentions (with a warning); the ceiling is still computed.

    Examples
    --------
    >>> df = pd.DataFrame({"item_id": np.repeat(np.arange(6), 2), "rater": ["a", "b"] * 6,
    ...                    "rating": ["Y", "Y", "N", "N", "N", "N", "N", "Y", "N", "N", "Y", "Y"]})
    >>> nums = calibration_numbers(df, {0: "Y", 1: "N", 2: "N", 3: "N", 4: "Y", 5: "Y"},
    ...                            level="nominal", rng=0, n_resamples=200)
    >>> round(nums.ceiling.statistic, 3), round(nums.judge.statistic, 3), round(nums.baseline.statistic, 3)
    (0.833, 0.75, 0.583)
    """
    r = _ratings(data, item=item, rater=rater, rating=rating, level=level, measure=measure, categories=categories,
                 abstain=abstain, confidence_level=confidence_level)
    jmap = judge.to_dict() if isinstance(judge, pd.Series) else dict(judge)
    units_all, _ = _units(r.frame, r.item, r.rater, r.rating, r.abstain)
    keep = [k for k in units_all if k in jmap and not is_missing_label(jmap[k], r.abstain)]
    n_missing = sum(1 for k in units_all if k not in jmap)
    counts = {"n_judge_abstained": len(units_all) - n_missing - len(keep), "n_judge_missing": n_missing}
    gen, record = seeded_rng(rng)
    seed = recorded_seed(record)
    boot: dict[str, Any] = {"method": method, "n_resamples": n_resamples, "cl": r.confidence_level, "rng": gen}
    if not keep:
        ceiling = _ceiling(r, r.frame, method=method, n_resamples=n_resamples, gen=gen, seed=seed)
        nobody = _undefined("no pairable item has a judge label", what="judge-human agreement")
        none = [_unanswered(name, nobody, r.confidence_level, ceiling) for name in ("judge", "majority_baseline")]
        return CalibrationNumbers(ceiling=ceiling, judge=none[0], baseline=none[1], items=(), seed=seed, **counts)
    ceiling = _ceiling(r, r.frame[r.frame[r.item].isin(set(keep))], method=method, n_resamples=n_resamples,
                       gen=gen, seed=seed)
    units = [units_all[k] for k in ceiling.items]
    jl = [jmap[k] for k in ceiling.items]
    seen = ceiling.categories if r.categories is not None else [x for v in units for x in v]
    cats = _domain([*seen, *jl], r.categories, r.level)
    judge_res = _labeller_agreement("judge", jl, units, ceiling.items, cats, r.level, **boot)
    majority = _majority(units, cats, majority)
    base = _labeller_agreement("majority_baseline", [majority] * len(units), units, ceiling.items, cats, r.level,
                               constant=majority, **boot)
    return CalibrationNumbers(ceiling=ceiling, judge=judge_res, baseline=base, items=ceiling.items, seed=seed,
                              **counts)


def _majority(units: list[list[Any]], cats: list[Any], majority: Any) -> Any:
    """The baseline's constant label: ``majority`` as declared, else the most frequent human
    rating (ties: first in ``cats`` order)."""
    if majority is None:
        counts = pd.Series([x for v in units for x in v]).value_counts()
        top = set(counts[counts == counts.max()].index)
        return next(c for c in cats if c in top)
    if majority not in set(cats):
        raise ValueError(f"`majority` {majority!r} is not among the categories {cats}.")
    return majority


# --------------------------------------------------------------------------- promotion rule

# The rule itself and its condition names have one home, evaltk.scoring (promotion_conditions,
# PROMOTION_CONDITIONS); this module turns measured numbers into the record the rule reads.


@dataclass(frozen=True)
class PromotionCheck(HtmlTable):
    """Which of seed 002's five promotion conditions are met, and on what evidence.

    Attributes
    ----------
    conditions : DataFrame
        ``condition, met, evidence``, one row per condition in :data:`PROMOTION_CONDITIONS`.
    notes : tuple of str
        Observations that are not conditions (the judge's interval against the
        baseline and the ceiling).
    """

    conditions: pd.DataFrame
    notes: tuple[str, ...] = ()

    @property
    def met(self) -> bool:
        """True only when all five conditions are met."""
        return bool(self.conditions["met"].all())

    @property
    def status(self) -> str:
        """``"calibrated"`` when all five are met, else ``"provisional"``."""
        return "calibrated" if self.met else "provisional"

    @property
    def missing(self) -> list[str]:
        return self.conditions.loc[~self.conditions["met"], "condition"].tolist()

    def to_frame(self) -> pd.DataFrame:
        return self.conditions.copy()


_SHAPE_COLUMNS = ("statistic", "cause", "reason", "ci_low", "ci_high", "ci_cause", "ci_reason")


def _finite_interval(ci: Any) -> bool:
    if ci is None or isinstance(ci, Abstention):
        return False
    try:
        lo, hi = (float(v) for v in ci)
    except (TypeError, ValueError):
        return False
    return math.isfinite(lo) and math.isfinite(hi) and lo <= hi


def _record(numbers: CalibrationNumbers | None, *, label_set: str | None, evaluation_items: Iterable[Any] | None,
            tuning_items: Iterable[Any] | None, threshold: Threshold | None) -> CalibrationRecord:
    """The calibration record ``numbers`` support: the evidence the promotion rule reads."""
    ev = tuple(evaluation_items) if evaluation_items is not None else (
        tuple(numbers.items) if numbers is not None else ())
    tu = None if tuning_items is None else tuple(tuning_items)
    held_out = tu is not None and bool(ev) and not (set(ev) & set(tu))
    if numbers is None:
        none = Abstention(Cause.MISSING_EVIDENCE, "no calibration numbers were computed")
        return CalibrationRecord(
            label_set=label_set or "", statistic="percent_agreement", estimate=none, interval=none,
            confidence_level=None, held_out=held_out, human_ceiling=None, baseline=None, threshold=threshold,
            n_items=len(ev), evaluation_items=ev, tuning_items=tu)
    c, j, b = numbers.ceiling, numbers.judge, numbers.baseline
    cci = c.confidence_interval
    c_lo, c_hi = (cci.low, cci.high) if isinstance(cci, ConfidenceInterval) else (cci, cci)
    return CalibrationRecord(
        label_set=label_set or "", statistic="percent_agreement", estimate=j.statistic,
        interval=j.confidence_interval, confidence_level=c.confidence_level, held_out=held_out,
        human_ceiling=(c.statistic, c_lo, c_hi), baseline=b.statistic, threshold=threshold,
        n_items=len(ev), evaluation_items=ev, tuning_items=tu)


def promotion_check(
    numbers: CalibrationNumbers | None,
    *,
    label_set: str | None = None,
    evaluation_items: Iterable[Any] | None = None,
    tuning_items: Iterable[Any] | None = None,
    threshold: Threshold | None = None,
) -> PromotionCheck:
    """Check seed 002's promotion rule: all five conditions, or the dimension stays provisional.

    The rule is :func:`evaltk.scoring.promotion_conditions`, the same one
    :meth:`evaltk.scoring.Manifest.calibrate` applies; this builds the record the
    numbers support (:func:`calibration_record`) and reads the rule's verdict on it.

    Parameters
    ----------
    numbers : CalibrationNumbers or None
        From :func:`calibration_numbers` (None: nothing measured yet).
    label_set : str, optional
        The name of the held-out label set; the held-out condition needs it.
    evaluation_items : iterable, optional
        The item ids the agreement was measured on (default: ``numbers.items``).
    tuning_items : iterable, optional
        Every item that shaped the scorer (prompt examples, rubric tuning,
        threshold fitting).  The held-out condition needs it declared, even if
        empty, and needs no overlap.
    threshold : Threshold, optional
        Met only when ``validated=True`` with a non-blank ``source`` (the decision-cost record).

    Returns
    -------
    PromotionCheck

    Examples
    --------
    >>> promotion_check(None).status
    'provisional'
    >>> promotion_check(None).missing[:2]
    ['human_ceiling', 'degenerate_baseline']
    """
    rec = _record(numbers, label_set=label_set, evaluation_items=evaluation_items, tuning_items=tuning_items,
                  threshold=threshold)
    notes: list[str] = []
    if numbers is not None and _finite_interval(numbers.judge.confidence_interval) \
            and not isinstance(numbers.baseline.statistic, Abstention) and _finite_interval(
                numbers.ceiling.confidence_interval):
        j, b, c = numbers.judge, numbers.baseline, numbers.ceiling
        assert isinstance(j.confidence_interval, tuple) and isinstance(c.confidence_interval, tuple)  # finite
        if j.confidence_interval[0] <= b.statistic:
            notes.append(f"the judge's interval reaches down to the majority baseline ({b.statistic:.4g}): "
                         "it is not shown to beat always answering the majority label")
        if j.confidence_interval[1] < c.confidence_interval[0]:
            notes.append("the judge's interval lies below the human ceiling's")
    return PromotionCheck(promotion_conditions(rec), tuple(notes))


def calibration_record(
    numbers: CalibrationNumbers,
    *,
    label_set: str,
    tuning_items: Iterable[Any] | None,
    threshold: Threshold | None = None,
) -> CalibrationRecord:
    """The :class:`evaltk.scoring.CalibrationRecord` these numbers support, for ``Manifest.calibrate``.

    ``held_out`` is True only when ``tuning_items`` is declared and shares no item
    with the evaluation items (the record carries both, so the promotion rule checks
    it again); the estimate and interval are judge-human percent agreement, the
    ceiling is human-human percent agreement with its interval, the baseline the
    always-majority agreement.

    Examples
    --------
    >>> df = pd.DataFrame({"item_id": np.repeat(np.arange(6), 2), "rater": ["a", "b"] * 6,
    ...                    "rating": ["Y", "Y", "N", "N", "N", "N", "N", "Y", "N", "N", "Y", "Y"]})
    >>> nums = calibration_numbers(df, {0: "Y", 1: "N", 2: "N", 3: "N", 4: "Y", 5: "Y"},
    ...                            level="nominal", rng=0, n_resamples=200)
    >>> rec = calibration_record(nums, label_set="demo", tuning_items=[])
    >>> rec.held_out, rec.unmet()
    (True, ['threshold_by_decision_cost'])
    """
    return _record(numbers, label_set=label_set, evaluation_items=None, tuning_items=tuning_items,
                   threshold=threshold)


# --------------------------------------------------------------------------- alt-test


_TEST_NO_INTERVAL = Abstention(Cause.NOT_APPLICABLE, "a test: a rate of rejections and p-values, no interval")


@dataclass(frozen=True)
class AltTestResult(ResultShape):
    """The alternative annotator test (Calderon, Reichart and Dror 2025).

    Attributes
    ----------
    statistic : float
        The winning rate: the share of (tested) annotators for whom the null
        "the judge is worse by more than epsilon" is rejected after
        Benjamini-Yekutieli correction.
    winning_rate : float
    advantage_probability : float
        Mean over annotators of the share of items where the judge matches the
        remaining annotators at least as well as the left-out annotator.
    passed : bool
        ``winning_rate >= 0.5``.
    per_annotator : DataFrame
        ``annotator, n_items, rho_judge, rho_human, mean_difference, t_statistic,
        pvalue, rejected``.
    skipped : DataFrame
        ``annotator, n_items, reason`` for annotators with too few items.
    epsilon, q : float
    metric : str
    n_items_dropped : int
        Items dropped for fewer than two annotators or no judge label.
    confidence_interval : Abstention
        A test has no interval (``not_applicable``).
    """

    statistic: float
    winning_rate: float
    advantage_probability: float
    passed: bool
    per_annotator: pd.DataFrame
    skipped: pd.DataFrame
    epsilon: float
    q: float
    metric: str
    n_items_dropped: int
    confidence_interval: Abstention = _TEST_NO_INTERVAL

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{**self.summary_row(), "winning_rate": self.winning_rate,
                              "advantage_probability": self.advantage_probability,
                              "passed": self.passed, "epsilon": self.epsilon, "q": self.q,
                              "metric": self.metric, "n_annotators_tested": len(self.per_annotator),
                              "n_annotators_skipped": len(self.skipped),
                              "n_items_dropped": self.n_items_dropped}])


def _alt_metric(metric: str | Callable[[Any, list[Any]], float]) -> tuple[str, Callable[[Any, list[Any]], float]]:
    if callable(metric):
        return getattr(metric, "__name__", "custom"), metric
    if metric == "accuracy":
        return metric, lambda pred, anns: float(np.mean([pred == a for a in anns]))
    if metric == "neg_rmse":
        def neg_rmse(pred: Any, anns: list[Any]) -> float:
            try:
                return -float(np.sqrt(np.mean([(float(pred) - float(a)) ** 2 for a in anns])))
            except (TypeError, ValueError):
                raise ValueError(f"`metric='neg_rmse'` needs numeric labels; got {pred!r} and {anns!r}.") from None
        return metric, neg_rmse
    raise ValueError(f"`metric` must be 'accuracy', 'neg_rmse' or a callable; got {metric!r}.")


def _by_reject(pvalues: np.ndarray, q: float) -> np.ndarray:
    """Benjamini-Yekutieli step-up; NaN p-values never reject but count in m."""
    from statsmodels.stats.multitest import multipletests

    p = np.where(np.isfinite(pvalues), pvalues, 1.0)
    if p.size == 0:
        return np.zeros(0, dtype=bool)
    reject, *_ = multipletests(p, alpha=q, method="fdr_by")
    return np.asarray(reject, dtype=bool) & np.isfinite(pvalues)


def _annotations(x: Any, name: str) -> dict[Any, dict[Any, Any]]:
    x = as_frame(x)
    if isinstance(x, pd.DataFrame):
        cols = list(x.columns)
        if len(cols) < 3:
            raise InputError(f"`{name}` as a DataFrame needs columns (annotator, item, label); got {cols}.",
                             field=name)
        a, i, lab = cols[:3]
        out: dict[Any, dict[Any, Any]] = {}
        for ann, it, v in zip(x[a], x[i], x[lab], strict=True):
            out.setdefault(ann, {})[it] = v
        return out
    if not isinstance(x, Mapping):
        raise TypeError(f"`{name}` must be {{annotator: {{item: label}}}} or a long DataFrame.")
    return {k: dict(v) for k, v in x.items()}


def _alt_matrix(hum: Mapping[Any, Mapping[Any, Any]], jd: Mapping[Any, Any], items: list[Any],
                pos: Mapping[Any, int], metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Items x annotators values (NaN missing) and the judge's column, coded for ``metric``."""
    n, A = len(items), len(hum)
    if metric == "accuracy":
        codes: dict[Any, int] = {}

        def enc(v: Any, who: Any = None, item: Any = None) -> float:
            try:
                return float(codes.setdefault(v, len(codes)))
            except TypeError:  # unhashable label
                return float(codes.setdefault(repr(v), len(codes)))
    else:
        def enc(v: Any, who: Any = None, item: Any = None) -> float:
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise InputError(f"`metric='neg_rmse'` needs numeric labels; got {v!r}.",
                                 record=f"{who}/{item}", field="label")
            if not math.isfinite(v):  # NaN would read as a missing label, inf as a distance
                raise InputError(f"`metric='neg_rmse'` needs finite labels; got {v!r} (a missing "
                                 "label is left out of the mapping).", record=f"{who}/{item}",
                                 field="label")
            return float(v)
    X = np.full((n, A), np.nan)
    for c, (who, d) in enumerate(hum.items()):
        for i, v in d.items():
            t = pos.get(i)
            if t is not None:
                X[t, c] = enc(v, who, i)
    J = np.array([enc(jd[i], "judge", i) for i in items])
    return X, J


def _alt_indicators(matrix: tuple[np.ndarray, np.ndarray], col: int, rows: np.ndarray, metric: str
                    ) -> tuple[np.ndarray, np.ndarray]:
    X, J = matrix
    sub = X[rows]
    rest = np.delete(sub, col, axis=1)
    present = ~np.isnan(rest)
    m = present.sum(axis=1)
    own = sub[:, col][:, None]
    judge = J[rows][:, None]
    if metric == "accuracy":
        hs = ((rest == own) & present).sum(axis=1) / m
        js = ((rest == judge) & present).sum(axis=1) / m
    else:
        hs = -np.sqrt(np.where(present, (own - rest) ** 2, 0.0).sum(axis=1) / m)
        js = -np.sqrt(np.where(present, (judge - rest) ** 2, 0.0).sum(axis=1) / m)
    return (js >= hs).astype(float), (hs >= js).astype(float)


def alt_test(
    humans: Mapping[Any, Mapping[Any, Any]] | pd.DataFrame,
    judge: Mapping[Any, Any] | pd.Series,
    *,
    metric: str | Callable[[Any, list[Any]], float] = "accuracy",
    epsilon: float = 0.2,
    q: float = 0.05,
    min_items: int = 30,
    min_humans_per_item: int = 2,
    abstain: Iterable[Any] = ABSTAIN_WORDS,
) -> AltTestResult:
    """The alternative annotator test: can the judge replace the human annotators?

    Parameters
    ----------
    humans : mapping or DataFrame
        ``{annotator: {item: label}}``, or a long DataFrame whose first three
        columns are (annotator, item, label).
    judge : mapping or Series
        ``{item: label}``.
    metric : {"accuracy", "neg_rmse"} or callable
        Alignment of one label with the remaining annotators' labels: the share
        that match (categorical), or minus the RMSE (ordinal / numeric).  A
        callable takes ``(label, list_of_labels)`` and returns a float, higher is better.
    epsilon : float, default 0.2
        Cost-benefit margin (0.2 experts, 0.15 skilled, 0.1 crowd workers).
    q : float, default 0.05
        Benjamini-Yekutieli false discovery rate across annotators.
    min_items : int, default 30
        Annotators with fewer items are skipped (the t-test needs about 30).
    min_humans_per_item : int, default 2
    abstain : label or labels, default :data:`evaltk.values.ABSTAIN_WORDS`
        Labels meaning "the rater declined" ("cannot_tell", "Unsure", ...): treated as
        missing (dropped before the test).  ``abstain=()`` for none.

    Returns
    -------
    AltTestResult

    Notes
    -----
    Leave annotator ``j`` out.  On each item ``i`` that ``j`` labelled, score the
    judge and ``j`` against the remaining annotators; ``W_ij = 1`` when the judge
    scores at least as well, ``H_ij = 1`` when ``j`` does (a tie counts for
    both).  ``rho_j = mean W_ij`` (the advantage probability), and the one-sided
    one-sample t-test of ``H_ij - W_ij`` against ``epsilon`` (alternative:
    less) gives ``p_j``.  Benjamini-Yekutieli at ``q`` across annotators; the
    winning rate is the share rejected, and the judge passes when it is at least
    0.5.  A zero-variance difference makes the t-test undefined: its p-value is
    missing and it does not reject (as in the authors' implementation).

    References
    ----------
    Calderon, N., Reichart, R. and Dror, R. (2025). The Alternative Annotator Test
    for LLM-as-a-Judge: How to Statistically Justify Replacing Human Annotators
    with LLMs. *ACL 2025*, 16051-16081.  Reference code: github.com/nitaytech/AltTest.
    Benjamini, Y. and Yekutieli, D. (2001). *Annals of Statistics* 29, 1165-1188.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.integers(0, 2, 60)
    >>> noisy = lambda p: {i: int(t if rng.random() > p else 1 - t) for i, t in enumerate(truth)}
    >>> humans = {f"h{k}": noisy(0.25) for k in range(3)}
    >>> r = alt_test(humans, noisy(0.02), epsilon=0.2)
    >>> r.passed, r.winning_rate
    (True, 1.0)
    """
    name, score = _alt_metric(metric)
    _check_alt_levels(epsilon, q)
    ab = abstain_labels(abstain)
    check_nonempty(humans, "humans", needs="the alt-test compares the judge with human annotators")
    check_nonempty(judge, "judge", needs="the alt-test needs the judge's labels")
    hum = {a: {i: v for i, v in d.items() if not is_missing_label(v, ab)} for a, d in _annotations(humans, "humans").items()}
    jd = judge.to_dict() if isinstance(judge, pd.Series) else dict(judge)
    jd = {i: v for i, v in jd.items() if not is_missing_label(v, ab)}
    by_item: dict[Any, list[Any]] = {}
    for a, d in hum.items():
        for i in d:
            by_item.setdefault(i, []).append(a)
    keep = {i for i, anns in by_item.items() if len(anns) >= min_humans_per_item and i in jd}
    indicators = _alt_scorer(hum, jd, by_item, sorted(keep, key=str), name, score)
    rows, skipped = [], []
    for col, (a, d) in enumerate(hum.items()):
        items = [i for i in d if i in keep]
        if len(items) < min_items:
            skipped.append({"annotator": a, "n_items": len(items), "reason": f"fewer than {min_items} items"})
        else:
            rows.append(_annotator_row(a, *indicators(col, a, items), epsilon))
    per = pd.DataFrame(rows, columns=["annotator", "n_items", "rho_judge", "rho_human", "mean_difference",
                                      "t_statistic", "pvalue"])
    if per.empty:
        raise InputError(
            f"no annotator has at least `min_items` ({min_items}) items shared with the judge and another "
            "annotator; the alt-test cannot run.", field="humans",
        )
    per["rejected"] = _by_reject(per["pvalue"].to_numpy(dtype=float), q)
    wr = float(per["rejected"].mean())
    return AltTestResult(statistic=wr, winning_rate=wr, advantage_probability=float(per["rho_judge"].mean()),
                         passed=wr >= 0.5, per_annotator=per,
                         skipped=pd.DataFrame(skipped, columns=["annotator", "n_items", "reason"]),
                         epsilon=float(epsilon), q=float(q), metric=name, n_items_dropped=len(by_item) - len(keep))


def _check_alt_levels(epsilon: Any, q: Any) -> None:
    for nm, v in (("epsilon", epsilon), ("q", q)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
            raise TypeError(f"`{nm}` must be a finite float; got {v!r}.")
    if not 0.0 < q < 1.0:
        raise ValueError(f"`q` must be in (0, 1); got {q!r}.")


def _alt_scorer(hum: Mapping[Any, Mapping[Any, Any]], jd: Mapping[Any, Any], by_item: Mapping[Any, list[Any]],
                item_list: list[Any], name: str, score: Callable[[Any, list[Any]], float]
                ) -> Callable[[int, Any, list[Any]], tuple[np.ndarray, np.ndarray]]:
    """``(column, annotator, items) -> (W, H)``: the judge's and the left-out annotator's win
    indicators on ``items``; vectorised for the built-in metrics, item by item for a callable."""
    pos = {i: t for t, i in enumerate(item_list)}
    if name in ("accuracy", "neg_rmse"):
        matrix = _alt_matrix(hum, jd, item_list, pos, name)
        return lambda col, a, items: _alt_indicators(matrix, col, np.array([pos[i] for i in items]), name)

    def one_by_one(col: int, a: Any, items: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        w = np.empty(len(items))
        h = np.empty(len(items))
        for t, i in enumerate(items):
            rest = [hum[b][i] for b in by_item[i] if b != a]
            hs = score(hum[a][i], rest)
            js = score(jd[i], rest)
            w[t] = 1.0 if js >= hs else 0.0
            h[t] = 1.0 if hs >= js else 0.0
        return w, h
    return one_by_one


def _annotator_row(a: Any, w: np.ndarray, h: np.ndarray, epsilon: float) -> dict[str, Any]:
    """One annotator's line: rho for each side and the one-sided t-test of ``H - W`` against epsilon."""
    diff = h - w
    if np.ptp(diff) == 0:  # zero variance: the t-test is undefined and does not reject
        tstat, p = math.nan, math.nan
    else:
        res = stats.ttest_1samp(diff, epsilon, alternative="less")
        tstat, p = float(res.statistic), float(res.pvalue)
    return {"annotator": a, "n_items": len(w), "rho_judge": float(w.mean()), "rho_human": float(h.mean()),
            "mean_difference": float(diff.mean()), "t_statistic": tstat, "pvalue": p}


# --------------------------------------------------------------------------- precision planning


@dataclass(frozen=True)
class SampleSizePlan(ResultShape):
    """How many double-labelled items a target half-width on kappa needs.

    Attributes
    ----------
    n_required : int or Abstention
        Smallest ``n`` on the grid whose ``assurance`` quantile of the simulated
        half-width is at most ``target_half_width`` (an abstention when none is).
    target_half_width, kappa, prevalence, assurance, confidence_level : float
    table : DataFrame
        ``n, median_half_width, assurance_half_width, share_within_target,
        share_undefined`` per grid point.
    n_simulations : int
    seed : int or str
        The seed of the simulation (as on :class:`CeilingResult`).
    distribution : str
        The planned interval's critical value: ``"t"`` on ``n - 1`` df or ``"normal"``.
    """

    n_required: int | Abstention
    target_half_width: float
    kappa: float
    prevalence: float
    assurance: float
    confidence_level: float
    table: pd.DataFrame
    n_simulations: int
    seed: int | str
    distribution: str

    @property
    def statistic(self) -> int | Abstention:
        return self.n_required

    @property
    def confidence_interval(self) -> Abstention:
        return Abstention(Cause.NOT_APPLICABLE, "a planned sample size has no interval")

    def to_frame(self) -> pd.DataFrame:
        """The simulated half-widths per grid point (``n, median_half_width, ...``)."""
        return self.table.copy()


def population_table(kappa: float, prevalence: float) -> np.ndarray:
    """2x2 cell probabilities of two exchangeable raters with ``kappa`` and a shared ``prevalence``.

    ``p11 = pi^2 + kappa pi (1 - pi)``, ``p10 = p01 = pi (1 - pi)(1 - kappa)``,
    ``p00 = (1 - pi)^2 + kappa pi (1 - pi)``; Cohen's kappa of this table is ``kappa``.
    """
    pi = float(prevalence)
    if not 0.0 < pi < 1.0:
        raise ValueError(f"`prevalence` must be in (0, 1); got {prevalence!r}.")
    v = pi * (1.0 - pi)
    lo = max(-pi / (1.0 - pi), -(1.0 - pi) / pi)
    if not lo <= kappa <= 1.0:
        raise ValueError(f"`kappa` must be in [{lo:.4g}, 1] for prevalence {pi:g}; got {kappa!r}.")
    return np.array([[pi * pi + kappa * v, v * (1.0 - kappa)], [v * (1.0 - kappa), (1 - pi) ** 2 + kappa * v]])


def kappa_sample_size(
    target_half_width: float,
    *,
    kappa: float,
    prevalence: float = 0.5,
    confidence_level: float = 0.95,
    assurance: float = 0.5,
    n_grid: Sequence[int] | None = None,
    n_simulations: int = 2000,
    rng: Any = None,
    distribution: str = DISTRIBUTION,
) -> SampleSizePlan:
    """How many items two humans must label so kappa's interval has a target half-width.

    Simulates ``n_simulations`` samples of ``n`` items from a 2x2 population with
    the given ``kappa`` and ``prevalence`` (:func:`population_table`) for each
    ``n`` on the grid, computes the analytic interval ``kappa +- c SE``
    (Fleiss, Cohen and Everitt 1969) of each, with ``c`` the critical value of the
    interval :func:`cohen_kappa` reports by default (Student's t on ``n - 1`` df;
    ``distribution="normal"`` plans the z interval), and returns the smallest ``n`` whose
    ``assurance`` quantile of the half-width is within the target.

    Parameters
    ----------
    target_half_width : float
        E.g. 0.1 for kappa +- 0.1.
    kappa : float
        The agreement you expect.
    prevalence : float, default 0.5
        Share of positives (rare positives need many more items).
    confidence_level : float, default 0.95
    assurance : float, default 0.5
        0.5: the median half-width meets the target; 0.8: 80% of studies meet it.
    n_grid : sequence of int, optional
        Default: 20 to 5000 on a roughly geometric grid.
    n_simulations : int, default 2000
    rng : None, int or Generator
    distribution : {"t", "normal"}, default ``evaltk.stats.DISTRIBUTION`` ("t")
        The interval being planned: plan for the one you will report.

    Returns
    -------
    SampleSizePlan

    Notes
    -----
    Samples whose kappa is undefined (one category only) count as not meeting the
    target, and their share is reported.

    References
    ----------
    Fleiss, J. L., Cohen, J. and Everitt, B. S. (1969). Large sample standard errors
    of kappa and weighted kappa. *Psychological Bulletin* 72, 323-327.
    Donner, A. and Rotondi, M. A. (2010). Sample size requirements for interval
    estimation of the kappa statistic. *Statistics in Medicine* 29, 2960-2967.

    Examples
    --------
    >>> plan = kappa_sample_size(0.1, kappa=0.6, prevalence=0.5, rng=0, n_simulations=500)
    >>> 150 <= plan.n_required <= 250
    True
    """
    cl = check_confidence_level(confidence_level)
    _check_plan(target_half_width, assurance, n_simulations)
    probs = population_table(kappa, prevalence).ravel()
    grid = _plan_grid(n_grid)
    gen, record = seeded_rng(rng)
    seed = recorded_seed(record)
    rows = [_simulated_half_widths(gen, n, probs, int(n_simulations), critical_value(cl, distribution, n - 1),
                                   assurance, target_half_width) for n in grid]
    # the grid is simulated in full either way (the table reports every point)
    n_req: int | Abstention = next(
        (r["n"] for r in rows if r["assurance_half_width"] <= target_half_width),
        Abstention(Cause.MISSING_EVIDENCE, f"no n up to {grid[-1]} reaches the target half-width"))
    return SampleSizePlan(n_req, float(target_half_width), float(kappa), float(prevalence), float(assurance),
                          cl, pd.DataFrame(rows), int(n_simulations), seed, distribution)


def _check_plan(target_half_width: Any, assurance: Any, n_simulations: Any) -> None:
    if not (isinstance(target_half_width, numbers.Real) and 0 < target_half_width < 2):  # type: ignore[operator]  # Real orders
        raise ValueError(f"`target_half_width` must be in (0, 2); got {target_half_width!r}.")
    if not 0.0 < assurance < 1.0:
        raise ValueError(f"`assurance` must be in (0, 1); got {assurance!r}.")
    if int(n_simulations) < 10:
        raise ValueError(f"`n_simulations` must be at least 10; got {n_simulations!r}.")


def _plan_grid(n_grid: Sequence[int] | None) -> list[int]:
    """The sample sizes to simulate: ``n_grid``, else 20 to 5000 on a roughly geometric grid."""
    if n_grid is None:
        n_grid = np.unique(np.round(np.geomspace(20, 5000, 60)).astype(int)).tolist()
    grid = sorted({int(x) for x in n_grid})
    if not grid or grid[0] < 2:
        raise ValueError("`n_grid` must hold sample sizes of at least 2.")
    return grid


def _simulated_half_widths(gen: np.random.Generator, n: int, probs: np.ndarray, n_simulations: int, c: float,
                           assurance: float, target: float) -> dict[str, Any]:
    """One grid point: ``n_simulations`` samples of ``n`` items, the half-width ``c SE`` of each
    (an undefined kappa counts as an infinite half-width)."""
    tabs = gen.multinomial(n, probs, size=n_simulations).reshape(-1, 2, 2)
    _, se = kappa_from_tables(tabs)
    hw = c * se
    undefined = ~np.isfinite(hw)
    hw_filled = np.where(undefined, np.inf, hw)
    return {"n": n, "median_half_width": float(np.median(hw_filled)),
            "assurance_half_width": float(np.quantile(hw_filled, assurance)),
            "share_within_target": float(np.mean(hw_filled <= target)),
            "share_undefined": float(undefined.mean())}


# --------------------------------------------------------------------------- AgentRewardBench

def agentrewardbench_ceiling(
    path: str | Path, *, confidence_level: float = 0.95, method: str = "percentile",
    n_resamples: int = 2000, rng: Any = 0,
) -> pd.DataFrame:
    """Human-human agreement per AgentRewardBench question on the double-annotated trajectories.

    "Unsure" is an abstention, excluded and counted.  Returns the tidy rows of
    :meth:`CeilingResult.to_frame` with a ``question`` column.  The file is read by
    :func:`evaltk.data.load_agentrewardbench`.
    """
    from ..data import AGENTREWARDBENCH_QUESTIONS, load_agentrewardbench

    long = load_agentrewardbench(path)
    gen = check_rng(rng)
    frames = []
    for q, spec in AGENTREWARDBENCH_QUESTIONS.items():
        sub = long[long["question"] == q]
        r = human_ceiling(sub, item="item_id", rater="rater", rating="rating", level=spec["level"],
                          categories=spec["categories"], abstain=spec["abstain"],
                          confidence_level=confidence_level, method=method, n_resamples=n_resamples, rng=gen)
        if not r.defined:
            raise ValueError(f"{path}: question {q!r} has no double-annotated trajectory "
                             f"({cast(Abstention, r.statistic).reason}).")
        f = r.to_frame()
        f.insert(0, "question", q)
        frames.append(f)
    return pd.concat(frames, ignore_index=True)
