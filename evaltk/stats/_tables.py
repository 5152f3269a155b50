"""Mergeable summaries: every aggregate evaltk reports, built from partial summaries that add.

Scoring is row-local (one trace never changes another's row), so a score matrix can
be computed in pieces: per file, per partition of a cluster, per batch of a stream.
Every aggregate is then a function of a *summary* that adds across disjoint pieces,
and this module makes that contract explicit: one summary type per aggregate, each
with ``combine`` (also ``+``), and a function computing it from an in-memory table.
The same types are filled by :mod:`evaltk.scale` from SQL in DuckDB or from Dask
partitions, so every engine reports the same numbers.

==================  ========================================================  ====================
summary             what it holds                                              aggregates
==================  ========================================================  ====================
:class:`MeanSummary`  n, n valued, sum, sum of squares, abstentions per cause   mean, SE, coverage
:class:`ScoreSummary` one ``MeanSummary`` per group (measure, tier, ``by``)     ``ScoreMatrix.summary``
:class:`ConfusionTable`  a q x q count table of two raters (judge vs human),      Cohen's kappa, Scott's
                      units each side left out per cause, and per-cluster      pi, PABAK, percent
                      count patterns                                           agreement, bootstrap
:class:`UnitPatterns` per-unit category-count vectors with multiplicities       Fleiss' kappa, Gwet's
                      (the coincidence table is a function of them)            AC1, Krippendorff's alpha
:class:`PassCounts`   trials and passes per task, abstentions counted           pass@k, pass^k
==================  ========================================================  ====================

Bootstrap from summaries
------------------------
Resampling ``n`` units with replacement and tabulating them gives cell counts
``Multinomial(n, p)`` with ``p`` the observed cell frequencies
(:func:`evaltk.stats.bootstrap_table`), so the bootstrap replicates of every
table statistic are drawn from the combined table alone: no row ever travels to the
driver.  With the same ``rng`` the replicates are identical to
``bootstrap_table`` on the rows (``unit="item"``).  A cluster bootstrap (every rating
of one item together) draws clusters: clusters with the same count pattern are
exchangeable, so ``Multinomial(C, m / C)`` over the distinct patterns (``m`` their
multiplicities) has the distribution of ``C`` clusters drawn with replacement.

References
----------
Chan, T. F., Golub, G. H. & LeVeque, R. J. (1979). Updating formulae and a pairwise
algorithm for computing sample variances.  Stanford CS-TR-79-773 (sums that merge).
Efron, B. & Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*, ch. 13-14.
Davison, A. C. & Hinkley, D. V. (1997). *Bootstrap Methods and their Application*, sec. 3.8.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._blas import serial_blas, sum_of_squares
from .._display import HtmlTable
from .._validation import check_choice
from .._validation import plain as _plain
from ..values import (
    ABSTAIN_WORDS,
    CAUSES,
    Abstention,
    Cause,
    MeanSummary,
    UndefinedWarning,
    check_value_cause,
)
from ._bootstrap import (
    BootstrapResult,
    _config,
    _run_sums,
    _undefined_result,
)
from ._passk import pass_at_k, pass_hat_k

#: Columns of a partial score summary (after the group keys): what adds across pieces.
PARTIAL_COLUMNS: tuple[str, ...] = ("n", "n_valued", "total", "total_sq", *(f"n_{c}" for c in CAUSES))
_TWO_RATER_STATS = ("cohen_kappa", "scott_pi", "pabak", "percent_agreement")
_MULTI_STATS = ("fleiss_kappa", "gwet_ac1", "brennan_prediger", "percent_agreement", "krippendorff_alpha")


class TreeCombiner:
    """Combine summaries of disjoint pieces as they come, in the tree :func:`combine_all` builds:
    :meth:`push` them in their order, :meth:`result` when all are in.  It holds one partial per
    bit of the count pushed so far (a binary counter: two partials of the same size are combined
    at once), so combining n pieces holds about log2(n) partials, not n, and gives the same tree,
    bit for bit, as combining the whole list: pairs at each level, an odd last piece carried up.

    Examples
    --------
    >>> from evaltk.values import summarize
    >>> t = TreeCombiner()
    >>> for x in ([1.0], [0.0], [1.0]):
    ...     t.push(summarize(x))
    >>> t.result().mean, len(t)
    (0.6666666666666666, 3)
    """

    def __init__(self) -> None:
        self._stack: list[tuple[int, Any]] = []  # (pieces in the partial, partial), sizes halving
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def push(self, summary: Any) -> None:
        """Add the next piece (after every piece pushed before it)."""
        size, acc = 1, summary
        while self._stack and self._stack[-1][0] == size:
            left = self._stack.pop()[1]
            acc, size = left.combine(acc), 2 * size
        self._stack.append((size, acc))
        self._n += 1

    def result(self) -> Any:
        """The combined summary of every piece pushed (:class:`ValueError` when none was): the
        partials left, largest first, each combined with what follows it, from the right, as
        the level-by-level reduction carries an odd piece up and combines it last."""
        if not self._stack:
            raise ValueError("`summaries` is empty: there is nothing to combine.")
        acc = self._stack[-1][1]
        for _, left in reversed(self._stack[:-1]):
            acc = left.combine(acc)
        return acc


def combine_all(summaries: Iterable[Any]) -> Any:
    """Combine summaries of disjoint pieces pairwise, as a balanced tree (as Dask does): each
    level combines neighbours in pairs, an odd last piece carried up (:class:`TreeCombiner`
    builds the same tree as the pieces come).

    Examples
    --------
    >>> from evaltk.values import summarize
    >>> combine_all([summarize([1.0]), summarize([0.0]), summarize([1.0])]).mean
    0.6666666666666666
    """
    tree = TreeCombiner()
    for s in summaries:
        tree.push(s)
    return tree.result()


def _sorted_union(a: Sequence[Any], b: Sequence[Any]) -> tuple[Any, ...]:
    seen = list(dict.fromkeys([*a, *b]))
    try:
        return tuple(sorted(seen))
    except TypeError:
        return tuple(seen)


#: The group key of runs whose key column is missing (None, NaN, NA): they are a group of their
#: own, kept as a missing value (never dropped, never renamed), and sorted after every other group.
MISSING_KEY = None


def _key(x: Any) -> Any:
    """A group key as every engine gives it: a plain scalar, and :data:`MISSING_KEY` for any missing value."""
    x = _plain(x)
    if x is None or x is pd.NA or x is pd.NaT or (isinstance(x, float) and math.isnan(x)):
        return MISSING_KEY
    return x


def _key_order(k: tuple[Any, ...]) -> tuple[Any, ...]:
    """Sort key of a group: missing parts last (None never meets ``<``)."""
    return tuple((x is MISSING_KEY, x) for x in k)


# =========================================================================== means


@dataclass(frozen=True)
class ScoreSummary(HtmlTable):
    """A :class:`MeanSummary` per group: the summary behind ``ScoreMatrix.summary``.

    The one per-group summary of evaltk: ``ScoreMatrix.summary``, :func:`summarize_frame`
    and the DuckDB and Dask engines of :mod:`evaltk.scale` all build it.  Rows whose group
    key is missing form a group of their own with the key :data:`MISSING_KEY` (a missing
    value, sorted last): no run leaves the denominator because a column was empty.

    Attributes
    ----------
    keys : tuple of str
        Names of the group columns (``("measure",)``, ``("measure", "agent")``).
    groups : mapping of tuple to MeanSummary
        One summary per group key.

    Examples
    --------
    >>> f = pd.DataFrame({"measure": ["x_task", "x_task", "x_safe"], "value": [1.0, None, 0.0],
    ...                   "cause": [None, "abstained", None]})
    >>> s = score_summary(f.iloc[:2], by="measure") + score_summary(f.iloc[2:], by="measure")
    >>> s.to_frame()[["measure", "mean", "n", "n_abstained"]].to_dict("records")
    [{'measure': 'x_safe', 'mean': 0.0, 'n': 1, 'n_abstained': 0}, {'measure': 'x_task', 'mean': 1.0, 'n': 2, 'n_abstained': 1}]
    """

    keys: tuple[str, ...]
    groups: Mapping[tuple[Any, ...], MeanSummary] = field(default_factory=dict)

    def combine(self, other: ScoreSummary) -> ScoreSummary:
        """Summary of the union of two disjoint pieces (same keys)."""
        if tuple(self.keys) != tuple(other.keys):
            raise ValueError(f"cannot combine summaries grouped by {self.keys} and {other.keys}.")
        out = dict(self.groups)
        for k, s in other.groups.items():
            out[k] = out[k].combine(s) if k in out else s
        return ScoreSummary(tuple(self.keys), out)

    __add__ = combine

    def __getitem__(self, key: Any) -> MeanSummary:
        k = key if isinstance(key, tuple) else (key,)
        return self.groups[k]

    def __len__(self) -> int:
        return len(self.groups)

    @classmethod
    def from_partials(cls, frame: pd.DataFrame, keys: Sequence[str]) -> ScoreSummary:
        """Build from a partial table (group keys plus :data:`PARTIAL_COLUMNS`); repeated keys add."""
        keys = tuple(keys)
        missing = [c for c in (*keys, *PARTIAL_COLUMNS) if c not in frame.columns]
        if missing:
            raise ValueError(f"partial summary table lacks columns {missing}.")
        if len(frame) and frame[list(keys)].duplicated().any():
            frame = frame.groupby(list(keys), sort=False, observed=True, dropna=False)[
                list(PARTIAL_COLUMNS)].sum().reset_index()
        groups: dict[tuple[Any, ...], MeanSummary] = {}
        cols = {c: frame[c].to_numpy() for c in (*keys, *PARTIAL_COLUMNS)}
        for i in range(len(frame)):
            k = tuple(_key(cols[c][i]) for c in keys)
            if k in groups:  # NaN and None keys of pieces meet here
                groups[k] = groups[k].combine(MeanSummary(
                    n=int(cols["n"][i]), n_valued=int(cols["n_valued"][i]), total=float(cols["total"][i]),
                    total_sq=float(cols["total_sq"][i]), excluded={c: int(cols[f"n_{c}"][i]) for c in CAUSES}))
                continue
            groups[k] = MeanSummary(
                n=int(cols["n"][i]), n_valued=int(cols["n_valued"][i]), total=float(cols["total"][i]),
                total_sq=float(cols["total_sq"][i]),
                excluded={c: int(cols[f"n_{c}"][i]) for c in CAUSES})
        return cls(keys, groups)

    def partials(self) -> pd.DataFrame:
        """The partial table: group keys plus :data:`PARTIAL_COLUMNS`, one row per group."""
        rows = []
        for k, s in self.groups.items():
            r = dict(zip(self.keys, k, strict=True))
            r.update(n=s.n, n_valued=s.n_valued, total=s.total, total_sq=s.total_sq)
            r.update({f"n_{c}": s.excluded[c] for c in CAUSES})
            rows.append(r)
        return pd.DataFrame(rows, columns=[*self.keys, *PARTIAL_COLUMNS])

    def to_frame(self) -> pd.DataFrame:
        """Tidy per-group summary, the columns of :func:`evaltk.values.summarize_frame`, sorted by key.

        ``mean, mean_cause, n, n_valued, n_excluded, n_<cause>..., coverage``.
        """
        rows = []
        try:
            order = sorted(self.groups, key=_key_order)
        except TypeError:
            order = sorted(self.groups, key=lambda t: tuple((x is MISSING_KEY, str(x)) for x in t))
        for k in order:
            d = self.groups[k].to_dict()
            d["mean"] = math.nan if d["mean"] is None else d["mean"]
            rows.append({**dict(zip(self.keys, k, strict=True)), **d})
        cols = [*self.keys, "mean", "mean_cause", "n", "n_valued", "n_excluded",
                *[f"n_{c}" for c in CAUSES], "coverage"]
        out = pd.DataFrame(rows, columns=cols)
        for c in ("n", "n_valued", "n_excluded", *[f"n_{c}" for c in CAUSES]):
            out[c] = out[c].astype(np.int64)
        out["mean"] = out["mean"].astype(float)
        out["coverage"] = out["coverage"].astype(float)
        return out


def score_partials(frame: pd.DataFrame, by: str | Sequence[str] = ("measure",), *,
                   value: str = "value", cause: str = "cause") -> pd.DataFrame:
    """Partial summary table of a long score table: group keys plus :data:`PARTIAL_COLUMNS`.

    Vectorised: each key becomes integer codes (a categorical's own, else ``pd.factorize``),
    the rows one group number, every count one ``np.bincount``, and each group's sums those
    :func:`evaltk.values.summarize` makes (its valued rows in order); the groups come out in the
    order of ``groupby(sort=True, dropna=False)`` (a categorical key in its category order).
    Rows whose group key is missing are a group of their own (never dropped).  Tables from several pieces concatenate and sum
    (``ScoreSummary.from_partials``); this is the chunk function of the Dask engine.
    """
    keys = [by] if isinstance(by, str) else list(by)
    v = pd.to_numeric(frame[value], errors="coerce").to_numpy(float)
    valued = ~np.isnan(v)
    coded = [_group_codes(frame[k]) for k in keys]
    gid, size = np.zeros(len(frame), np.int64), 1
    for codes, uniques in coded:  # one mixed-radix group number per row, in the groups' sort order
        r = len(uniques) + 1
        if size > 2**62 // r:  # too many possible groups for int64: number those seen so far, in order
            gid, size = _renumber(gid)
        gid, size = gid * r + codes, size * r
    if size > max(len(frame), 2**16):  # sparse: count only the groups seen
        gid, size = _renumber(gid)
    n = np.bincount(gid, minlength=size)
    obs = np.flatnonzero(n)
    rep = np.zeros(size, np.int64)
    rep[gid] = np.arange(len(gid))  # a row of each group (any: its keys are the group's)
    row = rep[obs]
    out = pd.DataFrame({k: pd.Series(np.append(u, np.array([MISSING_KEY], dtype=object))[c[row]], dtype=object)
                        for k, (c, u) in zip(keys, coded, strict=True)})
    out["n"] = n[obs].astype(np.int64)
    out["n_valued"] = np.bincount(gid[valued], minlength=size)[obs].astype(np.int64)
    out["total"], out["total_sq"] = _group_sums(gid[valued], v[valued], size, obs)
    cc = _cause_codes(frame[cause])
    has = cc >= 0
    per_cause = np.bincount(gid[has] * len(CAUSES) + cc[has], minlength=size * len(CAUSES)).reshape(size, -1)
    for j, c in enumerate(CAUSES):
        out[f"n_{c}"] = per_cause[obs, j].astype(np.int64)
    return out


@serial_blas  # one BLAS thread for the whole loop (the nested sum_of_squares calls share it)
def _group_sums(gid: np.ndarray, v: np.ndarray, size: int, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per group (``obs``) the sum and the sum of squares of its values, each group's values in row
    order summed by ``ndarray.sum`` and :func:`evaltk._blas.sum_of_squares`: the additions
    :func:`evaltk.values.summarize` makes on the same values, so both doors to a mean give the same float."""
    order = _stable_order(gid, size)
    vs = v[order]
    counts = np.bincount(gid, minlength=size)
    ends = np.cumsum(counts)
    starts = ends - counts
    total = np.array([vs[starts[g]:ends[g]].sum() for g in obs], dtype=float)
    total_sq = np.array([sum_of_squares(vs[starts[g]:ends[g]]) for g in obs], dtype=float)
    return total, total_sq


def _stable_order(gid: np.ndarray, size: int) -> np.ndarray:
    """The rows sorted by group number, rows of a group kept in order.  numpy's stable sort is a
    radix sort only for keys of 16 bits or fewer (a merge sort above), so wider numbers are sorted
    in two stable radix passes, on the low 16 bits and then on the high ones."""
    if size <= 2**16:
        return np.argsort(gid.astype(np.uint16), kind="stable")
    if size <= 2**32:
        low = np.argsort((gid & 0xFFFF).astype(np.uint16), kind="stable")
        return low[np.argsort((gid[low] >> 16).astype(np.uint16), kind="stable")]
    return np.argsort(gid, kind="stable")


def _group_codes(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A group column as ``(codes, uniques)``: codes numbered in the order of ``groupby(sort=True,
    dropna=False)`` (a categorical's category order, else sorted values) and a missing value coded
    ``len(uniques)``, after every value; ``uniques`` an object array of plain values."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = col.cat.codes.to_numpy().astype(np.int64)
        uniques = col.cat.categories
    else:
        try:
            codes, uniques = pd.factorize(col, sort=True, use_na_sentinel=True)
        except TypeError:  # values that do not sort (mixed types): order of appearance
            codes, uniques = pd.factorize(col, sort=False, use_na_sentinel=True)
        codes = np.asarray(codes, np.int64)
    u = np.array([_plain(x) for x in uniques], dtype=object) if len(uniques) else np.zeros(0, dtype=object)
    return np.where(codes < 0, len(u), codes), u


def _renumber(gid: np.ndarray) -> tuple[np.ndarray, int]:
    """Group numbers renumbered 0..k-1 over the groups seen, keeping their order."""
    seen, inv = np.unique(gid, return_inverse=True)
    return inv.reshape(-1).astype(np.int64), len(seen)


_MISSING_EVIDENCE = CAUSES.index(Cause.MISSING_EVIDENCE.value)


def _cause_codes(cause: pd.Series) -> np.ndarray:
    """Each row's cause as its position in :data:`CAUSES`; -1 where there is none, -2 for a word
    that is no cause (counted under no cause; refused where a table needs its cause)."""
    if isinstance(cause.dtype, pd.CategoricalDtype):
        at = np.array([CAUSES.index(c) if c in CAUSES else -2 for c in cause.cat.categories] + [-1], np.int64)
        return at[cause.cat.codes.to_numpy()]
    codes = pd.Index(list(CAUSES), dtype=object).get_indexer(pd.Index(cause.astype(object))).astype(np.int64)
    codes[(codes < 0) & cause.notna().to_numpy()] = -2
    return codes


def score_summary(frame: pd.DataFrame, by: str | Sequence[str] = ("measure",), *,
                  value: str = "value", cause: str = "cause") -> ScoreSummary:
    """The :class:`ScoreSummary` of a long score table (``value`` missing exactly where ``cause`` is set).

    Parameters
    ----------
    frame : DataFrame
        A long score table (``ScoreMatrix.frame`` or one tier of it).
    by : str or sequence of str
        Group columns.
    value, cause : str
        Column names.

    Returns
    -------
    ScoreSummary
    """
    check_value_cause(frame, value=value, cause=cause, where="score table")
    keys = (by,) if isinstance(by, str) else tuple(by)
    return ScoreSummary.from_partials(score_partials(frame, keys, value=value, cause=cause), keys)


def summarize_frame(frame: pd.DataFrame, by: str | Sequence[str] | None = None, *, value: str = "value",
                    cause: str = "cause") -> pd.DataFrame:
    """Tidy per-group summary: ``mean, mean_cause, n, n_valued, n_excluded, n_<cause>..., coverage``.

    :func:`score_summary` as a table (``ScoreSummary.to_frame``), so every door to a
    per-group mean gives the same numbers.  Rows whose group key is missing are a group of
    their own, with the key missing (:data:`MISSING_KEY` in the summary, NA in the table),
    sorted last.  With ``by=None``,
    one row for the whole frame.

    Examples
    --------
    >>> f = pd.DataFrame({"agent": ["a", None, None], "value": [1.0, 0.0, None],
    ...                   "cause": [None, None, "abstained"]})
    >>> t = summarize_frame(f, "agent")
    >>> t["agent"].isna().tolist(), t["n"].tolist(), t["mean"].tolist()
    ([False, True], [1, 2], [1.0, 0.0])
    """
    if by is None:
        s = score_summary(frame.assign(_all=0), "_all", value=value, cause=cause)
        whole = s.groups.get((0,), MeanSummary(n=0, n_valued=0, total=0.0, total_sq=0.0,
                                                excluded={c: 0 for c in CAUSES}))
        return pd.DataFrame([whole.to_dict()])
    return score_summary(frame, by, value=value, cause=cause).to_frame()


# =========================================================================== two-rater tables


def _stat_two(kind: str, q: int, weights: Any, categories: tuple[Any, ...]) -> Callable[[np.ndarray], np.ndarray]:
    from ._agreement import _pair_table_batch, weight_matrix

    w = weight_matrix(categories, weights)
    kinds = {"cohen_kappa": "cohen", "scott_pi": "scott", "pabak": "pabak", "percent_agreement": "pa"}
    return _pair_table_batch(kinds[kind], w, q)


def _table_bootstrap(stat: Callable[[np.ndarray], np.ndarray], counts: np.ndarray,
                     patterns: tuple[np.ndarray, np.ndarray] | None, *, method: str, unit: str,
                     n_resamples: int, confidence_level: float, rng: Any, undefined: str
                     ) -> BootstrapResult:
    """Bootstrap a table statistic from counts alone (item) or from cluster patterns (cluster).

    The one engine (:func:`evaltk.stats.bootstrap_sums`): cells (or unit patterns) are
    the rows for ``unit="item"``, distinct cluster patterns for ``unit="cluster"``.
    """
    check_choice("unit", unit, ("item", "cluster"))
    cfg = _config(method, n_resamples=n_resamples, confidence_level=confidence_level, unit=unit,
                  rng=rng, undefined=undefined)
    c = counts.astype(float)
    if unit == "item":
        return _run_sums(stat, [(None, c)], None, c, cfg)
    if patterns is None:
        raise ValueError("`unit='cluster'` needs the per-cluster patterns (build the table with `clusters=`).")
    P, mult = (np.asarray(x, dtype=float) for x in patterns)
    return _run_sums(stat, [(P, mult)], P, mult, cfg)


def _patterns_array(patterns: Mapping[tuple[int, ...], int], width: int) -> tuple[np.ndarray, np.ndarray]:
    keys = sorted(patterns)
    P = np.array(keys, dtype=np.int64).reshape(len(keys), width)
    return P, np.array([patterns[k] for k in keys], dtype=np.int64)


def _reindex_patterns(patterns: Mapping[tuple[int, ...], int], old: tuple[Any, ...], new: tuple[Any, ...],
                      square: bool) -> dict[tuple[int, ...], int]:
    if old == new:
        return dict(patterns)
    pos = np.array([new.index(c) for c in old], dtype=np.intp)
    q, Q = len(old), len(new)
    out: dict[tuple[int, ...], int] = {}
    for k, m in patterns.items():
        a = np.asarray(k, dtype=np.int64)
        if square:
            full = np.zeros((Q, Q), np.int64)
            full[np.ix_(pos, pos)] = a.reshape(q, q)
        else:
            full = np.zeros(Q, np.int64)  # type: ignore[assignment]  # numpy stubs: shape-typed arrays
            full[pos] = a
        key = tuple(int(x) for x in full.reshape(-1))
        out[key] = out.get(key, 0) + m
    return out


@dataclass(frozen=True, eq=False)
class ConfusionTable(HtmlTable):
    """Counts of two raters' labels on the same units, with what each side left out.

    The summary behind judge-vs-human calibration and every two-rater coefficient.

    Attributes
    ----------
    categories : tuple
        The category domain, in order (rows: rater ``a``; columns: rater ``b``).
    counts : ndarray of int64, shape (q, q)
        Units both raters labelled, by (label a, label b).
    n_units : int
        Every unit, pairable or not.
    excluded_a, excluded_b : mapping of str to int
        Units where rater ``a`` (``b``) gave no label, per cause (every cause present).
        A unit both sides left out counts on both sides.
    patterns : mapping of tuple to int or None
        Per-cluster count vectors (flattened ``q * q``) and how many clusters share
        each; set when the table was built with ``clusters=``; enables ``unit="cluster"``.

    Examples
    --------
    >>> t = confusion_table(["y", "n", "y", None], ["y", "n", "n", "y"], cause_a=[None, None, None, "abstained"])
    >>> round(t.statistic("cohen_kappa"), 4), t.n_pairable, t.excluded_a["abstained"]
    (0.4, 3, 1)
    """

    categories: tuple[Any, ...]
    counts: np.ndarray
    n_units: int
    excluded_a: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0))
    excluded_b: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0))
    patterns: Mapping[tuple[int, ...], int] | None = None

    def __post_init__(self) -> None:
        q = len(self.categories)
        c = np.asarray(self.counts, dtype=np.int64).reshape(q, q)
        object.__setattr__(self, "counts", c)
        for name in ("excluded_a", "excluded_b"):
            ex = getattr(self, name)
            extra = set(ex) - set(CAUSES)
            if extra:
                raise ValueError(f"`{name}` has unknown causes {sorted(extra)}.")
            object.__setattr__(self, name, {k: int(ex.get(k, 0)) for k in CAUSES})
        if self.n_pairable > self.n_units:
            raise ValueError(f"`counts` holds {self.n_pairable} units but `n_units` is {self.n_units}.")

    @property
    def n_pairable(self) -> int:
        return int(self.counts.sum())

    @property
    def coverage(self) -> float | Abstention:
        """Share of units both raters labelled."""
        if self.n_units == 0:
            return Abstention(Cause.MISSING_EVIDENCE, "no units")
        return self.n_pairable / self.n_units

    def combine(self, other: ConfusionTable) -> ConfusionTable:
        """Table of the union of two disjoint sets of units (categories are united, in order)."""
        cats = _sorted_union(self.categories, other.categories)
        a, b = self.reindex(cats), other.reindex(cats)
        pat = None
        if a.patterns is not None and b.patterns is not None:
            pat = dict(a.patterns)
            for k, m in b.patterns.items():
                pat[k] = pat.get(k, 0) + m
        elif a.patterns is not None or b.patterns is not None:
            if a.n_units and b.n_units:
                raise ValueError("cannot combine a table with cluster patterns and one without.")
            pat = dict(a.patterns or b.patterns or {})
        return ConfusionTable(cats, a.counts + b.counts, a.n_units + b.n_units,
                              {c: a.excluded_a[c] + b.excluded_a[c] for c in CAUSES},
                              {c: a.excluded_b[c] + b.excluded_b[c] for c in CAUSES}, pat)

    __add__ = combine

    def reindex(self, categories: Sequence[Any]) -> ConfusionTable:
        """The same table over a larger category domain (new categories have zero counts)."""
        cats = tuple(categories)
        if cats == self.categories:
            return self
        missing = [c for c in self.categories if c not in cats]
        if missing:
            raise ValueError(f"`categories` lacks observed categories {missing}.")
        pos = np.array([cats.index(c) for c in self.categories], dtype=np.intp)
        full = np.zeros((len(cats), len(cats)), np.int64)
        full[np.ix_(pos, pos)] = self.counts
        pat = None if self.patterns is None else _reindex_patterns(self.patterns, self.categories, cats, True)
        return ConfusionTable(cats, full, self.n_units, self.excluded_a, self.excluded_b, pat)

    def statistic(self, statistic: str = "cohen_kappa", *, weights: Any = None) -> float | Abstention:
        """A two-rater coefficient of the table (the batch functions of :mod:`evaltk.stats`).

        ``statistic`` is one of ``"cohen_kappa"``, ``"scott_pi"``, ``"pabak"``,
        ``"percent_agreement"``; ``weights`` as in :func:`evaltk.stats.cohen_kappa`.
        An abstention (with :class:`~evaltk.values.UndefinedWarning`) when undefined.
        """
        import warnings

        check_choice("statistic", statistic, _TWO_RATER_STATS)
        q = len(self.categories)
        if self.n_pairable == 0 or (q < 2 and statistic != "percent_agreement"):
            reason = "no unit has two answered ratings" if self.n_pairable == 0 else "a single category"
            warnings.warn(f"{statistic} undefined: {reason}", UndefinedWarning, stacklevel=2)
            return Abstention(Cause.MISSING_EVIDENCE, reason)
        with np.errstate(divide="ignore", invalid="ignore"):
            v = float(_stat_two(statistic, q, weights, self.categories)(self.counts.reshape(1, -1).astype(float))[0])
        if not math.isfinite(v):
            warnings.warn(f"{statistic} undefined: expected agreement is 1", UndefinedWarning, stacklevel=2)
            return Abstention(Cause.MISSING_EVIDENCE, "expected (chance) agreement is 1")
        return v

    def bootstrap(self, statistic: str = "cohen_kappa", *, weights: Any = None, method: str = "percentile",
                  unit: str = "item", n_resamples: int = 2000, confidence_level: float = 0.95,
                  rng: Any = None, undefined: str = "drop") -> BootstrapResult:
        """Bootstrap interval of a coefficient, every replicate drawn from the combined table.

        ``unit="item"`` resamples units (cells: ``Multinomial(n, p)``; identical, for
        the same ``rng``, to :func:`evaltk.stats.bootstrap_table` on the rows);
        ``unit="cluster"`` resamples clusters (needs a table built with ``clusters=``).
        """
        check_choice("statistic", statistic, _TWO_RATER_STATS)
        q = len(self.categories)
        if self.n_pairable == 0:
            return _undefined_result("no unit has two answered ratings",
                                     _config(method, n_resamples=n_resamples, confidence_level=confidence_level,
                                             unit=unit, rng=rng, undefined=undefined))
        pat = None if self.patterns is None else _patterns_array(self.patterns, q * q)
        return _table_bootstrap(_stat_two(statistic, q, weights, self.categories), self.counts.reshape(-1),
                                pat, method=method, unit=unit, n_resamples=n_resamples,
                                confidence_level=confidence_level, rng=rng, undefined=undefined)

    def to_frame(self) -> pd.DataFrame:
        """Tidy long table ``a, b, n`` (every cell, zeros included)."""
        q = len(self.categories)
        return pd.DataFrame({"a": np.repeat(np.array(self.categories, dtype=object), q),
                             "b": np.tile(np.array(self.categories, dtype=object), q),
                             "n": self.counts.reshape(-1)})


def _causes_of(missing: np.ndarray, causes: Any, name: str) -> np.ndarray:
    """Per-unit cause (object array, None where labelled); a missing label without a cause is
    ``missing_evidence``.  Vectorised."""
    n = missing.shape[0]
    if causes is None:
        out = np.full(n, None, dtype=object)
    else:
        cs = pd.Series(causes if isinstance(causes, np.ndarray | pd.Series) else list(causes), dtype=object)
        if len(cs) != n:
            raise ValueError(f"`{name}` must have one entry per unit ({n}); got {len(cs)}.")
        has = cs.notna().to_numpy()
        ok = cs.isin(CAUSES).to_numpy()
        if (has & ~ok).any():
            bad = sorted(map(str, set(cs[has & ~ok])))
            raise ValueError(f"`{name}` has unknown causes {bad}; allowed: {', '.join(CAUSES)}.")
        both = ~missing & has
        if both.any():
            raise ValueError(f"`{name}`: unit {int(np.flatnonzero(both)[0])} has both a label and a cause.")
        out = np.where(has, cs.to_numpy(dtype=object), None)  # type: ignore[call-overload]  # numpy stubs: None as a value
    out[missing & pd.isna(out)] = Cause.MISSING_EVIDENCE.value
    return out


def _labels(x: Any) -> tuple[np.ndarray, np.ndarray]:
    """(values, missing mask): a float array when the labels are numeric, else an object array."""
    if isinstance(x, pd.Series):
        x = x.to_numpy()
    arr = np.asarray(x) if isinstance(x, np.ndarray) else np.asarray(pd.Series(list(x), dtype=object))
    if arr.dtype.kind in "fiub":
        arr = arr.astype(float)
        return arr, np.isnan(arr)
    arr = arr.astype(object)
    return arr, pd.isna(arr)


def _cells(xa: np.ndarray, xb: np.ndarray, categories: Sequence[Any] | None) -> tuple[tuple[Any, ...], np.ndarray]:
    """The category domain and each pair's cell ``q * i_a + i_b`` (labels of both raters, one pair per unit)."""
    if categories is None:
        obs = pd.unique(np.concatenate([xa, xb]).astype(object) if xa.dtype != xb.dtype
                        else np.concatenate([xa, xb]))
        cats = _sorted_union([_plain(x) for x in obs], [])
    else:
        cats = tuple(categories)
    numeric = (xa.dtype.kind == "f" and xb.dtype.kind == "f"
               and all(isinstance(c, int | float | np.number) and not isinstance(c, bool | np.bool_) for c in cats))
    index = pd.Index(np.asarray(cats, float)) if numeric else pd.Index(list(cats), dtype=object)
    ia = index.get_indexer(xa if numeric else pd.Index(xa.astype(object))) if xa.size else np.zeros(0, np.intp)
    ib = index.get_indexer(xb if numeric else pd.Index(xb.astype(object))) if xb.size else np.zeros(0, np.intp)
    if (ia < 0).any() or (ib < 0).any():
        bad = xa[ia < 0][0] if (ia < 0).any() else xb[ib < 0][0]
        raise ValueError(f"label {_plain(bad)!r} is not among `categories` {list(cats)}.")
    return cats, ia.astype(np.int64) * len(cats) + ib


def confusion_table(a: Any, b: Any, *, cause_a: Any = None, cause_b: Any = None,
                    categories: Sequence[Any] | None = None, clusters: Any = None) -> ConfusionTable:
    """The :class:`ConfusionTable` of two raters' labels, one entry per unit.

    Parameters
    ----------
    a, b : array-like
        Labels of rater ``a`` (e.g. the judge) and rater ``b`` (e.g. the human);
        None/NaN where the rater gave none.
    cause_a, cause_b : array-like, optional
        Why a label is missing (one of the four causes), None where labelled.  A
        missing label without a cause counts as ``missing_evidence``.
    categories : sequence, optional
        The declared domain in order (default: the observed labels, sorted).
    clusters : array-like, optional
        A cluster label per unit (e.g. the item of each judge-human pair); enables
        the cluster bootstrap.  Clusters must not span pieces that are combined.

    Returns
    -------
    ConfusionTable
    """
    av, ma = _labels(a)
    bv, mb = _labels(b)
    if av.shape != bv.shape:
        raise ValueError(f"`a` and `b` must have one label per unit; got {av.shape[0]} and {bv.shape[0]}.")
    ca = _causes_of(ma, cause_a, "cause_a")
    cb = _causes_of(mb, cause_b, "cause_b")
    both = ~ma & ~mb
    cats, cells = _cells(av[both], bv[both], categories)
    q = len(cats)
    counts = np.bincount(cells, minlength=q * q).reshape(q, q)
    ex_a = pd.Series(ca[~pd.isna(ca)], dtype=object).value_counts()
    ex_b = pd.Series(cb[~pd.isna(cb)], dtype=object).value_counts()
    pat = None
    if clusters is not None:
        cl = pd.Series(clusters if isinstance(clusters, np.ndarray | pd.Series) else list(clusters), dtype=object)
        if len(cl) != av.shape[0]:
            raise ValueError(f"`clusters` must have one label per unit ({av.shape[0]}); got {len(cl)}.")
        codes, _ = pd.factorize(cl[both].reset_index(drop=True))
        m = int(codes.max()) + 1 if codes.size else 0
        M = np.bincount(codes * q * q + cells, minlength=m * q * q).reshape(m, q * q)
        rows, mult = np.unique(M, axis=0, return_counts=True) if m else (M, np.zeros(0, np.int64))
        pat = {tuple(int(x) for x in r): int(k) for r, k in zip(rows, mult, strict=True)}
    return ConfusionTable(cats, counts, int(av.shape[0]),
                          {c: int(ex_a.get(c, 0)) for c in CAUSES}, {c: int(ex_b.get(c, 0)) for c in CAUSES},
                          pat)


def calibration_table(frame: pd.DataFrame, measure: str, *, a: str = "automatic", b: str = "human",
                      categories: Sequence[Any] | None = None) -> ConfusionTable:
    """Judge-vs-human table of one measure from a long score table (``ScoreMatrix.frame``).

    Units are the traces scored in tier ``b`` (the humans); each side's value is the
    folded score of that tier (abstentions counted per cause).  Traces are the
    resampling unit, and they never span partitions, so the tables of partitions add.

    Examples
    --------
    >>> f = pd.DataFrame({"trace_id": ["t1", "t1", "t2", "t2"], "measure": "x_task",
    ...                   "tier": ["automatic", "human"] * 2, "value": [1.0, 1.0, 0.0, None],
    ...                   "cause": [None, None, None, "not_implemented"]})
    >>> t = calibration_table(f, "x_task")
    >>> t.n_units, t.n_pairable, t.excluded_b["not_implemented"]
    (2, 1, 1)
    """
    is_m = (frame["measure"] == measure).to_numpy(dtype=bool, na_value=False)
    tier = frame["tier"]
    sa = np.flatnonzero(is_m & (tier == a).to_numpy(dtype=bool, na_value=False))
    sb = np.flatnonzero(is_m & (tier == b).to_numpy(dtype=bool, na_value=False))
    tid = frame["trace_id"]
    if isinstance(tid.dtype, pd.CategoricalDtype):
        ka = tid.cat.codes.to_numpy()[sa]
        kb = tid.cat.codes.to_numpy()[sb]
    else:
        codes, _ = pd.factorize(pd.concat([tid.iloc[sa], tid.iloc[sb]], ignore_index=True).astype(str))
        ka, kb = codes[:sa.size], codes[sa.size:]
    width = int(max(ka.max(initial=-1), kb.max(initial=-1))) + 1
    pos = np.full(width, -1, np.int64)
    pos[ka] = np.arange(sa.size)
    j = pos[kb] if kb.size else np.zeros(0, np.int64)
    vals = frame["value"].to_numpy(float)
    codes = _cause_codes(frame["cause"])
    va = np.where(j >= 0, vals[sa][np.maximum(j, 0)] if sa.size else np.nan, np.nan)
    ka = np.where(j >= 0, codes[sa][np.maximum(j, 0)] if sa.size else -1, _MISSING_EVIDENCE)  # no judge row
    vb, kb = vals[sb], codes[sb]
    for v, k, rows, name in ((va, ka, sa, "cause_a"), (vb, kb, sb, "cause_b")):
        unknown = rows[codes[rows] == -2]
        if unknown.size:
            raise ValueError(f"`{name}` has unknown causes {sorted(map(str, set(frame['cause'].iloc[unknown])))}; "
                             f"allowed: {', '.join(CAUSES)}.")
        labelled = ~np.isnan(v)
        if (labelled & (k >= 0)).any():
            raise ValueError(f"`{name}`: unit {int(np.flatnonzero(labelled & (k >= 0))[0])} has both a label "
                             "and a cause.")
        k[~labelled & (k < 0)] = _MISSING_EVIDENCE  # a missing score without a cause: no evidence
    both = ~np.isnan(va) & ~np.isnan(vb)
    cats, cells = _cells(va[both], vb[both], categories)
    q = len(cats)
    ex_a = np.bincount(ka[ka >= 0], minlength=len(CAUSES))
    ex_b = np.bincount(kb[kb >= 0], minlength=len(CAUSES))
    return ConfusionTable(cats, np.bincount(cells, minlength=q * q).reshape(q, q), int(sb.size),
                          {c: int(ex_a[i]) for i, c in enumerate(CAUSES)},
                          {c: int(ex_b[i]) for i, c in enumerate(CAUSES)})


# =========================================================================== multi-rater patterns


def _fake_patterns(C: np.ndarray) -> Any:
    from ._agreement import _Patterns

    C = C.astype(float)
    return _Patterns(C=C, r=C.sum(axis=1), type_index=np.zeros(0, np.intp), counts=np.zeros(C.shape[0]),
                     unit_codes=np.zeros((0, 0), np.intp))


def _stat_multi(kind: str, C: np.ndarray, categories: tuple[Any, ...]) -> Callable[[np.ndarray], np.ndarray]:
    from ._agreement import _kripp_batch, _multi_batch

    pat = _fake_patterns(C)
    q = len(categories)
    if kind == "krippendorff_alpha":
        return _kripp_batch(pat, "nominal", categories)
    kinds = {"fleiss_kappa": "fleiss", "gwet_ac1": "gwet", "brennan_prediger": "bp", "percent_agreement": "pa"}
    return _multi_batch(kinds[kind], pat, np.eye(q), q)


@dataclass(frozen=True, eq=False)
class UnitPatterns:
    """Multi-rater summary: each distinct per-unit vector of category counts, with how many units share it.

    Every nominal multi-rater coefficient (Fleiss, Gwet's AC1, Brennan-Prediger,
    percent agreement, Krippendorff's alpha) is a function of these counts, and so
    is the coincidence table (:meth:`coincidence`).  Units with at least one answered
    rating are kept; abstained ratings and units without any rating are counted.

    Attributes
    ----------
    categories : tuple
    patterns : mapping of tuple of int to int
        Category-count vector of a unit -> number of units with it.
    n_abstained : int
        Ratings that abstained (excluded like missing ratings, counted).
    n_unrated : int
        Units with no answered rating.

    Examples
    --------
    >>> up = unit_patterns([["a", "a"], ["a", "b"], ["b", "b"]])
    >>> round(up.statistic("fleiss_kappa"), 4), up.n_units
    (0.3333, 3)
    """

    categories: tuple[Any, ...]
    patterns: Mapping[tuple[int, ...], int]
    n_abstained: int = 0
    n_unrated: int = 0

    @property
    def n_units(self) -> int:
        return int(sum(self.patterns.values()))

    def combine(self, other: UnitPatterns) -> UnitPatterns:
        cats = _sorted_union(self.categories, other.categories)
        a = _reindex_patterns(self.patterns, self.categories, cats, False)
        for k, m in _reindex_patterns(other.patterns, other.categories, cats, False).items():
            a[k] = a.get(k, 0) + m
        return UnitPatterns(cats, a, self.n_abstained + other.n_abstained, self.n_unrated + other.n_unrated)

    __add__ = combine

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return _patterns_array(self.patterns, len(self.categories))

    def coincidence(self) -> np.ndarray:
        """Krippendorff's coincidence table ``o_ck = sum_u n_uc (n_uk - [c = k]) / (m_u - 1)`` over units
        with two or more ratings (Krippendorff 2011)."""
        C, mult = self._arrays()
        r = C.sum(axis=1)
        two = r >= 2
        C2, m2, r2 = C[two].astype(float), mult[two].astype(float), r[two].astype(float)
        outer = C2[:, :, None] * C2[:, None, :] - np.einsum("uk,kl->ukl", C2, np.eye(C.shape[1]))
        return np.einsum("u,ukl->kl", m2 / (r2 - 1.0), outer)

    def statistic(self, statistic: str = "krippendorff_alpha") -> float | Abstention:
        """A nominal multi-rater coefficient (the batch functions of :mod:`evaltk.stats`)."""
        import warnings

        check_choice("statistic", statistic, _MULTI_STATS)
        if not self.patterns:
            warnings.warn(f"{statistic} undefined: no rated unit", UndefinedWarning, stacklevel=2)
            return Abstention(Cause.MISSING_EVIDENCE, "no rated unit")
        C, mult = self._arrays()
        with np.errstate(divide="ignore", invalid="ignore"):
            v = float(_stat_multi(statistic, C, self.categories)(mult.astype(float)[None, :])[0])
        if not math.isfinite(v):
            warnings.warn(f"{statistic} undefined on this table", UndefinedWarning, stacklevel=2)
            return Abstention(Cause.MISSING_EVIDENCE, "undefined (no pairable unit, or chance agreement 1)")
        return v

    def bootstrap(self, statistic: str = "krippendorff_alpha", *, method: str = "percentile",
                  n_resamples: int = 2000, confidence_level: float = 0.95, rng: Any = None,
                  undefined: str = "drop") -> BootstrapResult:
        """Unit bootstrap of a coefficient: replicates are multinomial draws over the patterns."""
        check_choice("statistic", statistic, _MULTI_STATS)
        if not self.patterns:
            return _undefined_result("no rated unit",
                                     _config(method, n_resamples=n_resamples, confidence_level=confidence_level,
                                             unit="item", rng=rng, undefined=undefined))
        C, mult = self._arrays()
        return _table_bootstrap(_stat_multi(statistic, C, self.categories), mult, None, method=method,
                                unit="item", n_resamples=n_resamples, confidence_level=confidence_level,
                                rng=rng, undefined=undefined)


def unit_patterns(ratings: Any, *, categories: Sequence[Any] | None = None,
                  abstain: Iterable[Any] = ABSTAIN_WORDS) -> UnitPatterns:
    """The :class:`UnitPatterns` of a units x raters array or DataFrame (None/NaN missing).

    Labels are read by the agreement functions' adapter (one rule for every door: blank
    text and ``"nan"`` are missing, ``inf`` is refused, a label outside ``categories``
    raises :class:`~evaltk.errors.InputError` naming the unit and the rater).  Labels in
    ``abstain`` (default :data:`evaltk.values.ABSTAIN_WORDS`; ``abstain=()`` for none; a
    label declared in ``categories`` never abstains) are excluded like missing ratings and
    counted in ``n_abstained``.  Undeclared categories are sorted by type, then value (so
    pieces of mixed types merge alike).
    """
    from ._ratings import _encode_uniques, _to_labels

    fn = "unit_patterns"
    lab = _to_labels(ratings if isinstance(ratings, pd.DataFrame | np.ndarray) else _as_rows(ratings),
                     None, None, "", "", "", fn)
    rt = _encode_uniques(lab.uniques, lab.shape, categories=None if categories is None else list(categories),
                         abstain=(abstain,) if isinstance(abstain, str | bytes) else abstain, fn=fn,
                         names=lab.names, where=lab.where)
    codes, cats = rt.codes, rt.categories
    if categories is None and cats:
        order = sorted(range(len(cats)), key=lambda i: (str(type(_plain(cats[i]))), _plain(cats[i])))
        rank = np.empty(len(cats) + 2, dtype=np.int64)
        rank[np.asarray(order, dtype=np.intp)] = np.arange(len(cats))
        rank[-2:] = (-2, -1)                      # abstained, missing stay what they are
        codes = np.take(rank, codes)
        cats = tuple(_plain(cats[i]) for i in order)
    n, q = codes.shape[0], len(cats)
    valid = codes >= 0
    rows = np.broadcast_to(np.arange(n)[:, None], codes.shape)[valid]
    C = np.bincount(rows * q + codes[valid], minlength=n * q).reshape(n, q)
    rated = C.sum(axis=1) > 0
    pats: dict[tuple[int, ...], int] = {}
    if rated.any():
        uniq, mult = np.unique(C[rated], axis=0, return_counts=True)
        pats = {tuple(int(x) for x in r): int(m) for r, m in zip(uniq, mult, strict=True)}
    return UnitPatterns(cats, pats, rt.n_abstained, int((~rated).sum()))


def _as_rows(ratings: Any) -> np.ndarray:
    """Rows of labels (a list of lists) as a 2-D object array, each cell's Python type kept."""
    rows = list(ratings)
    width = max((len(r) for r in rows), default=0)
    out = np.full((len(rows), width), None, dtype=object)
    for i, r in enumerate(rows):
        out[i, :len(r)] = list(r)
    return out


# =========================================================================== pass counts


@dataclass(frozen=True)
class PassCounts:
    """Trials and passes per task: the summary behind pass@k and pass^k.

    Attributes
    ----------
    counts : mapping of task to (n, c, n_abstained)
        Trials with a pass/fail outcome, trials that passed, and trials whose outcome
        abstained (excluded from ``n`` and counted).  Trials of one task may sit in
        several pieces: their counts add.

    Examples
    --------
    >>> p = pass_counts(["a", "a", "b"], [1.0, 0.0, 1.0]) + pass_counts(["b"], [float("nan")])
    >>> p.counts["b"], p.pass_at_k(1)
    ((1, 1, 1), 0.75)
    """

    counts: Mapping[Any, tuple[int, int, int]] = field(default_factory=dict)

    def combine(self, other: PassCounts) -> PassCounts:
        out = dict(self.counts)
        for t, (n, c, a) in other.counts.items():
            n0, c0, a0 = out.get(t, (0, 0, 0))
            out[t] = (n0 + n, c0 + c, a0 + a)
        return PassCounts(out)

    __add__ = combine

    def per_task(self, k: int) -> pd.DataFrame:
        """``task, n, c, n_abstained, pass_at_k, pass_hat_k`` (NaN where ``n < k``), sorted by task."""

        rows = []
        for t in sorted(self.counts, key=str):
            n, c, a = self.counts[t]
            ok = n >= k
            rows.append({"task": t, "n": n, "c": c, "n_abstained": a,
                         "pass_at_k": pass_at_k(n, c, k) if ok else math.nan,
                         "pass_hat_k": pass_hat_k(n, c, k) if ok else math.nan})
        return pd.DataFrame(rows, columns=["task", "n", "c", "n_abstained", "pass_at_k", "pass_hat_k"])

    def _mean(self, col: str, k: int) -> float | Abstention:
        import warnings

        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"`k` must be a positive int; got {k!r}.")
        f = self.per_task(int(k))
        v = f[col].to_numpy(float)
        v = v[~np.isnan(v)]
        if v.size == 0:
            warnings.warn(f"{col} undefined: no task has {k} decided trials", UndefinedWarning, stacklevel=3)
            return Abstention(Cause.MISSING_EVIDENCE, f"no task has {k} decided trials")
        return math.fsum(v) / v.size

    def pass_at_k(self, k: int) -> float | Abstention:
        """Mean over tasks with at least ``k`` decided trials of unbiased pass@k (Chen et al. 2021)."""
        return self._mean("pass_at_k", k)

    def pass_hat_k(self, k: int) -> float | Abstention:
        """Mean over tasks with at least ``k`` decided trials of pass^k (Yao et al. 2024)."""
        return self._mean("pass_hat_k", k)

    def n_tasks_short(self, k: int) -> int:
        """Tasks left out of pass@k / pass^k because fewer than ``k`` trials were decided."""
        return sum(1 for n, _, _ in self.counts.values() if n < k)


def pass_counts(tasks: Any, passed: Any, *, threshold: float = 1.0) -> PassCounts:
    """The :class:`PassCounts` of trials: one task label and one outcome per trial.

    ``passed`` holds booleans or scores in [0, 1] (a trial passes when its score is
    at least ``threshold``); None/NaN is an abstained outcome, counted, never a fail.
    """
    t = pd.Series(list(tasks), dtype=object)
    p = pd.Series(list(passed), dtype=object)
    if len(t) != len(p):
        raise ValueError(f"`tasks` and `passed` must have one entry per trial; got {len(t)} and {len(p)}.")
    if t.isna().any():
        raise ValueError(f"`tasks` has a missing label at trial {int(np.flatnonzero(t.isna().to_numpy())[0])}.")
    ab = p.isna().to_numpy()
    vals = pd.to_numeric(p.where(~p.isna(), np.nan).astype(float), errors="raise").to_numpy(float)
    ok = np.where(ab, False, vals >= threshold)
    codes, labels = pd.factorize(t, sort=False)  # tasks in order of first appearance
    m = len(labels)
    n = np.bincount(codes[~ab], minlength=m)
    c = np.bincount(codes[ok], minlength=m)
    a = np.bincount(codes[ab], minlength=m)
    return PassCounts({k: (int(n[i]), int(c[i]), int(a[i])) for i, k in enumerate(labels)})
