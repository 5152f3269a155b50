"""Numbers as a report shows them.  Rounding happens here and nowhere else in evaltk
(STYLE.md, 8): computation returns unrounded numbers and abstentions."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd


def format_interval(statistic: Any, low: Any, high: Any, *, digits: int = 2) -> str:
    """``0.81 [0.74, 0.87]``; ``—`` where a number is missing (an abstention is shown, not filled).

    Examples
    --------
    >>> format_interval(0.8123, 0.7411, 0.8702)
    '0.81 [0.74, 0.87]'
    >>> format_interval(None, None, None)
    '—'
    """

    def one(x: Any) -> str | None:
        if x is None:
            return None
        try:
            v = float(x)
        except (TypeError, ValueError):
            return None
        return None if math.isnan(v) else f"{v:.{digits}f}"

    s, lo, hi = one(statistic), one(low), one(high)
    if s is None:
        return "—"
    if lo is None or hi is None:
        return s
    return f"{s} [{lo}, {hi}]"


# --------------------------------------------------------------------------- the tables, as shown
#
# Each ``show_*`` takes the unrounded table of :mod:`evaltk.report` (or of the
# library) and returns the frame a page shows: text columns, the index set.  Where a
# statistic abstains the cell says so with its cause, never a bare dash or 0.


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA


def format_abstention(cause: Any, reason: Any = None) -> str:
    """``abstained (missing_evidence: no item has two ratings)``: an abstention as shown.

    Examples
    --------
    >>> format_abstention("missing_evidence", "no pairable items")
    'abstained (missing_evidence: no pairable items)'
    """
    return f"abstained ({cause}" + (f": {reason}" if not _missing(reason) and reason else "") + ")"


def _intervals(frame: pd.DataFrame, stat: str, low: str, high: str, *, digits: int = 3,
               cause: str | None = "statistic_cause", reason: str = "statistic_reason") -> list[str]:
    """One ``format_interval`` per row; an abstained row shows its cause."""
    causes = frame[cause] if cause in frame.columns else pd.Series([None] * len(frame), index=frame.index)
    reasons = frame[reason] if reason in frame.columns else pd.Series([None] * len(frame), index=frame.index)
    return [format_abstention(c, r) if _missing(s) and not _missing(c) else format_interval(s, lo, hi, digits=digits)
            for s, lo, hi, c, r in zip(frame[stat], frame[low], frame[high], causes, reasons, strict=True)]


def _share(x: Any) -> str:
    return "—" if _missing(x) else f"{x:.0%}"


def _fixed(x: Any, digits: int = 3) -> str:
    return "—" if _missing(x) else f"{x:.{digits}f}"


def _pvalue(p: Any) -> str:
    return "—" if _missing(p) else f"{p:.3g}"


def _number(x: Any) -> str:
    """A threshold or a measured value as text: whole numbers with thousands separators,
    others with up to four decimals and no trailing zeros (``0.6625``, ``2.5``, ``60,000``)."""
    if _missing(x) or isinstance(x, bool):
        return "—" if _missing(x) else ("yes" if x else "no")
    if not isinstance(x, int | float):
        return str(x)
    if float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:.4f}".rstrip("0").rstrip(".")


def _yes_no(t: pd.DataFrame) -> pd.DataFrame:
    """Boolean columns as ``yes`` / ``no`` (``—`` where missing): a page never shows Python's True/False."""
    def is_flag(col: pd.Series) -> bool:
        if col.dtype == bool or str(col.dtype) == "boolean":
            return True
        vals = [v for v in col if not _missing(v)]
        return col.dtype == object and bool(vals) and all(isinstance(v, bool | np.bool_) for v in vals)

    flags = [c for c in t.columns if is_flag(t[c])]
    if not flags:
        return t
    t = t.copy()
    for c in flags:
        t[c] = [("—" if _missing(v) else "yes" if v else "no") for v in t[c]]
    return t


def _as_shown(fn: Callable[..., pd.DataFrame]) -> Callable[..., pd.DataFrame]:
    """The one rule every ``show_*`` table follows on its way to a page: yes / no for booleans."""
    @functools.wraps(fn)
    def shown(*args: Any, **kwargs: Any) -> pd.DataFrame:
        return _yes_no(fn(*args, **kwargs))
    return shown


@_as_shown
def show_agreement(agreement: pd.DataFrame) -> pd.DataFrame:
    """:func:`judge_agreement_table` as shown: agreement and kappa with intervals, ceiling,
    baseline, coverage."""
    t = agreement.rename(columns={"measure": "dimension"})
    t["agreement [interval]"] = _intervals(t, "statistic", "ci_low", "ci_high")
    t["kappa [interval]"] = _intervals(t, "kappa", "kappa_low", "kappa_high")
    t["human ceiling"] = t["ceiling"].map(_fixed)
    t["majority baseline"] = t["baseline"].map(_fixed)
    t["coverage"] = t["coverage"].map(_share)
    cov = (f"coverage (floor {_share(float(t['min_coverage'].max()))})" if "min_coverage" in t.columns
           else "coverage")
    t = t.rename(columns={"coverage": cov})
    return t[["dimension", "judge", "agreement [interval]", "kappa [interval]", "human ceiling", "majority baseline",
              "n_items", "coverage", "n_judge_abstained"]].set_index(["dimension", "judge"])


@_as_shown
def show_runs_calibration(calibration: pd.DataFrame) -> pd.DataFrame:
    """:meth:`WeekScores.calibration` (the judges' folded score against the human tier, per
    measure) as shown: kappa with its interval, the labelled runs that carry it, and what each
    side left out, by cause."""
    from ..values import CAUSES

    t = calibration.rename(columns={"measure": "dimension"})
    t["kappa [interval]"] = [s if _missing(r) or not _missing(lo) else f"{s} (no interval: {r})"
                             for s, lo, r in zip(_intervals(t, "statistic", "ci_low", "ci_high"), t["ci_low"],
                                                 t["ci_reason"], strict=True)]
    t["coverage"] = t["coverage"].map(_share)
    cols = ["dimension", "kappa [interval]", "n_units", "n_pairable", "coverage"]
    for side, name in (("judge", "automatic"), ("human", "human")):
        t[f"{name} left out"] = [", ".join(f"{n} {c.replace('_', ' ')}" for c in CAUSES if (n := int(r[f"{side}_n_{c}"])))
                                 or "none" for _, r in t.iterrows()]
        cols.append(f"{name} left out")
    return t[cols].set_index("dimension")


@_as_shown
def show_promotion(promotion: pd.DataFrame) -> pd.DataFrame:
    """:func:`promotion_table` as shown: one block of conditions per ``dimension (judge)``."""
    t = promotion.assign(dimension=[f"{m} ({j})" for m, j in zip(promotion["measure"], promotion["judge"], strict=True)],
                         condition=promotion["condition"].str.replace("_", " "))  # the rule's names, read aloud
    return t.drop(columns=["measure", "judge"]).set_index("dimension")


@_as_shown
def show_ceiling(ceiling: pd.DataFrame) -> pd.DataFrame:
    """A human-ceiling table (:func:`evaltk.agentrewardbench_ceiling`) as shown."""
    t = ceiling.copy()
    t["statistic [interval]"] = _intervals(t, "statistic", "ci_low", "ci_high")
    return t[["question", "statistic_name", "statistic [interval]", "n_pairable", "n_ratings_abstained",
              "n_items_lost_to_abstention", "interval_method"]].set_index(["question", "statistic_name"])


@_as_shown
def show_direction(directions: pd.DataFrame) -> pd.DataFrame:
    """:func:`judge_direction_table` as shown."""
    t = directions.copy()
    t["estimate [interval]"] = _intervals(t, "statistic", "ci_low", "ci_high")
    t["p"] = t["pvalue"].map(_pvalue)
    t["coverage"] = t["coverage"].map(_share)
    cov = (f"coverage (floor {_share(float(t['min_coverage'].max()))})" if "min_coverage" in t.columns
           else "coverage")
    t = t.rename(columns={"coverage": cov})
    return t[["judge", "dimension", "lean", "estimate [interval]", "p", "n_pairs", "n_excluded", "coverage",
              "method"]].set_index(["judge", "dimension"])


@_as_shown
def show_construct_direction(construct: pd.DataFrame) -> pd.DataFrame:
    """:func:`construct_direction_table` as shown."""
    return construct.rename(columns={"construct": "seed 002 direction of error (the construct)",
                                     "judges": "judges measured here"}).set_index("dimension")


@_as_shown
def show_position_bias(bias: pd.DataFrame) -> pd.DataFrame:
    """:func:`position_bias_table` as shown."""
    t = bias.copy()
    t["bias [interval]"] = _intervals(t, "statistic", "ci_low", "ci_high")
    return t[["judge", "lean", "bias [interval]", "judge_rate", "human_rate", "n_pairs", "n_judge_abstained",
              "mcnemar_midp"]].rename(columns={"human_rate": "label_rate"}).set_index("judge")


def _canaries(passed: Any) -> str:
    return "none" if not len(passed) else f"{len(passed)}: " + ", ".join(passed[:3]) + (", …" if len(passed) > 3 else "")


@_as_shown
def show_judges(judges: pd.DataFrame) -> pd.DataFrame:
    """A judge-selection table (:attr:`evaltk.SelectionResult.table`) with costs, latency and canaries, as shown."""
    t = judges.copy()
    t["accuracy [interval]"] = _intervals(t, "accuracy", "ci_low", "ci_high")
    floor = float(t["min_coverage"].max()) if "min_coverage" in t.columns else None
    shares = _shares(t, "items", floor=floor)
    t["cost per item (USD)"] = t["cost_per_item"].map(lambda c: _fixed(c, 4))
    t["latency p50 / p95 (ms)"] = [f"{_fixed(a, 0)} / {_fixed(b, 0)}"
                                   for a, b in zip(t["latency_p50"], t["latency_p95"], strict=True)]
    t["canaries passed"] = t["canaries_passed"].map(_canaries)
    t["status"] = [("rejected by the canary set" if rej else s) for rej, s in zip(t["rejected"], t["status"], strict=True)]
    return t[["judge", "accuracy [interval]", *shares, "n_answered", "cost per item (USD)", "latency p50 / p95 (ms)",
              "canaries passed", "status"]].set_index("judge")


def _shares(t: pd.DataFrame, unit: str, *, floor: float | None = None) -> list[str]:
    """The three shares of a judge-selection table, each named for what it is (added to ``t``);
    the coverage floor of selection, when there is one, in the coverage column's name."""
    names = [f"run on (of the {unit})", "answered (of those run on)",
             f"coverage (answered, of the {unit}" + ("" if floor is None else f"; floor {_share(floor)}") + ")"]
    for name, col in zip(names, ("run_share", "answer_rate", "coverage"), strict=True):
        t[name] = t[col].map(_share)
    return names


@_as_shown
def show_judge_accuracy(judges: pd.DataFrame) -> pd.DataFrame:
    """A judge-selection table without costs (JudgeBench) as shown: accuracy, the shares of pairs
    run on and answered, answered, correct, status."""
    t = judges.copy()
    t["accuracy [interval]"] = _intervals(t, "accuracy", "ci_low", "ci_high")
    shares = _shares(t, "pairs")
    return t[["judge", "accuracy [interval]", *shares, "n_answered", "n_correct", "status"]].set_index("judge")


@_as_shown
def show_orderings(orderings: pd.DataFrame) -> pd.DataFrame:
    """The pairwise orderings of a judge selection as shown, with the paired difference."""
    o = orderings.copy()
    comparable = o["comparable"] if "comparable" in o.columns else pd.Series(True, index=o.index)
    o["difference [interval]"] = ["—" if not c else f for c, f in zip(comparable, _intervals(
        o, "difference", "difference_ci_low", "difference_ci_high", cause=None), strict=True)]
    o["items both answered"] = o["n_common_items"]
    return o[["verdict", "difference [interval]", "items both answered"]].set_index("verdict")


@_as_shown
def show_agents(summary: pd.DataFrame, *, measures: Any) -> pd.DataFrame:
    """A per-agent score summary (:meth:`evaltk.ScoreMatrix.summary` ``by="agent"``) as shown:
    ``mean (coverage)``, a row per measure in ``measures``, a column per agent."""
    s = summary[summary["measure"].isin(list(measures))].copy()
    s["mean (coverage)"] = [f"{_fixed(m)} ({c:.0%})" for m, c in zip(s["mean"], s["coverage"], strict=True)]
    s["measure"] = pd.Categorical(s["measure"], categories=[m for m in measures if m in set(s["measure"])])
    return s.pivot(index="measure", columns="agent", values="mean (coverage)")


@_as_shown
def show_gate(dimensions: pd.DataFrame) -> pd.DataFrame:
    """The checkpoint gate's per-dimension table (:attr:`evaltk.GateResult.dimensions`) as shown."""
    g = dimensions.copy()
    g["adjusted p"] = g["pvalue_adjusted"].map(_pvalue)
    return g[["measure", "type", "decision", "reason", "n_pairs", "adjusted p", "calibrated"]].set_index("measure")


@_as_shown
def show_suite_tasks(tasks: pd.DataFrame) -> pd.DataFrame:
    """A suite summary's task table (:meth:`evaltk.EvalSummary.to_frame`) as shown: the reported
    score beside the gating score, RFC 0246's pass@k and pass^k."""
    t = tasks.copy()
    t["reported"] = t["score"].map(_fixed)
    t["gating"] = [_fixed(g) if (rep or g != s) else "= reported (no trajectory)" for g, s, rep in
                   zip(t["gated_score"], t["score"], t["gated_score_reported"], strict=True)]
    t["pass@k / pass^k"] = [f"{_fixed(a)} / {_fixed(b)}" for a, b in zip(t["pass_at_k"], t["pass_hat_k"], strict=True)]
    t["trials failing trajectory"] = t["n_trajectory_failed"]
    t["fixture misses"] = t["n_fixture_miss"]
    return t[["task_id", "type", "reported", "gating", "passed", "n_passed", "n_trials", "trials failing trajectory",
              "fixture misses", "pass@k / pass^k"]].set_index("task_id")


@_as_shown
def show_suite_conditions(conditions: Any) -> pd.DataFrame:
    """A suite summary's pass conditions (:attr:`evaltk.EvalSummary.conditions`) as shown:
    value and threshold in one number format, met as yes / no."""
    t = pd.DataFrame([dict(c) for c in conditions])
    for c in ("value", "threshold"):
        if c in t.columns:
            t[c] = t[c].map(_number)
    return t.set_index("condition")


@_as_shown
def show_suite_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """A suite summary's trial table as shown (a trial with no expected trajectory says so)."""
    t = trials.copy()
    t["trajectory_matched"] = [("n/a (no trajectory)" if _missing(m) else "yes" if m else "no")
                               for m in t["trajectory_matched"]]
    return t.set_index(["task_id", "trial"])


def published_precision_note(published: Any) -> str:
    """The sentence under AgentRewardBench's published precision (:func:`published_precision_table`)."""
    t = published.table
    consistent = t["f1_consistent"].all() if "f1_consistent" in t.columns else True
    return (f"Published judge precision (*Overall*) with Wilson intervals on counts reconstructed "
            f"from precision, recall and the {int(t['n_successful'].iloc[0])} trajectories the experts judged "
            f"successful (of {int(t['n_trajectories'].iloc[0])}); every published F1 reproduced from them: "
            f"{'yes' if consistent else 'no'}.")


def orderings_note(orderings: pd.DataFrame, *, what: str = "precision") -> str:
    """How many pairwise orderings the intervals support, in a sentence."""
    s = orderings["supported"]
    return (f"{int(s.sum())} of {len(s)} pairwise {what} orderings are supported by the intervals; the rest are "
            "not, whatever the published ranking says.")


def measure_summary(scores: pd.DataFrame, *, measure: str = "measure", value: str = "value",
                    cause: str = "cause") -> pd.DataFrame:
    """:func:`evaltk.stats.summarize_frame` by measure, in the seed's order of the measures
    (the trace vector, then the guide family; other names after them), as a page shows it."""
    from ..stats import summarize_frame
    from ._week import seed_order

    return seed_order(summarize_frame(scores, by=measure, value=value, cause=cause), measure)


def week_at_a_glance(*, week: str, measure: str, scores: Any, selection: Any, directions: pd.DataFrame,
                     ceilings: pd.DataFrame, suite: Any = None, trajectory: Mapping[str, Any] | None = None,
                     agentrewardbench: pd.DataFrame | None = None, judgebench: Any = None,
                     calibration: pd.DataFrame | None = None) -> pd.DataFrame:
    """The weekly page's summary, one ``item, text`` row per line.

    ``scores`` is the automatic tier of the week's score matrix, or the week's
    :class:`evaltk.report.WeekScores` (its summaries: in memory or from a scored dataset); ``selection`` the judge
    selection on ``measure`` (:func:`evaltk.select_judges`); ``directions`` and ``ceilings``
    :func:`judge_direction_table` and :func:`human_ceiling_table` on ``measure``; ``suite``
    an :class:`evaltk.EvalSummary`; ``trajectory`` a cohort's ``summary()``;
    ``agentrewardbench`` :func:`evaltk.agentrewardbench_ceiling`; ``judgebench`` the
    selection on JudgeBench; ``calibration`` the week's judge-vs-human table
    (:meth:`WeekScores.calibration`).  Absent sources give a line that says so or no line.
    """

    from ._week import WeekScores

    fmt = functools.partial(format_interval, digits=3)  # the digits of the tables on the pages
    t = selection.table
    best = t[t["judge"].isin(selection.eligible)].sort_values("accuracy", ascending=False)
    if isinstance(scores, WeekScores):  # from the mergeable summaries (in memory or a scored dataset)
        s = scores.summaries
        n_traces, n_scores, versions, by_measure = (s.n_traces, s.n_scores, ", ".join(sorted(s.scorer_versions)),
                                                    scores.measure_summary())
    else:
        n_traces, n_scores = scores["trace_id"].nunique(), len(scores)
        versions = ", ".join(sorted(scores["scorer_version"].astype(str).unique()))
        by_measure = measure_summary(scores)
    rows = [("week", week),
            ("runs scored", f"{n_traces} traces, {n_scores} scores, scorer versions "
                            f"{versions} (all dimensions provisional)"),
            ("coverage per dimension", "; ".join(f"{r.measure} {r.coverage:.0%}" for r in by_measure.itertuples())),
            (f"judges on the frontier ({measure}), not rejected by a canary, above the coverage floor",
             "; ".join(f"{r.judge}: accuracy {fmt(r.accuracy, r.ci_low, r.ci_high)} on {r.n_answered} answered "
                       f"(coverage {_share(r.coverage)}), ${r.cost_per_item:.4f}/item, "
                       f"p50 {r.latency_p50:.0f} ms" for r in best.itertuples()) or "none"),
            ("rejected by the canary set", "; ".join(f"{r.judge} (passed {len(r.canaries_passed)})"
                                                    for r in t[t["rejected"]].itertuples()) or "none")]
    unsupported = selection.orderings[~selection.orderings["supported"]]
    rows.append(("orderings the data does not support",
                 "; ".join(unsupported["verdict"].str.split(":").str[0]) or "none"))
    d = directions[directions["dimension"] == measure]
    rows.append((f"direction of error on {measure}", "; ".join(f"{r.judge}: {r.lean}" for r in d.itertuples())))
    c = ceilings[ceilings["measure"] == measure].iloc[0]
    rows.append((f"human ceiling on {measure}",
                 f"unknown ({c['statistic_cause']}" + (f": {c['statistic_reason']})" if c["statistic_reason"] else ")")
                 if _missing(c["statistic"]) else
                 f"{fmt(c['statistic'], c['ci_low'], c['ci_high'])} percent agreement on {c['n_pairable']} "
                 "double-labelled items"))
    if calibration is not None and len(calibration):
        rows.append(("the judges' score against the human labels on this week's runs (Cohen's kappa)", "; ".join(
            f"{r.measure} {fmt(r.statistic, r.ci_low, r.ci_high)} on the {r.n_pairable} runs both judged and labelled "
            f"(of {r.n_units})" if not _missing(r.statistic) else
            f"{r.measure} undefined on the {r.n_pairable} runs both judged and labelled (of {r.n_units})"
            for r in calibration.itertuples())))
    if suite is not None:
        rows.append((f"suite {suite.run.suite}", ("PASSED" if suite.passed else "DID NOT PASS") +
                     f": gated aggregate {suite.gated_aggregate_score:.3f} (reported {suite.aggregate_score:.3f}), "
                     f"passScore {suite.run.thresholds.to_dict()['passScore']}"))
    else:
        rows.append(("suite gate", "no suite run found"))
    if trajectory is not None:
        rows.append(("long-horizon trajectories", f"{trajectory['decision']}: {trajectory['passed']} passed, "
                                                  f"{trajectory['safely_abstained']} safely abstained, "
                                                  f"{trajectory['failed']} failed of {trajectory['cases']} cases"))
    if agentrewardbench is not None:
        pa = agentrewardbench[agentrewardbench["statistic_name"] == "percent_agreement"]
        rows.append(("AgentRewardBench human ceiling (expert-expert agreement)",
                     "; ".join(f"{r.question} {fmt(r.statistic, r.ci_low, r.ci_high)}" for r in pa.itertuples())))
    if judgebench is not None:
        jt = judgebench.table.sort_values("accuracy", ascending=False)
        alone = jt["comparable_with"].map(len).eq(0) & (len(jt) > 1)
        rows.append(("JudgeBench pair accuracy (published fold), judges run on the same pairs",
                     "; ".join(f"{r.judge} {fmt(r.accuracy, r.ci_low, r.ci_high)} (answered {r.n_answered} of the "
                               f"{r.n_run} pairs it was run on; coverage {_share(r.coverage)} of all {r.n_items} pairs)"
                               for r in jt[~alone].itertuples()) or "none"))
        if alone.any():
            rows.append(("JudgeBench judges run on other pairs (not comparable, not ranked)",
                         "; ".join(f"{r.judge}: {fmt(r.accuracy, r.ci_low, r.ci_high)} (answered {r.n_answered} of "
                                   f"its own {r.n_run} pairs; coverage {_share(r.coverage)} of all {r.n_items} pairs)"
                                   for r in jt[alone].itertuples())))
    return pd.DataFrame(rows, columns=["item", "text"])


def markdown_list(frame: pd.DataFrame, *, item: str = "item", text: str = "text") -> str:
    """``- **item**: text`` per row: a summary table as a Markdown list."""
    return "\n".join(f"- **{k}**: {v}" for k, v in zip(frame[item], frame[text], strict=True))


def trajectory_note(trajectory: Any, summary: Mapping[str, Any] | None) -> str:
    """The sentence over the trajectory grid: the files read (``(lock, results, design)``) and
    the cohort's decision and counts (:meth:`evaltk.CohortReport.summary`); with no summary
    (no trajectory files found), that there is nothing to show."""
    if summary is None:
        return "*No trajectory lock and results found: nothing to show.*"
    return (f"Source: {trajectory[1]} against {trajectory[0]}. **{summary['decision'].upper()}**: "
            f"{summary['passed']} passed, {summary['safely_abstained']} safely abstained, {summary['failed']} "
            f"failed of {summary['cases']} locked cases.")


def checkpoint_gate_headline(demo: Any, *, baseline_agent: str, candidate_agent: str,
                             confidence_level: float = 0.95, n_resamples: int = 2000,
                             rng: Any = 0, scores: Any = None) -> tuple[str, Any]:
    """The checkpoint gate (:func:`evaltk.report.checkpoint_gate`) and the line over it:
    ``(headline, gate)``.  When there is no gate (an agent without runs, the gate refused
    to compare, or ``scores`` is a :class:`WeekScores` read from a scored dataset, which
    keeps no pairs of runs) ``gate`` is None and the headline says why."""
    from ..errors import InputError
    from ..judges import GateRefused
    from ._tables import checkpoint_gate
    from ._week import GATE_FROM_SUMMARIES

    if scores is not None and scores.scored:
        return GATE_FROM_SUMMARIES, None
    try:
        g = checkpoint_gate(demo, baseline_agent=baseline_agent, candidate_agent=candidate_agent,
                            confidence_level=confidence_level, n_resamples=n_resamples, rng=rng)
    except InputError as e:
        return f"*{e}*", None
    except GateRefused as e:
        return f"**The gate refused to compare:** {e}", None
    return f"**{candidate_agent} against {baseline_agent}: {g.decision.upper()}**", g


def show_levels(levels: pd.DataFrame) -> pd.DataFrame:
    """:func:`evaltk.report.level_table` as shown: ``level [low, high]`` and the labels behind
    it where a level is supported, the reason where it is not."""
    t = levels.copy()
    t["where you are"] = [
        "—" if _missing(v) else f"{_fixed(v)} [{_fixed(lo)}, {_fixed(hi)}]"
        for v, lo, hi in zip(t["level"], t["ci_low"], t["ci_high"], strict=True)]
    t["from"] = ["" if _missing(v) else f"{n} held-out labels + the judge on {r} runs ({m})"
                 for v, n, r, m in zip(t["level"], t["n_labels"], t["n_runs"], t["method"], strict=True)]
    t["why not"] = t["reason"].fillna("")
    return t[["measure", "where you are", "from", "why not"]].set_index("measure")
