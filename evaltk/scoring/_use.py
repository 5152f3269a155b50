"""What a provisional score supports (seed 002): checked uses, comparisons, rankings."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_confidence_level
from ..stats import LevelEstimate, z_value
from ..values import (
    Abstention,
    Cause,
    MeanSummary,
    summarize,
)
from ._instrument import instrument_differences, unpinned_sides
from ._matrix import ScoreMatrix

# --------------------------------------------------------------------------- supported uses

#: Seed 002, "What a provisional score supports": use -> supported on a provisional measure.
USES: dict[str, tuple[bool, str]] = {
    "compare_agents": (True, "same scorer version and population: systematic error is shared and largely "
                              "cancels in the difference"),
    "regression": (True, "same agent over time, same scorer: the direction of error is stable"),
    "gate_fail_closed": (True, "a gate needs a decision, not an unbiased estimate; erring toward failure is "
                               "the cheap error"),
    "absolute_level": (False, "an absolute level ('ninety percent safe') requires a known error rate; a "
                              "provisional measure has none"),
    "compare_populations": (False, "the bias is population-dependent, so the difference mixes agent quality "
                                   "with capture quality"),
    "compare_versions": (False, "a rubric edit is a new instrument; the two numbers are not on one scale"),
    "rank_overlapping": (False, "the ordering is not supported when intervals overlap, whatever the point "
                                "estimates say"),
}


class UnsupportedUse(ValueError):
    """A comparison or claim the evidence does not support (seed 002)."""


def check_use(use: str, a: ScoreMatrix, b: ScoreMatrix | None = None, *, measure: str,
              level: LevelEstimate | None = None) -> str:
    """Return why ``use`` is supported for ``measure``, or raise :class:`UnsupportedUse` saying why not.

    Two matrices compare only on one instrument (:class:`evaltk.scoring.Instrument`: the
    scorer and its version, the fold rule, and every judge's model, rubric, template and
    decoding): a comparison whose instruments differ is refused, naming each field that
    differs (:func:`evaltk.scoring.instrument_differences`).  When either side is
    unpinned the use is returned with that said: the shared instrument is not established.

    ``"absolute_level"`` (seed 002: where you are) is supported only through ``level``, a
    prediction-powered estimate (:func:`evaltk.absolute_level` builds and checks it) on
    the measure's own instrument, pinned, from human labels that the manifest's
    calibration record names as held out: every labelled run among its evaluation items
    and none among its tuning items.
    """
    if use not in USES:
        raise ValueError(f"`use` must be one of {', '.join(USES)}; got {use!r}.")
    st = a.manifest.status(measure)
    ok, why = USES[use]
    if use == "absolute_level":
        return _absolute_level(a, measure, level, why)
    if not ok:
        raise UnsupportedUse(f"{use} refused for {measure}: {why}.")
    if b is not None:
        sb = b.manifest.status(measure)
        ia, ib = a.manifest.instrument(measure), b.manifest.instrument(measure)
        diffs = instrument_differences(ia, ib)
        if diffs:
            raise UnsupportedUse(
                f"{measure}: the instruments differ: "
                + "; ".join(d.describe("first", "second").split(": ", 1)[1] for d in diffs)
                + f"; {USES['compare_versions'][1]}.")
        for side, stt in (("first", st), ("second", sb)):
            if stt.lifecycle == "superseded":
                raise UnsupportedUse(f"{measure}: the {side} matrix uses a superseded definition; "
                                     "it is retained for traceability, not for new comparisons.")
        if a.manifest.population != b.manifest.population:
            raise UnsupportedUse(
                f"{measure}: populations differ ({a.manifest.population} vs {b.manifest.population}); "
                f"{USES['compare_populations'][1]}.")
        unpinned = unpinned_sides(ia, ib, ("first matrix", "second matrix"))
        if unpinned:
            return (f"{why} (instrument unpinned, so that both sides share one instrument is not "
                    f"established: {'; '.join(unpinned)})")
    return why


#: Seed 002, "Comparing across populations, apps, or trajectory lengths: No": the default
#: trajectory-length strata of :func:`compare_measure`, as the lower edge (a step count) of
#: each: 0-1, 2-4, 5-9, 10-19, 20-49 and 50 or more steps.  Two runs compare only within one.
LENGTH_STRATA: tuple[int, ...] = (0, 2, 5, 10, 20, 50)


def _check_strata(edges: Sequence[int]) -> tuple[int, ...]:
    e = tuple(edges) if not isinstance(edges, str) else ()
    ok = (len(e) >= 1 and all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in e)
          and e[0] == 0 and all(x < y for x, y in zip(e, e[1:], strict=False)))
    if not ok:
        raise ValueError("`length_strata` must be increasing step counts starting at 0 (the lower edge of "
                         f"each stratum, e.g. {LENGTH_STRATA}); got {edges!r}.")
    return tuple(int(x) for x in e)


def _stratum_labels(edges: tuple[int, ...]) -> list[str]:
    hi = [*(f"{y - 1}" for y in edges[1:]), ""]
    return [f"{lo}-{h}" if h and int(h) != lo else (f"{lo}" if h else f"{lo}+") for lo, h in zip(edges, hi,
                                                                                                 strict=True)]


def _stratum_of(m: ScoreMatrix, side: str, edges: tuple[int, ...]) -> pd.Series:
    """Each trace's length stratum (its index in ``edges``), from the runs' canonical ``n_steps``."""
    if "n_steps" not in m.runs.columns:
        raise UnsupportedUse(f"the {side} matrix's runs carry no `n_steps`: trajectory lengths are unknown, "
                             f"so the comparison cannot be kept within length strata; {_LENGTHS}.")
    n = pd.to_numeric(m.runs["n_steps"], errors="coerce").to_numpy(float)
    if np.isnan(n).any():
        raise UnsupportedUse(f"the {side} matrix has runs without a step count; {_LENGTHS}.")
    return pd.Series(np.searchsorted(np.asarray(edges), n, side="right") - 1,
                     index=m.runs["trace_id"].astype(str).to_numpy())


_LENGTHS = ("comparing across trajectory lengths is not supported: the bias is length-dependent (x_ctx dilutes "
            "as trajectories lengthen), so the difference mixes agent quality with capture")


def _absolute_level(a: ScoreMatrix, measure: str, level: LevelEstimate | None, why: str) -> str:
    st = a.manifest.status(measure)
    if st.evidence != "calibrated":
        raise UnsupportedUse(f"absolute level of {measure} refused: {st.label}; {why}.")
    ins = a.manifest.instrument(measure)
    if not ins.pinned:
        raise UnsupportedUse(f"absolute level of {measure} refused: its instrument is unpinned "
                             f"({'; '.join(ins.unpinned_reasons)}), so no level belongs to one instrument.")
    if level is None:
        raise UnsupportedUse(f"absolute level of {measure}: a level is given only by a prediction-powered "
                             "estimate on held-out human labels (`evaltk.absolute_level(matrix, measure, labels)`), "
                             "never by the scores' own mean.")
    if not isinstance(level, LevelEstimate):
        raise TypeError(f"`level` must be a LevelEstimate; got {type(level).__name__}.")
    if level.instrument != ins.digest:
        raise UnsupportedUse(f"absolute level of {measure} refused: the estimate was made on instrument "
                             f"{level.instrument or 'unrecorded'}, the matrix measures with {ins.digest}; "
                             f"{USES['compare_versions'][1]}.")
    rec = st.calibration
    items = level.label_items
    if items is None or rec is None or rec.evaluation_items is None or rec.tuning_items is None:
        raise UnsupportedUse(f"absolute level of {measure} refused: the labelled runs, or the record's "
                             "evaluation and tuning items, are not declared, so held-out is not established.")
    held, tuned = set(rec.evaluation_items), set(rec.tuning_items)
    outside = [i for i in items if i not in held]
    leaked = [i for i in items if i in tuned]
    if leaked:
        raise UnsupportedUse(f"absolute level of {measure} refused: {len(leaked)} labelled run(s) shaped the "
                             f"scorer (first {leaked[0]!r} is among the record's tuning items); a level needs "
                             "labels held out from whatever tuned it.")
    if outside:
        raise UnsupportedUse(f"absolute level of {measure} refused: {len(outside)} labelled run(s) are not among "
                             f"the held-out evaluation items of {rec.label_set!r} (first {outside[0]!r}).")
    return (f"{measure} is calibrated on {rec.label_set}; the level is a {level.method} estimate from "
            f"{level.n_labeled} held-out labels and the judge on {level.n_labeled + level.n_unlabeled} runs, "
            "with its interval")


@dataclass(frozen=True)
class Comparison:
    """The difference ``b - a`` on one measure, overall and per trajectory-length stratum.

    ``difference`` (and ``confidence_interval``) is a number only when every run of both
    sides falls in one length stratum; otherwise it is a ``not_applicable`` abstention and
    the per-stratum differences are in ``strata`` (one row per stratum either side has
    runs in: ``stratum, min_steps, n_a, n_valued_a, n_b, n_valued_b, mean_a, mean_b,
    difference, difference_cause, ci_low, ci_high``).  A stratum only one side has runs in
    is never compared (its difference abstains with ``missing_evidence``).
    """

    measure: str
    use: str
    mean_a: float | Abstention
    mean_b: float | Abstention
    difference: float | Abstention
    confidence_interval: tuple[float, float] | Abstention | None
    summary_a: MeanSummary
    summary_b: MeanSummary
    supported_because: str
    strata: pd.DataFrame = field(default_factory=pd.DataFrame)
    length_strata: tuple[int, ...] = LENGTH_STRATA

    def to_frame(self) -> pd.DataFrame:
        ci = self.confidence_interval
        lo, hi = (None, None) if ci is None or isinstance(ci, Abstention) else ci
        d = self.difference
        return pd.DataFrame([{
            "measure": self.measure, "use": self.use,
            "mean_a": None if isinstance(self.mean_a, Abstention) else self.mean_a,
            "mean_b": None if isinstance(self.mean_b, Abstention) else self.mean_b,
            "difference": None if isinstance(d, Abstention) else d,
            "difference_cause": d.cause.value if isinstance(d, Abstention) else None,
            "ci_low": lo, "ci_high": hi,
            "n_a": self.summary_a.n, "n_valued_a": self.summary_a.n_valued,
            "n_b": self.summary_b.n, "n_valued_b": self.summary_b.n_valued,
            "coverage_a": self.summary_a.coverage, "coverage_b": self.summary_b.coverage,
            "n_strata": len(self.strata), "supported_because": self.supported_because}])


def _difference(sa: MeanSummary, sb: MeanSummary, z: float
                ) -> tuple[float | Abstention, tuple[float, float] | Abstention | None]:
    """``b - a`` of two summaries and its Welch normal interval (or the cause of its absence)."""
    ma, mb = sa.mean, sb.mean
    if isinstance(ma, Abstention) or isinstance(mb, Abstention):
        return Abstention(Cause.MISSING_EVIDENCE, "one side has no valued record"), None
    ea, eb = sa.std_error, sb.std_error
    if isinstance(ea, Abstention) or isinstance(eb, Abstention):
        return mb - ma, Abstention(Cause.MISSING_EVIDENCE, "fewer than two valued records on a side: no interval")
    se = math.hypot(ea, eb)
    return mb - ma, (mb - ma - z * se, mb - ma + z * se)


def compare_measure(a: ScoreMatrix, b: ScoreMatrix, measure: str, *, use: str = "compare_agents",
                    confidence_level: float = 0.95,
                    length_strata: Sequence[int] = LENGTH_STRATA) -> Comparison:
    """Difference of means ``b - a`` on one measure, refused where seed 002 refuses it.

    Allowed uses: ``compare_agents`` (same scorer version, same population) and
    ``regression`` (same scorer version).  The interval is Welch's normal
    approximation over valued records; abstentions are excluded and counted.

    Runs are compared only within one trajectory-length stratum (seed 002: "Comparing
    across populations, apps, or trajectory lengths: No"; x_ctx "dilutes" as runs
    lengthen).  ``length_strata`` declares them, as increasing lower edges in steps
    starting at 0 (default :data:`LENGTH_STRATA`).  The overall ``difference`` is a number
    only when all runs of both sides fall in one stratum; otherwise it abstains and
    ``Comparison.strata`` holds one difference per stratum both sides have runs in.

    Examples
    --------
    Both sides' runs are 2-4 steps long, so the difference is one number:

    >>> from evaltk.scoring import score_traces
    >>> def runs(word):
    ...     return [{"trace_id": f"{word}{i}", "task": f"task {i}", "status": "complete", "steps": [
    ...         {"index": j, "action": "tap", "target": "x", "screen": "s"} for j in range(3)]}
    ...         for i in range(3)]
    >>> a = score_traces(runs("a"), [{"trace_id": f"a{i}", "measure": "x_task", "rater": "j",
    ...                               "answer": "yes"} for i in range(3)])
    >>> b = score_traces(runs("b"), [{"trace_id": f"b{i}", "measure": "x_task", "rater": "j",
    ...                               "answer": "no" if i else "yes"} for i in range(3)])
    >>> c = compare_measure(a, b, "x_task")
    >>> round(c.difference, 3), c.strata["stratum"].tolist()
    (-0.667, ['2-4'])
    """
    if use not in ("compare_agents", "regression"):
        raise ValueError("`use` must be 'compare_agents' or 'regression'.")
    confidence_level = check_confidence_level(confidence_level)
    edges = _check_strata(length_strata)
    why = check_use(use, a, b, measure=measure)
    z = z_value(confidence_level)
    sa, sb = a.mean_summary(measure), b.mean_summary(measure)
    rows = []
    parts = {side: _per_stratum(m, measure, side, edges) for side, m in (("a", a), ("b", b))}
    labels = _stratum_labels(edges)
    for h in sorted(set(parts["a"]) | set(parts["b"])):
        pa, pb = parts["a"].get(h), parts["b"].get(h)
        if pa is None or pb is None:
            d: float | Abstention = Abstention(
                Cause.MISSING_EVIDENCE, f"only side {'a' if pb is None else 'b'} has runs of {labels[h]} steps; "
                                        f"{_LENGTHS}")
            ci: tuple[float, float] | Abstention | None = None
        else:
            d, ci = _difference(pa, pb, z)
        rows.append(_stratum_row(labels[h], edges[h], pa, pb, d, ci))
    strata = pd.DataFrame(rows, columns=["stratum", "min_steps", "n_a", "n_valued_a", "n_b", "n_valued_b",
                                         "mean_a", "mean_b", "difference", "difference_cause", "ci_low",
                                         "ci_high"])
    if len(rows) == 1 and parts["a"] and parts["b"]:
        d, ci = _difference(sa, sb, z)
    elif len(rows) <= 1:  # one side has no run at all
        d, ci = Abstention(Cause.MISSING_EVIDENCE, "one side has no valued record"), None
    else:
        d, ci = Abstention(Cause.NOT_APPLICABLE, f"the runs span {len(rows)} trajectory-length strata; "
                                                 f"{_LENGTHS}: read the per-stratum differences "
                                                 "(`Comparison.strata`)"), None
    return Comparison(measure, use, sa.mean, sb.mean, d, ci, sa, sb, why, strata, edges)


def _per_stratum(m: ScoreMatrix, measure: str, side: str, edges: tuple[int, ...]) -> dict[int, MeanSummary]:
    """The measure's summary per length stratum of one side (strata with no run left out)."""
    f = m.scores("automatic")
    f = f[f["measure"] == measure]
    if f.empty:
        return {}
    h = f["trace_id"].astype(str).map(_stratum_of(m, side, edges)).to_numpy(float)
    if np.isnan(h).any():
        raise UnsupportedUse(f"the {side} matrix scores traces its runs do not list: their lengths are unknown; "
                             f"{_LENGTHS}.")
    return {int(k): summarize(f["value"].to_numpy(float)[h == k], f["cause"].to_numpy(object)[h == k])
            for k in np.unique(h)}


def _stratum_row(label: str, lo: int, pa: MeanSummary | None, pb: MeanSummary | None, d: float | Abstention,
                 ci: tuple[float, float] | Abstention | None) -> tuple[Any, ...]:
    def mean(x: MeanSummary | None) -> float | None:
        return None if x is None or isinstance(x.mean, Abstention) else x.mean

    lo_hi = (None, None) if ci is None or isinstance(ci, Abstention) else ci
    return (label, lo, 0 if pa is None else pa.n, 0 if pa is None else pa.n_valued, 0 if pb is None else pb.n,
            0 if pb is None else pb.n_valued, mean(pa), mean(pb), None if isinstance(d, Abstention) else d,
            d.cause.value if isinstance(d, Abstention) else None, *lo_hi)


def rank_supported(intervals: Mapping[str, tuple[float, float]]) -> pd.DataFrame:
    """Pairwise orderings that intervals support; overlapping pairs are refused, with the reason.

    Returns a tidy frame ``a, b, relation, supported, reason`` for every pair.
    """
    names = list(intervals)
    rows = []
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            (lx, hx), (ly, hy) = intervals[x], intervals[y]
            if lx > hy:
                rows.append((x, y, ">", True, "intervals do not overlap"))
            elif ly > hx:
                rows.append((x, y, "<", True, "intervals do not overlap"))
            else:
                rows.append((x, y, "?", False, USES["rank_overlapping"][1]))
    return pd.DataFrame(rows, columns=["a", "b", "relation", "supported", "reason"])
