"""Chart builders: small tidy frames in, an :class:`altair.Chart` out.

The one builder that receives a big table (:func:`abstention_chart`, fed a score
matrix) aggregates it with :func:`evaltk.stats.summarize_frame` before it charts."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_columns, check_frame
from ..values import CAUSES
from ._format import format_interval, measure_summary
from ._theme import _ACCENT, _BAND, _MUTED, _WARN, CAUSE_COLORS

_MAX_CHART_ROWS = 500  # builders chart aggregates; more rows than this means "aggregate first"



def _small(frame: pd.DataFrame, name: str, unit: str) -> None:
    if len(frame) == 0:
        raise ValueError(f"`{name}` is empty: nothing to chart.")
    if len(frame) > _MAX_CHART_ROWS:
        raise ValueError(
            f"`{name}` has {len(frame)} rows; a chart takes one row per {unit}. "
            "Aggregate the table first (the chart draws summaries, not records)."
        )


def _numeric(frame: pd.DataFrame, cols: Sequence[str | None], name: str) -> pd.DataFrame:
    out = frame.copy()
    for c in cols:
        if c is None:
            continue
        try:
            out[c] = pd.to_numeric(out[c], errors="raise").astype(float)
        except (TypeError, ValueError):
            raise ValueError(f"`{name}` column {c!r} must be numeric.") from None
    return out


def judge_frontier_chart(
    frame: pd.DataFrame,
    *,
    judge: str = "judge",
    accuracy: str = "accuracy",
    ci_low: str = "ci_low",
    ci_high: str = "ci_high",
    cost: str = "cost",
    latency: str | None = "latency_ms",
    on_frontier: str = "on_frontier",
    canary_rejected: str | None = None,
    coverage: str = "coverage",
    min_coverage: str = "min_coverage",
    accuracy_title: str = "accuracy against human labels",
    cost_title: str = "cost per item",
    latency_title: str = "latency p50 (ms)",
    title: str = "Judge selection: accuracy against cost",
) -> Any:
    """Accuracy against cost with interval bars, latency as point size, the frontier drawn.

    Dominated judges are faded; canary-rejected judges (``canary_rejected`` column
    true) are drawn as red crosses whatever their place on the frontier.  When the frame
    has the ``coverage`` and ``min_coverage`` columns (:func:`evaltk.judges.select_judges`
    adds both), judges below the coverage floor are drawn as hollow triangles, the
    dashed frontier runs through the eligible judges only, and the subtitle states the floor.

    Parameters
    ----------
    frame : DataFrame
        One row per judge with the named columns (``on_frontier`` from
        :func:`evaltk.judges.select_judges` or :func:`evaltk.judges.pareto_frontier`).

    Returns
    -------
    altair.Chart
    """
    import altair as alt

    frame = check_frame(frame, "frame")
    check_columns(frame, [judge, accuracy, ci_low, ci_high, cost, latency, on_frontier, canary_rejected], name="frame")
    _small(frame, "frame", "judge")
    df = _numeric(frame, [accuracy, ci_low, ci_high, cost, latency], "frame")
    if df[cost].isna().any():
        bad = df.loc[df[cost].isna(), judge].tolist()
        raise ValueError(f"`frame` has no {cost!r} for judge(s) {bad}; a frontier needs a cost per judge.")
    df = df.rename(columns={judge: "judge", accuracy: "accuracy", ci_low: "ci_low",
                            ci_high: "ci_high", cost: "cost"})
    df["latency"] = df[latency] if latency else np.nan
    df["status"] = np.where(df[on_frontier].astype(bool), "on the frontier", "dominated")
    floor = None
    if coverage in df.columns and min_coverage in df.columns:
        floor = float(pd.to_numeric(df[min_coverage]).max())
        df.loc[(pd.to_numeric(df[coverage]) < floor).to_numpy(bool), "status"] = "below the coverage floor"
    if canary_rejected is not None:
        df.loc[df[canary_rejected].astype(bool), "status"] = "rejected by canary"
    df["coverage"] = pd.to_numeric(df[coverage]) if coverage in df.columns else np.nan
    df = df[["judge", "accuracy", "ci_low", "ci_high", "cost", "latency", "coverage", "status"]]
    positive = (df["cost"] > 0).all()
    log = bool(positive and df["cost"].max() / df["cost"].min() > 10)
    cmin, cmax = float(df["cost"].min()), float(df["cost"].max())
    xscale = (alt.Scale(type="log", domain=[cmin / 1.6, cmax * 2.5], nice=False) if log
              else alt.Scale(zero=False, padding=20))
    x = alt.X("cost:Q", title=cost_title + (" (log scale)" if log else ""), scale=xscale)
    domain = ["on the frontier", "dominated", "rejected by canary", "below the coverage floor"]
    color = alt.Color("status:N", title=None, scale=alt.Scale(domain=domain,
                                                               range=[_ACCENT, _MUTED, _WARN, _MUTED]))
    shape = alt.Shape("status:N", title=None, scale=alt.Scale(domain=domain,
                                                               range=["circle", "circle", "cross", "triangle-down"]))
    opacity = alt.condition(alt.datum.status == "dominated", alt.value(0.45), alt.value(1.0))
    lo_y = float(np.nanmin(df[["ci_low", "accuracy"]].to_numpy(float)))
    hi_y = float(np.nanmax(df[["ci_high", "accuracy"]].to_numpy(float)))
    yscale = alt.Scale(domain=[max(0.0, lo_y - 0.05), min(1.0, hi_y + 0.02)], zero=False, nice=False)
    y = alt.Y("accuracy:Q", title=accuracy_title, scale=yscale)
    base = alt.Chart(df)
    bars = base.mark_rule(strokeWidth=2).encode(
        x=x, y=alt.Y("ci_low:Q", title=accuracy_title, scale=yscale), y2="ci_high:Q", color=color, opacity=opacity
    )
    tooltip = ["judge:N", alt.Tooltip("accuracy:Q", format=".3f"), alt.Tooltip("ci_low:Q", format=".3f"),
               alt.Tooltip("ci_high:Q", format=".3f"), alt.Tooltip("cost:Q", format=".4g"),
               alt.Tooltip("coverage:Q", format=".0%"), "status:N"]
    enc: dict[str, Any] = {"x": x, "y": y, "color": color, "shape": shape, "opacity": opacity,
                           "tooltip": tooltip}
    if latency:
        enc["size"] = alt.Size("latency:Q", title=latency_title, scale=alt.Scale(range=[40, 400]))
    points = base.mark_point(filled=True).encode(**enc)
    labels = base.mark_text(align="left", dx=9, dy=-7, fontSize=10).encode(
        x=x, y=y, text="judge:N", opacity=opacity
    )
    front = df[df["status"] != "dominated"].copy()
    front = front[front["status"] == "on the frontier"].sort_values("cost")
    line = alt.Chart(front).mark_line(color=_ACCENT, strokeDash=[5, 3], strokeWidth=1.5).encode(x=x, y=y)
    sub = "bars: confidence interval; dashed line: Pareto frontier on point estimates"
    if floor is not None:
        sub += f"; eligible only with coverage >= {floor:.0%} (triangles: below the floor)"
    return alt.layer(line, bars, points, labels).properties(title=alt.Title(title, subtitle=sub))


def judge_accuracy_chart(
    frame: pd.DataFrame,
    *,
    judge: str = "judge",
    accuracy: str = "accuracy",
    ci_low: str = "ci_low",
    ci_high: str = "ci_high",
    coverage: str | None = "coverage",
    accuracy_title: str = "accuracy against human labels",
    title: str = "Judge accuracy with intervals",
) -> Any:
    """Per-judge accuracy with interval bars, sorted; for data without cost (no frontier).

    Coverage (share of items the judge answered) is printed beside each judge.
    """
    import altair as alt

    frame = check_frame(frame, "frame")
    check_columns(frame, [judge, accuracy, ci_low, ci_high, coverage], name="frame")
    _small(frame, "frame", "judge")
    df = _numeric(frame, [accuracy, ci_low, ci_high, coverage], "frame").rename(
        columns={judge: "judge", accuracy: "accuracy", ci_low: "ci_low", ci_high: "ci_high"})
    df["label"] = [
        f"{format_interval(a, lo, hi)}" + (f"  coverage {c:.0%}" if coverage and not pd.isna(c) else "")
        for a, lo, hi, c in zip(df["accuracy"], df["ci_low"], df["ci_high"],
                                df[coverage] if coverage else [np.nan] * len(df), strict=True)
    ]
    df = df[["judge", "accuracy", "ci_low", "ci_high", "label"]]
    order = df.sort_values("accuracy", ascending=False)["judge"].tolist()
    y = alt.Y("judge:N", sort=order, title=None)
    x = alt.X("accuracy:Q", title=accuracy_title, scale=alt.Scale(domain=[0, 1]))
    base = alt.Chart(df)
    rules = base.mark_rule(color=_ACCENT, strokeWidth=2).encode(y=y, x=alt.X("ci_low:Q", title=accuracy_title,
                                                                              scale=alt.Scale(domain=[0, 1])),
                                                             x2="ci_high:Q")
    points = base.mark_point(filled=True, color=_ACCENT).encode(y=y, x=x)
    text = base.mark_text(align="left", x=465, fontSize=10).encode(y=y, text="label:N")
    return alt.layer(rules, points, text).properties(
        width=460, height=alt.Step(24), title=alt.Title(title, subtitle="bars: confidence interval")
    )


def bias_forest_chart(
    frame: pd.DataFrame,
    *,
    judge: str = "judge",
    dimension: str = "dimension",
    bias: str = "bias",
    ci_low: str = "ci_low",
    ci_high: str = "ci_high",
    lean: str = "lean",
    bias_title: str = "signed bias (judge positive rate − human positive rate)",
    title: str = "Direction of error",
    subtitle: str = "left of zero: the judge says 'positive' less often than humans; right: more often",
    estimate_header: str = "bias [interval]",
    lean_header: str = "lean",
) -> Any:
    """Forest plot of signed bias with intervals per judge and dimension, the lean in words beside it.

    Each row is one (dimension, judge); a vertical rule marks zero (no lean).
    """
    import altair as alt

    frame = check_frame(frame, "frame")
    check_columns(frame, [judge, dimension, bias, ci_low, ci_high, lean], name="frame")
    _small(frame, "frame", "judge x dimension")
    df = _numeric(frame, [bias, ci_low, ci_high], "frame")
    if df[dimension].nunique() > 1:
        df["row"] = df[dimension].astype(str) + " · " + df[judge].astype(str)
    else:  # one dimension: it goes in the title, the rows name the judges
        df["row"] = df[judge].astype(str)
    df = df.rename(columns={bias: "bias", ci_low: "ci_low", ci_high: "ci_high"})
    df["lean_text"] = df[lean].astype(str)
    df["interval"] = [format_interval(b, lo, hi) for b, lo, hi in zip(df["bias"], df["ci_low"], df["ci_high"], strict=True)]
    df = df[["row", "bias", "ci_low", "ci_high", "lean_text", "interval"]]
    order = df["row"].tolist()
    lim = float(np.nanmax(np.abs(df[["bias", "ci_low", "ci_high"]].to_numpy(float)))) if df["bias"].notna().any() else 1.0
    lim = min(1.0, max(0.05, lim * 1.15))
    xs = alt.Scale(domain=[-lim, lim])
    y = alt.Y("row:N", sort=order, title=None, axis=alt.Axis(labelLimit=320))
    base = alt.Chart(df)
    zero = alt.Chart(pd.DataFrame({"x": [0.0]})).mark_rule(color="#444444", strokeDash=[3, 3]).encode(x=alt.X("x:Q", scale=xs))
    rules = base.mark_rule(strokeWidth=2, color=_ACCENT).encode(
        y=y, x=alt.X("ci_low:Q", title=bias_title, scale=xs), x2="ci_high:Q")
    points = base.mark_point(filled=True, color=_ACCENT).encode(
        y=y, x=alt.X("bias:Q", scale=xs), tooltip=["row:N", "interval:N", "lean_text:N"])
    forest = alt.layer(zero, rules, points).properties(width=380, height=alt.Step(22))
    words = base.mark_text(align="left", fontSize=11).encode(
        y=alt.Y("row:N", sort=order, axis=None), text="lean_text:N", x=alt.value(0)
    ).properties(width=170, height=alt.Step(22), title=lean_header)
    nums = base.mark_text(align="left", fontSize=10, color="#555555").encode(
        y=alt.Y("row:N", sort=order, axis=None), text="interval:N", x=alt.value(0)
    ).properties(width=140, height=alt.Step(22), title=estimate_header)
    return alt.hconcat(forest, nums, words, spacing=8).properties(title=alt.Title(title, subtitle=subtitle))


def agreement_chart(
    frame: pd.DataFrame,
    *,
    judge: str = "judge",
    statistic: str = "statistic",
    ci_low: str = "ci_low",
    ci_high: str = "ci_high",
    ceiling: tuple[float, float, float] | None = None,
    baseline: float | None = None,
    statistic_title: str = "agreement with human labels",
    title: str = "Agreement with humans",
) -> Any:
    """Agreement per judge with intervals, against a human-ceiling band and a baseline line.

    Parameters
    ----------
    frame : DataFrame
        One row per judge.
    ceiling : (statistic, low, high), optional
        Human-human agreement and its interval, drawn as a shaded band with its
        point as a solid line.  Missing entries (None/NaN) are not drawn.
    baseline : float, optional
        The degenerate baseline (always-majority) on the same items: a red dashed line.
    """
    import altair as alt

    frame = check_frame(frame, "frame")
    check_columns(frame, [judge, statistic, ci_low, ci_high], name="frame")
    _small(frame, "frame", "judge")
    df = _numeric(frame, [statistic, ci_low, ci_high], "frame").rename(
        columns={judge: "judge", statistic: "statistic", ci_low: "ci_low", ci_high: "ci_high"})
    df["interval"] = [format_interval(s, lo, hi) for s, lo, hi in zip(df["statistic"], df["ci_low"], df["ci_high"], strict=True)]
    df = df[["judge", "statistic", "ci_low", "ci_high", "interval"]]
    vals = df[["statistic", "ci_low", "ci_high"]].to_numpy(float).ravel().tolist()
    layers: list[Any] = []
    if ceiling is not None:
        c, clo, chi = (float("nan") if v is None else float(v) for v in ceiling)
        if not (math.isnan(clo) or math.isnan(chi)):
            band = pd.DataFrame({"lo": [clo], "hi": [chi], "what": ["human ceiling (interval)"]})
            layers.append(alt.Chart(band).mark_rect(opacity=0.25, color=_BAND).encode(
                x=alt.X("lo:Q"), x2="hi:Q", tooltip=["what:N", alt.Tooltip("lo:Q", format=".3f"),
                                                     alt.Tooltip("hi:Q", format=".3f")]))
            vals += [clo, chi]
        if not math.isnan(c):
            layers.append(alt.Chart(pd.DataFrame({"x": [c]})).mark_rule(color=_BAND, strokeWidth=2).encode(x="x:Q"))
            vals.append(c)
    if baseline is not None and not (isinstance(baseline, float) and math.isnan(baseline)):
        layers.append(alt.Chart(pd.DataFrame({"x": [float(baseline)]})).mark_rule(
            color=_WARN, strokeDash=[6, 3], strokeWidth=2).encode(x="x:Q"))
        vals.append(float(baseline))
    finite = [v for v in vals if not math.isnan(v)]
    lo = min([0.0, *finite]) if finite else 0.0
    xs = alt.Scale(domain=[min(lo, -0.05) if lo < 0 else 0.0, 1.0])
    order = df.sort_values("statistic", ascending=False)["judge"].tolist()
    y = alt.Y("judge:N", sort=order, title=None)
    base = alt.Chart(df)
    layers.append(base.mark_rule(color=_ACCENT, strokeWidth=2).encode(
        y=y, x=alt.X("ci_low:Q", title=statistic_title, scale=xs), x2="ci_high:Q"))
    layers.append(base.mark_point(filled=True, color=_ACCENT).encode(
        y=y, x=alt.X("statistic:Q", scale=xs), tooltip=["judge:N", "interval:N"]))
    layers.append(base.mark_text(align="left", dx=8, dy=-8, fontSize=10, color="#555555").encode(
        y=y, x=alt.X("statistic:Q", scale=xs), text="interval:N"))
    sub = []
    if ceiling is not None:
        sub.append("teal band: human-human agreement and its interval (the ceiling)")
    if baseline is not None:
        sub.append("red dashes: always-majority baseline")
    return alt.layer(*layers).properties(
        width=460, height=alt.Step(26), title=alt.Title(title, subtitle="; ".join(sub) or "bars: confidence interval"))


def judge_confusion_chart(answers: pd.DataFrame, labels: pd.DataFrame, *, measures: Sequence[str]) -> Any:
    """One confusion heat map per measure, stacked: each judge's answer against the human anchor
    (:func:`evaltk.report.confusion_counts`), both axes in the measure's answer order."""
    import altair as alt

    from ._tables import answer_order, confusion_counts

    return alt.vconcat(*[
        confusion_heatmap(confusion_counts(answers, labels, measure=m), truth="human_answer",
                          predicted="judge_answer", count="n", facet="judge", order=answer_order(m),
                          title=f"{m}: judge answer against the human anchor")
        for m in measures])


def confusion_heatmap(
    frame: pd.DataFrame,
    *,
    truth: str = "human",
    predicted: str = "judge_answer",
    count: str = "n",
    facet: str | None = None,
    order: Sequence[str] | None = None,
    title: str = "Confusion: judge answer against the human label",
) -> Any:
    """Confusion matrices as heat maps: colour is the share of each human row, text the count.

    Parameters
    ----------
    frame : DataFrame
        Long counts: one row per (facet, truth, predicted) with ``count``.
    facet : str, optional
        Column to draw one matrix per value of (for example the judge).
    order : sequence of str, optional
        Category order for both axes.
    """
    import altair as alt

    frame = check_frame(frame, "frame")
    check_columns(frame, [truth, predicted, count, facet], name="frame")
    _small(frame, "frame", "cell")
    df = _numeric(frame, [count], "frame")
    keys = [facet] if facet else []
    df = df.groupby([*keys, truth, predicted], as_index=False, observed=True)[count].sum()  # type: ignore[assignment]  # pandas-stubs: as_index=False gives a frame
    row_tot = df.groupby([*keys, truth], observed=True)[count].transform("sum")
    df["share"] = np.where(row_tot > 0, df[count] / row_tot.where(row_tot > 0, 1), 0.0)
    df = df.rename(columns={truth: "truth", predicted: "predicted", count: "n"})
    if facet:
        df = df.rename(columns={facet: "facet"})
    df["truth"] = df["truth"].astype(str)
    df["predicted"] = df["predicted"].astype(str)
    cats = list(order) if order else sorted(set(df["truth"]) | set(df["predicted"]))
    # a label wider than its 44-pixel column would run into the next one: angle them all
    angle = 0 if max((len(c) for c in cats), default=0) * 7 <= 44 else -40
    base = alt.Chart().encode(
        x=alt.X("predicted:N", sort=cats, title="judge said",
                axis=alt.Axis(labelAngle=angle, labelAlign="center" if angle == 0 else "right")),
        y=alt.Y("truth:N", sort=cats, title="human said"),
    )
    rect = base.mark_rect().encode(
        color=alt.Color("share:Q", title="share of human row", scale=alt.Scale(scheme="blues", domain=[0, 1])),
        tooltip=["truth:N", "predicted:N", "n:Q", alt.Tooltip("share:Q", format=".1%")])
    text = base.mark_text(fontSize=11).encode(
        text="n:Q", color=alt.condition(alt.datum.share > 0.55, alt.value("white"), alt.value("black")))
    layered = alt.layer(rect, text, data=df).properties(width=alt.Step(44), height=alt.Step(32))
    if facet:
        return layered.facet(facet=alt.Facet("facet:N", title=None), columns=4).properties(title=title)
    return layered.properties(title=title)


def abstention_chart(
    scores: Any,
    *,
    measure: str = "measure",
    value: str = "value",
    cause: str = "cause",
    title: str = "Coverage: valued scores and abstentions per cause",
) -> Any:
    """Counts per cause per dimension, with coverage; aggregates the score table first.

    ``scores`` may be the whole long score matrix (``trace_id, measure, value,
    cause``): it is summarised with :func:`evaltk.stats.summarize_frame` (one row
    per measure) before anything is charted; or the weekly page's
    :class:`evaltk.report.WeekScores` (already summarised: from a scored dataset, no row).
    """
    import altair as alt

    from ._week import WeekScores

    if isinstance(scores, WeekScores):  # already summarised (in memory or from a scored dataset)
        summary, measure = scores.measure_summary(), "measure"
    else:
        scores = check_frame(scores, "scores")
        check_columns(scores, [measure, value, cause], name="scores")
        summary = measure_summary(scores, measure=measure, value=value, cause=cause) if len(scores) else scores
    if len(summary) == 0:
        raise ValueError("`scores` is empty: nothing to chart.")
    long = summary.melt(id_vars=[measure, "coverage", "n"], value_vars=["n_valued", *[f"n_{c}" for c in CAUSES]],
                        var_name="outcome", value_name="count")
    long["outcome"] = long["outcome"].str.slice(2)
    long = long.rename(columns={measure: "measure"})
    domain = list(CAUSE_COLORS)
    long["order"] = long["outcome"].map({k: i for i, k in enumerate(domain)})
    color = alt.Color("outcome:N", title=None,
                      scale=alt.Scale(domain=domain, range=[CAUSE_COLORS[k] for k in domain]))
    order = [str(m) for m in summary[measure].tolist()]
    bars = alt.Chart(long).mark_bar().encode(
        y=alt.Y("measure:N", title=None, sort=order),
        x=alt.X("count:Q", stack="normalize", title="share of records", axis=alt.Axis(format="%")),
        color=color, order=alt.Order("order:Q"),
        tooltip=["measure:N", "outcome:N", "count:Q", "n:Q"])
    cov = summary[[measure, "coverage", "n"]].rename(columns={measure: "measure"})
    cov["label"] = [f"coverage {c:.0%} of {n}" for c, n in zip(cov["coverage"], cov["n"], strict=True)]
    text = alt.Chart(cov).mark_text(align="left", fontSize=10).encode(
        y=alt.Y("measure:N", axis=None, sort=order), text="label:N", x=alt.value(0)).properties(width=130)
    return alt.hconcat(bars.properties(width=420, height=alt.Step(22)), text, spacing=6).properties(
        title=alt.Title(title, subtitle="an abstention is not a zero: it is excluded from the mean and counted by cause"))


def suite_gating_chart(
    tasks: pd.DataFrame,
    *,
    task: str = "task",
    score: str = "score",
    gated: str = "gated_score",
    pass_score: float | None = None,
    aggregate: float | None = None,
    gated_aggregate: float | None = None,
    title: str = "Suite gating: reported score against gating score",
) -> Any:
    """Per-task score beside the gating score (RFC 0246), the pass bar, and the suite aggregates.

    Tasks without a gating score (no trajectory and no fixture miss) show their score only.
    """
    import altair as alt

    tasks = check_frame(tasks, "tasks")
    check_columns(tasks, [task, score, gated], name="tasks")
    _small(tasks, "tasks", "task")
    df = _numeric(tasks, [score, gated], "tasks").rename(columns={task: "task"})
    long = pd.concat([
        pd.DataFrame({"task": df["task"].astype(str), "kind": "reported score", "value": df[score]}),
        pd.DataFrame({"task": df["task"].astype(str), "kind": "gating score", "value": df[gated]}),
    ], ignore_index=True).dropna(subset=["value"])
    if aggregate is not None:
        long = pd.concat([long, pd.DataFrame({"task": ["SUITE (aggregate)"], "kind": ["reported score"],
                                               "value": [float(aggregate)]})], ignore_index=True)
    if gated_aggregate is not None:
        long = pd.concat([long, pd.DataFrame({"task": ["SUITE (aggregate)"], "kind": ["gating score"],
                                               "value": [float(gated_aggregate)]})], ignore_index=True)
    order = [*df["task"].astype(str).tolist(), "SUITE (aggregate)"]
    kinds = ["reported score", "gating score"]
    bars = alt.Chart(long).mark_bar().encode(
        y=alt.Y("task:N", sort=order, title=None),
        yOffset=alt.YOffset("kind:N", sort=kinds),
        x=alt.X("value:Q", scale=alt.Scale(domain=[0, 1]), title="score"),
        color=alt.Color("kind:N", sort=kinds, title=None, scale=alt.Scale(domain=kinds, range=[_MUTED, _ACCENT])),
        tooltip=["task:N", "kind:N", alt.Tooltip("value:Q", format=".3f")])
    text = alt.Chart(long).mark_text(align="left", dx=3, fontSize=9, color="#333333").encode(
        y=alt.Y("task:N", sort=order, title=None), yOffset=alt.YOffset("kind:N", sort=kinds),
        x=alt.X("value:Q", scale=alt.Scale(domain=[0, 1])), text=alt.Text("value:Q", format=".2f"))
    layers: list[Any] = [bars, text]
    if pass_score is not None:
        layers.append(alt.Chart(pd.DataFrame({"x": [float(pass_score)]})).mark_rule(
            color=_WARN, strokeDash=[6, 3], strokeWidth=2).encode(x="x:Q"))
    return alt.layer(*layers).properties(
        width=440, height=alt.Step(13),
        title=alt.Title(title, subtitle="red dashes: passScore; the pass decision reads the gating score (RFC 0246 §B)"))


#: Colours of a trajectory dimension outcome (seed 003): passed, failed, not applicable.
OUTCOME_COLORS: dict[str, str] = {"passed": "#54a24b", "failed": "#e45756", "not_applicable": "#d9d9d9"}


def trajectory_grid_chart(
    frame: pd.DataFrame,
    *,
    case: str = "case_id",
    dimension: str = "dimension",
    outcome: str = "outcome",
    decision: str = "decision",
    dimensions: Sequence[str] | None = None,
    title: str = "Long-horizon trajectories: eight dimensions per case",
) -> Any:
    """Case x dimension grid of outcomes (passed / failed / not applicable), the decision per case.

    ``frame`` is :meth:`evaltk.trajectory.CohortReport.to_frame` (one row per case and
    dimension).  One failing dimension holds a case; the decision is printed beside it.
    """
    import altair as alt

    frame = check_frame(frame, "frame")
    check_columns(frame, [case, dimension, outcome, decision], name="frame")
    _small(frame, "frame", "case x dimension")
    unknown = sorted(set(frame[outcome].astype(str)) - set(OUTCOME_COLORS))
    if unknown:
        raise ValueError(f"`frame` has unknown outcome(s) {unknown}; allowed: {', '.join(OUTCOME_COLORS)}.")
    df = frame[[case, dimension, outcome, decision]].astype(str).set_axis(["case", "dimension", "outcome", "decision"],
                                                                        axis=1)
    dims = list(dimensions) if dimensions else list(dict.fromkeys(df["dimension"]))
    cases = list(dict.fromkeys(df["case"]))
    y = alt.Y("case:N", sort=cases, title=None)
    grid = alt.Chart(df).mark_rect(stroke="white", strokeWidth=2).encode(
        x=alt.X("dimension:N", sort=dims, title=None, axis=alt.Axis(labelAngle=-30, orient="top")),
        y=y,
        color=alt.Color("outcome:N", title=None, scale=alt.Scale(domain=list(OUTCOME_COLORS),
                                                                 range=list(OUTCOME_COLORS.values()))),
        tooltip=["case:N", "dimension:N", "outcome:N"],
    ).properties(width=alt.Step(58), height=alt.Step(26))
    dec = df.drop_duplicates("case")
    words = alt.Chart(dec).mark_text(align="left", fontSize=11, fontWeight=600).encode(
        y=alt.Y("case:N", sort=cases, axis=None), text="decision:N", x=alt.value(0),
        color=alt.Color("decision:N", legend=None, scale=alt.Scale(
            domain=["passed", "safely-abstained", "failed"], range=["#54a24b", "#4c78a8", "#e45756"])),
    ).properties(width=120, height=alt.Step(26), title="decision")
    return alt.hconcat(grid, words, spacing=6).resolve_scale(color="independent").properties(
        title=alt.Title(title, subtitle="one failing dimension holds the case; only 'passed' is promotion-eligible"))


def calibration_chart(agreement: pd.DataFrame, ceilings: pd.DataFrame, *,
                      statistic_title: str = "percent agreement with the human labels") -> Any:
    """One :func:`agreement_chart` per dimension, stacked: each judge's agreement
    (:func:`judge_agreement_table`) against the human-ceiling band and the majority
    baseline of that dimension (:func:`human_ceiling_table`).

    A dimension whose ceiling abstains (no item has two human labels) or that no judge
    answered is drawn as a title that says so, never as a band at 0.
    """
    import altair as alt

    check_columns(check_frame(agreement, "agreement"), ["measure", "judge", "statistic", "ci_low", "ci_high"], name="agreement")
    check_columns(check_frame(ceilings, "ceilings"), ["measure", "statistic", "ci_low", "ci_high", "n_pairable", "baseline"],
                  name="ceilings")
    charts = []
    for c in ceilings.itertuples(index=False):
        sub = agreement[(agreement["measure"] == c.measure) & agreement["statistic"].notna()]
        if pd.isna(c.statistic) or sub.empty:  # type: ignore[arg-type]  # pandas-stubs: a row cell
            why = ("no item has two human labels, so there is no ceiling to draw" if pd.isna(c.statistic)  # type: ignore[arg-type]  # pandas-stubs: a row cell
                   else "no judge agreement to draw")
            charts.append(alt.Chart(pd.DataFrame({"x": [0]})).mark_text().properties(
                title=f"{c.measure}: {why}", height=10))
            continue
        charts.append(agreement_chart(
            sub, ceiling=(c.statistic, c.ci_low, c.ci_high), baseline=None if pd.isna(c.baseline) else c.baseline,  # type: ignore[arg-type]  # pandas-stubs: a row cell
            statistic_title=statistic_title,
            title=f"{c.measure}: judge agreement against the human ceiling ({c.n_pairable} double-labelled items)"))
    return alt.vconcat(*charts)


def gate_chart(dimensions: pd.DataFrame, *, baseline: str, candidate: str) -> Any:
    """The checkpoint gate per dimension (:attr:`evaltk.GateResult.dimensions`): each effect
    of ``candidate`` against ``baseline`` with its interval and the decision beside it."""
    return bias_forest_chart(dimensions.assign(dimension=f"{candidate} − {baseline}"), judge="measure",
                             bias="effect", lean="decision",
                             bias_title="candidate − baseline (gate values, paired by task)",
                             title="Checkpoint gate per dimension",
                             subtitle="left of zero: the candidate is worse; the decision is beside each dimension",
                             estimate_header="effect [interval]", lean_header="decision")
