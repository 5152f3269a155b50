"""Judge selection: accuracy against the human anchor, cost, latency, a Pareto frontier, canaries.

Seed 002, "Judge selection": sweep candidate judges against the human anchor on accuracy,
cost and latency and take the Pareto frontier; a canary set of known failures rejects any
judge that passes one.  And from "What a provisional score supports": ranking anything
whose intervals overlap is not supported, so every pairwise ordering comes with its
evidence, and overlapping pairs are reported as unordered rather than ranked.

Typical use::

    correct = anchor_correctness(answers, labels, measure="x_task")
    sel = select_judges(correct, costs=judge_costs(answers), canaries=canary_hits)
    sel.table        # one row per judge: accuracy, interval, coverage, cost, latency, frontier
    sel.orderings    # every pair: point order, interval evidence, supported or not
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from .._display import HtmlTable
from .._validation import (
    as_frame,
    check_choice,
    check_columns,
    check_confidence_level,
    check_nonempty,
    recorded_seed,
    seeded_rng,
)
from ..stats import BootstrapConfig, ConfidenceInterval, bootstrap_sums, wilson_interval
from ..values import ABSTAIN_WORDS, Abstention, abstain_labels

#: The default coverage floor of eligibility in :func:`select_judges`: a judge must answer at
#: least this share of the anchored items.  A declared policy, not a statistic: a judge that
#: leaves a fifth of the items unscored is a measure that abstains too often to be the one.
MIN_COVERAGE = 0.8
#: What "materially higher coverage" means in :func:`select_judges`: a judge cannot dominate
#: another whose coverage exceeds its own by more than this (absolute share of anchored items).
COVERAGE_MARGIN = 0.05


def anchor_correctness(answers: pd.DataFrame, labels: pd.DataFrame, *, measure: str | None = None,
                       keys: Sequence[str] = ("trace_id", "measure", "step"), rater: str = "rater",
                       answer: str = "answer", abstain: Sequence[str] = ABSTAIN_WORDS) -> pd.DataFrame:
    """Each judge answer scored against the folded human anchor.

    The human labels of an item are folded by majority (a tie or a cannot-tell majority
    leaves the item without an anchor, counted).  A judge's cannot-tell is an abstention:
    ``correct`` is missing and ``abstained`` is True, so coverage stays separate from
    accuracy on answered items.

    Returns a long table: the item keys, ``judge``, ``judge_answer``, ``human_answer``,
    ``correct`` (boolean or <NA>), ``abstained``.  ``.attrs["anchor"]`` counts the items
    with an anchor, and without one by reason.  ``abstain`` (default
    :data:`evaltk.values.ABSTAIN_WORDS`: "cannot_tell", "Unsure", ...; ``abstain=()`` for
    none) names the answers meaning "the rater declined", for the fold and the judges alike.
    """
    from ._panel import FoldRule, fold_panel

    a, h = as_frame(answers), as_frame(labels)
    if measure is not None:
        a = a[a["measure"] == measure]
        h = h[h["measure"] == measure]
    of = "" if measure is None else f" for measure {measure!r}"
    check_nonempty(a, "answers", needs=f"there are no judge answers{of} to score against the anchor")
    check_nonempty(h, "labels", needs=f"there are no human labels{of} to fold into an anchor")
    ks = [k for k in keys if k in a.columns and k in h.columns]
    if "step" in ks and a["step"].isna().all() and h["step"].isna().all():
        ks.remove("step")
    a = a.copy()
    h = h.copy()
    if "step" in ks:  # trace-level rows carry <NA> steps; make them joinable
        a["step"] = a["step"].astype("Int64").fillna(-1)
        h["step"] = h["step"].astype("Int64").fillna(-1)
    ab = sorted(abstain_labels(abstain), key=str)
    folded = fold_panel(h, rule=FoldRule("majority", abstain_words=tuple(ab)), keys=ks, rater=rater,
                        answer=answer).verdicts
    anchor = folded[folded["verdict"].notna() & ~folded["verdict"].isin(ab)]
    reasons = folded.loc[folded["verdict"].isna(), "reason"].value_counts().to_dict()
    reasons["cannot-tell anchor"] = int(folded["verdict"].isin(ab).sum())
    m = a[[*ks, rater, answer]].merge(anchor[[*ks, "verdict"]], on=ks, how="inner")
    m = m.rename(columns={rater: "judge", answer: "judge_answer", "verdict": "human_answer"})
    abst = m["judge_answer"].isin(ab) | m["judge_answer"].isna()
    correct: Any = pd.array(np.where(abst, pd.NA, m["judge_answer"] == m["human_answer"]),  # type: ignore[call-overload]  # numpy stubs: pd.NA as a value
                       dtype="boolean")
    m["correct"] = correct
    m["abstained"] = abst.to_numpy()
    if "step" in ks:
        m["step"] = m["step"].astype("Int64").replace(-1, pd.NA)
    m.attrs["anchor"] = {"items_with_anchor": len(anchor), "items_without_anchor": reasons}
    return m.reset_index(drop=True)


def judge_costs(answers: pd.DataFrame, *, rater: str = "rater", cost: str = "cost",
                latency: str = "latency_ms", item: Sequence[str] = ("trace_id", "measure", "step")) -> pd.DataFrame:
    """Cost per item and latency p50 / p95 per judge from the answers table.

    Cost per item is the judge's total cost divided by the number of distinct items it
    answered; latency quantiles are over its answers.  Missing columns give missing
    values, never zeros.
    """
    answers = as_frame(answers)
    check_nonempty(answers, "answers", needs="there are no judge answers to cost")
    ks = [k for k in item if k in answers.columns]
    g = answers.groupby(rater, sort=True, observed=True)
    out = pd.DataFrame({"n_answers": g.size()})
    out["n_items"] = answers.drop_duplicates([*ks, rater]).groupby(rater, observed=True).size()
    if cost in answers.columns:
        c = pd.to_numeric(answers[cost], errors="coerce")
        has = answers.assign(_c=c)[c.notna()]
        n_costed = has.drop_duplicates([*ks, rater]).groupby(rater, observed=True).size().reindex(out.index, fill_value=0)
        out["n_answers_without_cost"] = c.isna().groupby(answers[rater], observed=True).sum().astype(int)
        # over the items whose cost was recorded: a missing cost is not a free answer
        out["cost_per_item"] = c.groupby(answers[rater], observed=True).sum(min_count=1) / n_costed.where(n_costed > 0)
    else:
        out["cost_per_item"] = np.nan
    if latency in answers.columns:
        lat = pd.to_numeric(answers[latency], errors="coerce").groupby(answers[rater], observed=True)
        out["latency_p50"] = lat.quantile(0.5)
        out["latency_p95"] = lat.quantile(0.95)
    else:
        out["latency_p50"] = out["latency_p95"] = np.nan
    out.index.name = "judge"
    return out.reset_index()


def canary_hits(answers: pd.DataFrame, canaries: pd.DataFrame, *, keys: Sequence[str] = ("trace_id", "measure"),
                rater: str = "rater", answer: str = "answer", passing: str = "passing_answer") -> pd.DataFrame:
    """Which judge passed which canary.

    ``canaries`` lists known failures: the item keys and the ``passing_answer`` a judge
    would have to give to pass the failure (``"yes"`` for "did the task succeed?" on a
    run that did not).  Returns ``judge, canary, answer`` for every pass.
    """
    answers, canaries = as_frame(answers), as_frame(canaries)
    check_nonempty(answers, "answers", needs="there are no judge answers to check against the canaries")
    ks = [k for k in keys if k in canaries.columns]
    if passing not in canaries.columns:
        raise ValueError(f"`canaries` needs a `{passing}` column.")
    m = answers[[*ks, rater, answer]].merge(canaries[[*ks, passing]], on=ks, how="inner")
    hit = m[m[answer].astype(str) == m[passing].astype(str)]
    canary = hit[ks].astype(str).agg("/".join, axis=1) if len(hit) else pd.Series(dtype=object)
    return pd.DataFrame({"judge": hit[rater].to_numpy(), "canary": canary.to_numpy(),
                         "answer": hit[answer].to_numpy()})


def pareto_frontier(points: pd.DataFrame, *, maximize: Sequence[str] = ("accuracy",),
                    minimize: Sequence[str] = ("cost_per_item", "latency_p50"), name: str = "judge",
                    guards: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Frontier membership and, for each dominated point, the points that dominate it.

    A point dominates another when it is at least as good on every objective and strictly
    better on one.  Missing objective values are refused (a judge with no cost is not
    free).  ``guards`` maps a column (higher is better) to a margin: a point dominates
    another only when it is no more than that margin below it on the column
    (``{"coverage": 0.05}``: a judge cannot dominate one whose coverage is materially,
    more than 5 points, higher).  A guard never makes a point dominate; it only forbids.
    """
    check_nonempty(points, "points", needs="a frontier needs at least one point")
    guards = dict(guards or {})
    for c, margin in guards.items():
        if not (isinstance(margin, int | float) and not isinstance(margin, bool) and 0 <= margin <= 1):
            raise ValueError(f"the margin of guard {c!r} must be a number in [0, 1]; got {margin!r}.")
    cols = [*maximize, *minimize, *guards]
    bad = points[cols].isna().any(axis=1)
    if bad.any():
        raise ValueError(f"objective values missing for {points.loc[bad, name].tolist()}; supply a cost table.")
    X = np.column_stack([points[c].to_numpy(float) for c in maximize] +
                        [-points[c].to_numpy(float) for c in minimize])
    ge: np.ndarray = (X[:, None, :] >= X[None, :, :]).all(-1)  # type: ignore[assignment]  # numpy stubs: all(axis) of 3-d is an array
    gt: np.ndarray = (X[:, None, :] > X[None, :, :]).any(-1)  # type: ignore[assignment]  # as above
    dom = ge & gt  # dom[i, j]: i dominates j
    for c, margin in guards.items():
        g = points[c].to_numpy(float)
        dom &= g[:, None] >= g[None, :] - margin - 1e-12
    names = points[name].to_numpy(object)
    out = points[[name]].copy()
    out["on_frontier"] = ~dom.any(axis=0)
    out["dominated_by"] = [sorted(names[dom[:, j]].tolist()) for j in range(len(points))]
    return out


@dataclass(frozen=True)
class SelectionResult(HtmlTable):
    """Judge selection: a per-judge table, every pairwise ordering, and the declared settings."""

    table: pd.DataFrame
    orderings: pd.DataFrame
    settings: Mapping[str, Any]

    def _html_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [("SelectionResult: judges", self.table), ("pairwise orderings", self.orderings)]

    @property
    def frontier(self) -> list[str]:
        t = self.table
        return t.loc[t["on_frontier"], "judge"].tolist()

    @property
    def eligible(self) -> list[str]:
        """Frontier judges that no canary rejected and that meet the coverage floor."""
        t = self.table
        floor = t["meets_coverage_floor"] if "meets_coverage_floor" in t.columns else True
        return t.loc[t["on_frontier"] & ~t["rejected"] & floor, "judge"].tolist()


def select_judges(correct: pd.DataFrame, costs: pd.DataFrame | None = None, *,
                  canaries: pd.DataFrame | None = None, confidence_level: float = 0.95,
                  ordering_rule: str = "overlap", n_resamples: int = 2000, rng: Any = None,
                  item: Sequence[str] | None = None, latency: str = "latency_p50",
                  min_coverage: float = MIN_COVERAGE, coverage_margin: float = COVERAGE_MARGIN) -> SelectionResult:
    """Sweep judges against the human anchor; frontier, canaries, and supported orderings.

    Parameters
    ----------
    correct : DataFrame
        From :func:`anchor_correctness` (or any long table with ``judge``, item key
        columns, ``correct`` boolean with <NA> for abstentions).
    costs : DataFrame, optional
        ``judge, cost_per_item, latency_p50, latency_p95`` (e.g. :func:`judge_costs` or a
        table you supply).  Without it the frontier is on accuracy alone.
    canaries : DataFrame, optional
        ``judge, canary`` rows for every canary a judge passed (:func:`canary_hits`); a
        judge with any is rejected, whatever its place on the frontier.
    ordering_rule : {"overlap", "paired_difference"}
        ``"overlap"`` (seed 002's rule, default): an ordering is supported only when the
        two accuracy intervals do not overlap.  ``"paired_difference"``: when the paired
        bootstrap interval of the difference (same items resampled for both judges)
        excludes zero.  Both pieces of evidence are always reported.
    n_resamples, rng
        Paired item bootstrap for the difference intervals (items answered by both);
        ``settings["seed"]`` records the seed drawn (:func:`evaltk._validation.seeded_rng`).
    min_coverage : float
        The coverage floor of eligibility (default :data:`MIN_COVERAGE`, 0.8): a judge that
        answered fewer than this share of the anchored items is not eligible, whatever its
        accuracy on the rest (seed 002: "a measure that always abstains is a defect").
        ``0`` turns the floor off.
    coverage_margin : float
        What "materially higher coverage" means (default :data:`COVERAGE_MARGIN`, 0.05): a
        judge cannot dominate another whose coverage exceeds its own by more than this
        (absolute share of the anchored items).  ``1`` turns the guard off.

    Notes
    -----
    Accuracy is on answered items (correct / answered) with a Wilson score interval.
    Three shares are reported beside it, never folded in, each named for what it is:
    ``run_share`` (items the judge was run on / items with an anchor), ``answer_rate``
    (items it answered / items it was run on: one minus its abstention rate) and
    ``coverage`` (answered / items with an anchor, their product).

    Two judges are compared only on the items both answered: each ordering's point
    order, interval overlap and paired difference are computed on those common items
    (``accuracy_a``, ``ci_low_a``... in ``orderings``).  Two judges with no item in
    common are **not comparable**: no ordering between them is supported, neither
    dominates the other, and a judge comparable with no other judge is not on the
    frontier (``status`` says so; ``comparable_with`` lists whom it can be compared with).

    Coverage is also part of selection, through the dominance guard and the floor: a judge
    answering 1 of 100 anchored items correctly has accuracy 1.0 and coverage 0.01: it
    dominates nobody who answered materially more, and it is not eligible.
    """
    correct = as_frame(correct)
    costs, canaries = (None if x is None else as_frame(x) for x in (costs, canaries))
    check_nonempty(correct, "correct", needs="there are no scored judge answers to select from "
                   "(see `anchor_correctness`)")
    cl = check_confidence_level(confidence_level)
    check_choice("ordering_rule", ordering_rule, ("overlap", "paired_difference"))
    check_columns(correct, ("judge", "correct"), name="correct")
    for nm, v in (("min_coverage", min_coverage), ("coverage_margin", coverage_margin)):
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1:
            raise ValueError(f"`{nm}` must be a number in [0, 1]; got {v!r}.")
    df = _coded_items(correct, item)
    t = _accuracy_table(df, correct.attrs.get("anchor", {}), cl)
    if costs is not None:
        t = t.merge(costs, on="judge", how="left")
    minimize = _objectives(t, latency)
    t = _with_canaries(t, canaries)
    gen, record = seeded_rng(rng)
    seed = recorded_seed(record)
    orderings = _orderings(df, t, cl, ordering_rule, n_resamples, gen)
    t = _with_frontier(t, minimize, orderings, coverage_margin)
    t["min_coverage"] = float(min_coverage)
    t["meets_coverage_floor"] = (t["coverage"] >= min_coverage).to_numpy(bool)
    t["status"] = [_status(r, orderings) for r in t.itertuples()]
    note = None if minimize else "no cost or latency supplied: the frontier is on accuracy alone"
    settings = {"confidence_level": cl, "ordering_rule": ordering_rule, "n_resamples": n_resamples,
                "objectives": {"maximize": ["accuracy"], "minimize": minimize, "note": note},
                "coverage_denominator": "items with a human anchor",
                "min_coverage": float(min_coverage), "coverage_margin": float(coverage_margin),
                "coverage_rule": (f"a judge cannot dominate one whose coverage is more than {coverage_margin:g} "
                                  f"higher; eligible only with coverage >= {min_coverage:g}"),
                "accuracy_interval": "wilson", "difference_interval": "paired item bootstrap, percentile",
                "seed": seed}
    return SelectionResult(table=t, orderings=orderings, settings=settings)


def _coded_items(correct: pd.DataFrame, item: Sequence[str] | None) -> pd.DataFrame:
    """``correct`` with an integer ``_item`` per item key, ``_answered`` and ``_ok``."""
    ks = list(item) if item is not None else [k for k in ("trace_id", "measure", "step", "pair_id", "item")
                                               if k in correct.columns]
    if not ks:
        raise ValueError("`correct` has no item key column; pass `item=`.")
    df = correct.copy()
    df["_item"] = pd.MultiIndex.from_frame(df[ks].astype(str)).factorize()[0] if len(ks) > 1 else \
        pd.factorize(df[ks[0]].astype(str))[0]
    c = df["correct"].astype("boolean")
    df["_answered"] = c.notna().to_numpy()
    df["_ok"] = c.fillna(False).to_numpy(bool)
    return df


def _accuracy_table(df: pd.DataFrame, anchor: Mapping[str, Any], cl: float) -> pd.DataFrame:
    """Per judge: accuracy on answered items with its Wilson interval, and coverage beside it."""
    g = df.groupby("judge", sort=True)
    # the denominator of coverage is every item with an anchor, the same for every judge: an
    # item a judge never answered is a recorded skip, not a smaller denominator
    n_seen = int(df["_item"].nunique())
    n_anchor = max(int(anchor.get("items_with_anchor", 0)) or n_seen, n_seen)
    t = pd.DataFrame({"n_rows": g["_item"].nunique(), "n_answered": g["_answered"].sum(),
                      "n_correct": g["_ok"].sum()})
    t["n_items"] = n_anchor
    t["n_abstained"] = t["n_rows"] - t["n_answered"]
    t["n_skipped"] = n_anchor - t["n_rows"]
    t = t.rename(columns={"n_rows": "n_run"})
    t["run_share"] = t["n_run"] / t["n_items"]
    t["answer_rate"] = t["n_answered"] / t["n_run"]
    t["coverage"] = t["n_answered"] / t["n_items"]
    acc = [_wilson_accuracy(int(k), int(n), cl) for k, n in zip(t["n_correct"], t["n_answered"], strict=True)]
    t["accuracy"], t["ci_low"], t["ci_high"] = np.array(acc, dtype=float).reshape(-1, 3).T
    t["accuracy_cause"] = np.where(t["n_answered"] == 0, "abstained", None)  # type: ignore[call-overload]  # numpy stubs: None as a value
    return t.reset_index()


def _wilson_accuracy(n_ok: int, n: int, cl: float) -> tuple[float, float, float]:
    """Accuracy and its Wilson interval; NaN for a judge with no answered item."""
    if n == 0:
        return np.nan, np.nan, np.nan
    lo, hi = cast(ConfidenceInterval, wilson_interval(n_ok, n, confidence_level=cl).confidence_interval)  # n > 0
    return n_ok / n, lo, hi


def _objectives(t: pd.DataFrame, latency: str) -> list[str]:
    """The columns to minimise (cost, latency) that the table has, refusing a judge without them."""
    minimize = [x for x in ("cost_per_item", latency) if x in t.columns]
    for x in minimize:
        missing = t.loc[t[x].isna(), "judge"].tolist()
        if missing:
            raise ValueError(f"`{x}` is missing for judges {missing}: a judge with no cost or latency is "
                             "not free or instant; supply it for every judge (or drop the column).")
    return minimize


def _with_canaries(t: pd.DataFrame, canaries: pd.DataFrame | None) -> pd.DataFrame:
    """``canaries_passed`` per judge; a judge that passed any is ``rejected``."""
    hits = canaries if canaries is not None else pd.DataFrame(columns=["judge", "canary"])
    passed = hits.groupby("judge")["canary"].apply(lambda s: sorted(set(map(str, s)))).to_dict()
    t["canaries_passed"] = t["judge"].map(lambda j: passed.get(j, []))
    t["rejected"] = t["canaries_passed"].map(len) > 0
    return t


def _with_frontier(t: pd.DataFrame, minimize: list[str], orderings: pd.DataFrame,
                   coverage_margin: float) -> pd.DataFrame:
    """``on_frontier``, ``dominated_by`` and ``comparable_with``: a judge that passed a canary
    neither joins nor shapes the frontier, and neither does one with no answered item; no judge
    dominates one whose coverage is more than ``coverage_margin`` higher.  A judge dominates
    another only when both answered common items and it is not less accurate on them; a judge
    comparable with no other judge is not on the frontier."""
    valid = t["accuracy"].notna() & ~t["rejected"]
    fr = pareto_frontier(t[valid], minimize=minimize, guards={"coverage": coverage_margin}) if valid.any() else pd.DataFrame(
        {"judge": [], "on_frontier": [], "dominated_by": []})
    t = t.merge(fr, on="judge", how="left")
    common = orderings[orderings["comparable"]]
    # who may be compared with whom, and who is not less accurate than whom on common items
    comparable: dict[str, set[str]] = {str(j): set() for j in t["judge"]}
    not_worse: set[tuple[str, str]] = set()
    for a, b, acc_a, acc_b in zip(common["a"].astype(str), common["b"].astype(str),
                                  common["accuracy_a"].astype(float), common["accuracy_b"].astype(float),
                                  strict=True):
        comparable[a].add(b)
        comparable[b].add(a)
        if acc_a >= acc_b:
            not_worse.add((a, b))
        if acc_b >= acc_a:
            not_worse.add((b, a))
    t["comparable_with"] = [sorted(comparable[j]) for j in t["judge"]]
    t["dominated_by"] = [[d for d in x if (d, j) in not_worse] if isinstance(x, list) else []
                         for j, x in zip(t["judge"], t["dominated_by"], strict=True)]
    alone = valid.to_numpy() & (t["comparable_with"].map(len).to_numpy() == 0) & (int(valid.sum()) > 1)
    t["on_frontier"] = valid.to_numpy() & ~alone & (t["dominated_by"].map(len).to_numpy() == 0)
    return t


def _paired_difference(xa: np.ndarray, xb: np.ndarray, cfg: BootstrapConfig) -> tuple[float, float, float, int]:
    """Accuracy of ``a`` minus ``b`` on their common items, with its paired item-bootstrap interval."""
    n = xa.size
    res = bootstrap_sums((xa - xb)[:, None], lambda S: S[:, 0] / n, method=cfg)
    ci = res.confidence_interval
    lo, hi = (np.nan, np.nan) if isinstance(ci, Abstention) else ci
    return float(xa.mean() - xb.mean()), float(lo), float(hi), res.n_undefined


_ORDERING_COLUMNS = ["a", "b", "comparable", "n_common_items", "accuracy_a", "ci_low_a", "ci_high_a",
                     "accuracy_b", "ci_low_b", "ci_high_b", "point_order", "intervals_overlap", "difference",
                     "difference_ci_low", "difference_ci_high", "difference_n_undefined_resamples", "supported",
                     "verdict"]


def _orderings(df: pd.DataFrame, t: pd.DataFrame, cl: float, rule: str, B: int,
               rng: np.random.Generator) -> pd.DataFrame:
    """Every pair of judges compared on the items both answered (accuracies, their Wilson
    intervals and the paired difference all on those items), or not at all."""
    judges = t.loc[t["accuracy"].notna(), "judge"].tolist()
    piv = df[df["_answered"]].pivot_table(index="_item", columns="judge", values="_ok", aggfunc="first")
    cfg = BootstrapConfig(n_resamples=B, confidence_level=cl, rng=rng)
    rows = []
    for i, a in enumerate(judges):
        for b in judges[i + 1:]:
            both = piv[[a, b]].dropna() if a in piv and b in piv else pd.DataFrame()
            n = len(both)
            if n == 0:
                rows.append({"a": a, "b": b, "comparable": False, "n_common_items": 0, "point_order": "",
                             "intervals_overlap": pd.NA, "difference_n_undefined_resamples": 0, "supported": False,
                             "verdict": f"{a} and {b}: not comparable (no item that both answered)"})
                continue
            xa, xb = both[a].to_numpy(float), both[b].to_numpy(float)
            diff, lo, hi, n_undef = _paired_difference(xa, xb, cfg)
            (pa, la, ha), (pb, lb, hb) = (_wilson_accuracy(int(x.sum()), n, cl) for x in (xa, xb))
            overlap = not (la > hb or lb > ha)
            diff_excl = bool(lo > 0 or hi < 0)
            supported = (not overlap) if rule == "overlap" else diff_excl
            point = ">" if pa > pb else "<" if pa < pb else "="
            rows.append({"a": a, "b": b, "comparable": True, "n_common_items": n,
                         "accuracy_a": pa, "ci_low_a": la, "ci_high_a": ha,
                         "accuracy_b": pb, "ci_low_b": lb, "ci_high_b": hb,
                         "point_order": point, "intervals_overlap": overlap,
                         "difference": diff, "difference_ci_low": lo,
                         "difference_ci_high": hi, "difference_n_undefined_resamples": n_undef,
                         "supported": supported,
                         "verdict": (f"{a} {point} {b}" if supported else
                                     f"{a} and {b}: ordering not supported (intervals overlap)" if rule == "overlap"
                                     else f"{a} and {b}: ordering not supported (difference interval includes 0)")})
    out = pd.DataFrame(rows, columns=_ORDERING_COLUMNS)
    out["comparable"] = out["comparable"].astype(bool)
    out["supported"] = out["supported"].astype(bool)
    out["n_common_items"] = out["n_common_items"].astype(np.int64)
    out["difference_n_undefined_resamples"] = out["difference_n_undefined_resamples"].astype(np.int64)
    return out


def _status(r: Any, orderings: pd.DataFrame) -> str:
    if r.rejected:
        return f"rejected: passed canary {', '.join(r.canaries_passed)}"
    if np.isnan(r.accuracy):
        return "no answered item with a human anchor"
    if not r.comparable_with and len(orderings):
        return "not comparable: no item that another judge also answered (run on other items)"
    if not r.meets_coverage_floor:
        where = "on the frontier" if r.on_frontier else f"dominated by {', '.join(r.dominated_by)}"
        return (f"{where}, but below the coverage floor ({r.coverage:.0%} answered < {r.min_coverage:.0%}): "
                "not eligible")
    if r.on_frontier:
        return "on the frontier"
    doms = r.dominated_by
    sup = []
    for d in doms:
        o = orderings[((orderings.a == d) & (orderings.b == r.judge)) | ((orderings.a == r.judge) & (orderings.b == d))]
        sup.append(bool(len(o) and o["supported"].iloc[0]))
    if any(sup):
        return f"dominated by {', '.join(doms)}"
    return (f"dominated by {', '.join(doms)} on point estimates; the accuracy ordering is not supported "
            "by the intervals")


def published_precision_recall(table: pd.DataFrame, n_positive: int, *, judge: str = "judge",
                               precision: str = "precision", recall: str = "recall", f1: str | None = "f1",
                               percent: bool = True, confidence_level: float = 0.95) -> SelectionResult:
    """Put intervals on a published precision / recall table and say which orderings hold.

    A leaderboard reports point estimates.  With the number of positives in the labelled
    set, each judge's counts follow: ``TP = recall * n_positive`` (rounded), ``FP = TP /
    precision - TP``.  Wilson intervals then go on both rates, the published F1 is checked
    against ``2PR / (P + R)`` (a transcription check), and every pair of judges gets the
    seed's overlap rule on precision: an ordering is supported only when the intervals do
    not overlap.

    Returns a :class:`SelectionResult` whose ``table`` has the reconstructed counts and
    intervals and whose ``orderings`` compare precision.
    """
    check_nonempty(table, "table", needs="there are no published judge rows to put intervals on")
    cl = check_confidence_level(confidence_level)
    if n_positive < 1:
        raise ValueError(f"`n_positive` must be >= 1; got {n_positive}.")
    s = 100.0 if percent else 1.0
    t = table[[judge, precision, recall] + ([f1] if f1 and f1 in table.columns else [])].copy()
    t.columns = ["judge", "precision", "recall"] + (["f1_published"] if f1 and f1 in table.columns else [])
    t["precision"] = t["precision"].astype(float) / s
    t["recall"] = t["recall"].astype(float) / s
    tp = np.rint(t["recall"].to_numpy() * n_positive).astype(int)
    with np.errstate(divide="ignore", invalid="ignore"):
        fp = np.rint(np.where(t["precision"] > 0, tp / t["precision"].to_numpy() - tp, np.nan))
    t["tp"], t["fp"], t["fn"] = tp, fp, n_positive - tp
    if "f1_published" in t.columns:
        t["f1_published"] = t["f1_published"].astype(float) / s
        p_, r_ = t["precision"], t["recall"]
        t["f1_from_pr"] = 2 * p_ * r_ / (p_ + r_)
        t["f1_consistent"] = (t["f1_from_pr"] - t["f1_published"]).abs() <= 0.0015 + 1e-9
    for name, num, den in (("precision", tp, tp + fp), ("recall", tp, np.full(len(t), n_positive))):
        lo, hi = [], []
        for a, b in zip(num, den, strict=True):
            if not np.isfinite(b) or b <= 0:
                lo.append(np.nan), hi.append(np.nan)  # type: ignore[func-returns-value]  # two appends
                continue
            w = cast(ConfidenceInterval, wilson_interval(int(a), int(b), confidence_level=cl).confidence_interval)
            lo.append(w[0]), hi.append(w[1])  # type: ignore[func-returns-value]  # two appends
        t[f"{name}_ci_low"], t[f"{name}_ci_high"] = lo, hi
    rows = []
    names = t["judge"].tolist()
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ra, rb = t.iloc[i], t[t["judge"] == b].iloc[0]
            overlap = not (ra["precision_ci_low"] > rb["precision_ci_high"]
                           or rb["precision_ci_low"] > ra["precision_ci_high"])
            point = ">" if ra["precision"] > rb["precision"] else "<" if ra["precision"] < rb["precision"] else "="
            rows.append({"a": a, "b": b, "point_order": point, "intervals_overlap": overlap,
                         "supported": not overlap,
                         "verdict": f"{a} {point} {b}" if not overlap else
                         f"{a} and {b}: precision ordering not supported (intervals overlap)"})
    settings = {"n_positive": n_positive, "confidence_level": cl, "interval": "wilson",
                "ordering_rule": "overlap", "counts": "reconstructed from published precision and recall"}
    return SelectionResult(table=t, orderings=pd.DataFrame(rows), settings=settings)
