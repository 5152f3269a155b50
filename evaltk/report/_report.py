"""Charts in the evaltk theme, and the weekly report rendered from parameterised notebooks.

Two halves:

* **Chart builders** take small tidy frames (one row per judge, per task, per
  judge x dimension) and return an :class:`altair.Chart`; the one builder that
  receives a big table (:func:`abstention_chart`, fed a score matrix) aggregates
  it with :func:`evaltk.stats.summarize_frame` before it charts.  Rounding and
  styling happen here and nowhere else in evaltk (STYLE.md, 8).
* **The runner** :func:`render_report` converts each notebook under
  ``notebooks/`` (stored as jupytext ``py:percent``) to ``.ipynb``, executes it
  with papermill on a kernel that runs *this* interpreter, and renders code-free
  HTML with nbconvert (charts inline as SVG, no JavaScript, readable offline)
  into ``reports/<week>/``; the ``weekly`` notebook becomes ``index.html``.

``evaltk report`` is the command-line face of :func:`render_report`.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import html
import json
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError, UnreadableInput
from ..stats import summarize_frame
from ..values import CAUSES

__all__ = [
    "THEME_NAME",
    "CAUSE_COLORS",
    "use_theme",
    "chart_to_svg",
    "judge_frontier_chart",
    "judge_accuracy_chart",
    "bias_forest_chart",
    "agreement_chart",
    "confusion_heatmap",
    "abstention_chart",
    "suite_gating_chart",
    "trajectory_grid_chart",
    "OUTCOME_COLORS",
    "format_interval",
    "DataSources",
    "data_sources",
    "demo_data",
    "example_path",
    "judgebench_presented",
    "check_params",
    "current_week",
    "file_digest",
    "Provenance",
    "provenance",
    "NOTEBOOKS",
    "notebooks_dir",
    "NotebookFailure",
    "ReportFailed",
    "render_report",
]

THEME_NAME = "evaltk"

#: One colour per outcome in abstention charts: valued first, then the four causes.
CAUSE_COLORS: dict[str, str] = {
    "valued": "#4c78a8",
    "not_applicable": "#9d9d9d",
    "missing_evidence": "#e45756",
    "not_implemented": "#f2cf5b",
    "abstained": "#b279a2",
}

_ACCENT = "#4c78a8"
_MUTED = "#9d9d9d"
_WARN = "#e45756"
_BAND = "#72b7b2"
_MAX_CHART_ROWS = 500  # builders chart aggregates; more rows than this means "aggregate first"


# --------------------------------------------------------------------------- theme


def _theme_config() -> dict[str, Any]:
    font = "DejaVu Sans, Helvetica, Arial, sans-serif"
    return {
        "config": {
            "font": font,
            "background": "white",
            "view": {"continuousWidth": 460, "continuousHeight": 260, "stroke": None},
            "title": {"anchor": "start", "fontSize": 14, "fontWeight": 600, "subtitleFontSize": 11,
                      "subtitleColor": "#555555", "offset": 8},
            "axis": {"labelFontSize": 11, "titleFontSize": 12, "titleFontWeight": 500, "labelLimit": 320,
                     "gridColor": "#eeeeee", "domainColor": "#888888", "tickColor": "#888888"},
            "legend": {"labelFontSize": 11, "titleFontSize": 11, "orient": "right"},
            "header": {"labelFontSize": 12, "titleFontSize": 12},
            "range": {"category": ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756",
                                   "#72b7b2", "#eeca3b", "#ff9da6", "#9d755d", "#bab0ac"]},
            "point": {"size": 70, "filled": True},
            "text": {"fontSize": 11},
        }
    }


def use_theme(*, svg: bool = True) -> None:
    """Register and enable the evaltk altair theme; render charts as inline SVG.

    Called once at the top of every notebook.  With ``svg=True`` (the default)
    altair's ``svg`` renderer is enabled, so an executed notebook stores each
    chart as ``image/svg+xml`` (converted by vl-convert): the rendered HTML needs
    no JavaScript and reads offline.  Also sets pandas' display options so report
    tables show whole cells (``display.max_colwidth`` None, up to 200 rows).

    Examples
    --------
    >>> use_theme()
    >>> import altair as alt
    >>> alt.theme.active
    'evaltk'
    """
    import altair as alt

    if THEME_NAME not in alt.theme.names():
        alt.theme.register(THEME_NAME, enable=False)(_theme_config)
    alt.theme.enable(THEME_NAME)
    if svg:
        alt.renderers.enable("svg")
    # tables in a report show whole sentences (reasons, verdicts), never "..."
    pd.set_option("display.max_colwidth", None)
    pd.set_option("display.max_rows", 200)


def chart_to_svg(chart: Any) -> str:
    """The SVG text of an altair chart (vl-convert, no browser), themed like the report."""
    import vl_convert as vlc

    use_theme(svg=False)
    return vlc.vegalite_to_svg(chart.to_dict())


# --------------------------------------------------------------------------- validation helpers


def _frame(data: Any, name: str) -> pd.DataFrame:
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"`{name}` must be a pandas DataFrame; got {type(data).__name__}.")
    return data


def _need(frame: pd.DataFrame, cols: Sequence[str | None], name: str) -> None:
    missing = [c for c in cols if c is not None and c not in frame.columns]
    if missing:
        raise ValueError(
            f"`{name}` lacks column(s) {', '.join(map(repr, missing))}; "
            f"it has {', '.join(map(repr, frame.columns))}."
        )


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


# --------------------------------------------------------------------------- charts


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
    accuracy_title: str = "accuracy against human labels",
    cost_title: str = "cost per item",
    latency_title: str = "latency p50 (ms)",
    title: str = "Judge selection: accuracy against cost",
) -> Any:
    """Accuracy against cost with interval bars, latency as point size, the frontier drawn.

    Dominated judges are faded; canary-rejected judges (``canary_rejected`` column
    true) are drawn as red crosses whatever their place on the frontier.

    Parameters
    ----------
    frame : DataFrame
        One row per judge with the named columns (``on_frontier`` from
        :func:`evaltk.selection.select_judges` or :func:`evaltk.selection.pareto_frontier`).

    Returns
    -------
    altair.Chart
    """
    import altair as alt

    frame = _frame(frame, "frame")
    _need(frame, [judge, accuracy, ci_low, ci_high, cost, latency, on_frontier, canary_rejected], "frame")
    _small(frame, "frame", "judge")
    df = _numeric(frame, [accuracy, ci_low, ci_high, cost, latency], "frame")
    if df[cost].isna().any():
        bad = df.loc[df[cost].isna(), judge].tolist()
        raise ValueError(f"`frame` has no {cost!r} for judge(s) {bad}; a frontier needs a cost per judge.")
    df = df.rename(columns={judge: "judge", accuracy: "accuracy", ci_low: "ci_low",
                            ci_high: "ci_high", cost: "cost"})
    df["latency"] = df[latency] if latency else np.nan
    df["status"] = np.where(df[on_frontier].astype(bool), "on the frontier", "dominated")
    if canary_rejected is not None:
        df.loc[df[canary_rejected].astype(bool), "status"] = "rejected by canary"
    df = df[["judge", "accuracy", "ci_low", "ci_high", "cost", "latency", "status"]]
    positive = (df["cost"] > 0).all()
    log = bool(positive and df["cost"].max() / df["cost"].min() > 10)
    cmin, cmax = float(df["cost"].min()), float(df["cost"].max())
    xscale = (alt.Scale(type="log", domain=[cmin / 1.6, cmax * 2.5], nice=False) if log
              else alt.Scale(zero=False, padding=20))
    x = alt.X("cost:Q", title=cost_title + (" (log scale)" if log else ""), scale=xscale)
    domain = ["on the frontier", "dominated", "rejected by canary"]
    color = alt.Color("status:N", title=None, scale=alt.Scale(domain=domain, range=[_ACCENT, _MUTED, _WARN]))
    shape = alt.Shape("status:N", title=None, scale=alt.Scale(domain=domain, range=["circle", "circle", "cross"]))
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
               alt.Tooltip("ci_high:Q", format=".3f"), alt.Tooltip("cost:Q", format=".4g"), "status:N"]
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
    return alt.layer(line, bars, points, labels).properties(
        title=alt.Title(title, subtitle="bars: confidence interval; dashed line: Pareto frontier on point estimates")
    )


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

    frame = _frame(frame, "frame")
    _need(frame, [judge, accuracy, ci_low, ci_high, coverage], "frame")
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

    frame = _frame(frame, "frame")
    _need(frame, [judge, dimension, bias, ci_low, ci_high, lean], "frame")
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

    frame = _frame(frame, "frame")
    _need(frame, [judge, statistic, ci_low, ci_high], "frame")
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

    frame = _frame(frame, "frame")
    _need(frame, [truth, predicted, count, facet], "frame")
    _small(frame, "frame", "cell")
    df = _numeric(frame, [count], "frame")
    keys = [facet] if facet else []
    df = df.groupby([*keys, truth, predicted], as_index=False, observed=True)[count].sum()
    row_tot = df.groupby([*keys, truth], observed=True)[count].transform("sum")
    df["share"] = np.where(row_tot > 0, df[count] / row_tot.where(row_tot > 0, 1), 0.0)
    df = df.rename(columns={truth: "truth", predicted: "predicted", count: "n"})
    if facet:
        df = df.rename(columns={facet: "facet"})
    df["truth"] = df["truth"].astype(str)
    df["predicted"] = df["predicted"].astype(str)
    cats = list(order) if order else sorted(set(df["truth"]) | set(df["predicted"]))
    base = alt.Chart().encode(
        x=alt.X("predicted:N", sort=cats, title="judge said", axis=alt.Axis(labelAngle=0)),
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
    scores: pd.DataFrame,
    *,
    measure: str = "measure",
    value: str = "value",
    cause: str = "cause",
    title: str = "Coverage: valued scores and abstentions per cause",
) -> Any:
    """Counts per cause per dimension, with coverage; aggregates the score table first.

    ``scores`` may be the whole long score matrix (``trace_id, measure, value,
    cause``): it is summarised with :func:`evaltk.stats.summarize_frame` (one row
    per measure) before anything is charted.
    """
    import altair as alt

    scores = _frame(scores, "scores")
    _need(scores, [measure, value, cause], "scores")
    if len(scores) == 0:
        raise ValueError("`scores` is empty: nothing to chart.")
    summary = summarize_frame(scores, by=measure, value=value, cause=cause)
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

    tasks = _frame(tasks, "tasks")
    _need(tasks, [task, score, gated], "tasks")
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

    frame = _frame(frame, "frame")
    _need(frame, [case, dimension, outcome, decision], "frame")
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


# --------------------------------------------------------------------------- data sources


@dataclass(frozen=True)
class DataSources:
    """What a notebook found under its ``data_dir`` (every path absolute, or None).

    Attributes
    ----------
    data_dir : str
        The folder searched ("" when none was given: demo data only).
    demo : Path or None
        A folder written by :func:`evaltk.datasets.write_demo` (``data_dir`` itself
        or ``data_dir/demo``); otherwise the demo corpus is generated in memory.
    agentrewardbench : Path or None
        ``agentrewardbench/annotations.csv``.
    agentrewardbench_leaderboard : Path or None
        ``agentrewardbench/judge-leaderboard.csv`` (the published table).
    judgebench : Path or None
        ``judgebench/judgments.csv``.
    suite_run : Path or None
        ``suite/run.json`` (or ``.yaml``) under ``data_dir``; else the example run
        shipped with evaltk (``data/examples/suite/run.json``) when present.
    trajectory : tuple of Path (lock, results, design or None), or None
        ``trajectory/lock.json`` and ``trajectory/results.json`` (and
        ``trajectory/design.json``) under ``data_dir``; else the shipped example
        (``data/examples/trajectory/``, the cohort that holds) when present.
    """

    data_dir: str
    demo: Path | None
    agentrewardbench: Path | None
    agentrewardbench_leaderboard: Path | None
    judgebench: Path | None
    suite_run: Path | None
    trajectory: tuple[Path, Path, Path | None] | None = None

    def describe(self) -> pd.DataFrame:
        """One row per source: what it is, and the file or "generated in memory"."""
        rows = [
            ("demo corpus", str(self.demo) if self.demo else "generated in memory (evaltk.datasets.make_demo)"),
            ("AgentRewardBench annotations", str(self.agentrewardbench) if self.agentrewardbench else "not found"),
            ("JudgeBench judgments", str(self.judgebench) if self.judgebench else "not found"),
            ("suite run", str(self.suite_run) if self.suite_run else "not found"),
            ("trajectory lock and results", ", ".join(str(p) for p in self.trajectory if p)
             if self.trajectory else "not found"),
        ]
        return pd.DataFrame(rows, columns=["source", "where"])


_DEMO_REQUIRED = ("traces.jsonl", "answers.csv", "labels.csv")


def _is_demo_dir(p: Path) -> bool:
    return p.is_dir() and all((p / f).is_file() for f in _DEMO_REQUIRED)


def example_path(*parts: str) -> Path | None:
    """A file shipped under ``data/examples/`` (source checkout) or ``evaltk/data/examples/`` (package)."""
    here = Path(__file__).resolve().parent.parent
    for root in (here / "data" / "examples", here.parent / "data" / "examples"):
        p = root.joinpath(*parts)
        if p.is_file():
            return p
    return None


def data_sources(data_dir: str = "") -> DataSources:
    """Find the data a report can use under ``data_dir`` ("" = the embedded demo only).

    Recognised: a demo folder (``traces.jsonl``, ``answers.csv``, ``labels.csv``)
    as ``data_dir`` or ``data_dir/demo``; ``agentrewardbench/annotations.csv``;
    ``judgebench/judgments.csv``; ``suite/run.json`` or ``suite/run.yaml``;
    ``trajectory/lock.json`` with ``trajectory/results.json`` (and ``design.json``).

    Raises
    ------
    evaltk.errors.UnreadableInput
        ``data_dir`` is not a folder, or holds none of the recognised files (the
        message lists what was looked for).
    """
    if not data_dir:
        return DataSources("", None, None, None, None, example_path("suite", "run.json"), _example_trajectory())
    root = Path(data_dir).expanduser().resolve()
    if not root.is_dir():
        raise UnreadableInput(f"no such folder: {data_dir!r}.", field="data_dir")
    demo = root if _is_demo_dir(root) else (root / "demo" if _is_demo_dir(root / "demo") else None)

    def f(*parts: str) -> Path | None:
        p = root.joinpath(*parts)
        return p if p.is_file() else None

    arb, lb = f("agentrewardbench", "annotations.csv"), f("agentrewardbench", "judge-leaderboard.csv")
    jb = f("judgebench", "judgments.csv")
    suite = f("suite", "run.json") or f("suite", "run.yaml")
    lock, results = f("trajectory", "lock.json"), f("trajectory", "results.json")
    traj = (lock, results, f("trajectory", "design.json")) if lock and results else None
    if not any([demo, arb, jb, suite, traj]):
        raise UnreadableInput(
            f"{root} holds none of the data the report reads: a demo folder ({', '.join(_DEMO_REQUIRED)}, "
            "in it or in demo/), agentrewardbench/annotations.csv, judgebench/judgments.csv, "
            "suite/run.json, trajectory/lock.json with trajectory/results.json.", field="data_dir")
    return DataSources(str(root), demo, arb, lb, jb, suite or example_path("suite", "run.json"),
                       traj or _example_trajectory())


def _example_trajectory() -> tuple[Path, Path, Path | None] | None:
    lock, results = example_path("trajectory", "lock.json"), example_path("trajectory", "results-hold.json")
    return (lock, results, example_path("trajectory", "design.json")) if lock and results else None


def demo_data(sources: DataSources, *, n_traces: int = 3000, seed: int = 0) -> tuple[Any, list[Path], str]:
    """The demo corpus for a notebook: ``(DemoData, input files, a sentence saying where it came from)``.

    Read from ``sources.demo`` when there is one (its files are the inputs whose
    digests the report records); otherwise generated in memory by
    :func:`evaltk.datasets.make_demo` with ``n_traces`` and ``seed`` (deterministic;
    no input file).
    """
    from ..data import _datasets as datasets

    if sources.demo is not None:
        d = datasets.load_demo(sources.demo)
        files = sorted(p for p in sources.demo.iterdir() if p.is_file() and p.name in set(datasets.DEMO_FILES.values()))
        return d, files, f"demo corpus read from {sources.demo}"
    d = datasets.make_demo(n_traces=n_traces, seed=seed)
    note = (f"demo corpus generated in memory: evaltk.datasets.make_demo(n_traces={n_traces}, seed={seed}), "
            f"generator version {datasets.GENERATOR_VERSION}; synthetic data with planted judge behaviours")
    return d, [], note


def judgebench_presented(judgments: pd.DataFrame) -> pd.DataFrame:
    """JudgeBench judgments in the frame the judge saw, for position bias.

    Trial 0 shows the pair in its original order, trial 1 swapped (the data's
    ``decision`` is already in the presented frame).  The label is flipped for
    trial 1 so that ``label_presented`` says which *shown* position is better.
    A judge with no position bias says ``A>B`` (first shown wins) as often as
    ``label_presented`` does; saying it more often is a first-position bias.

    Parameters
    ----------
    judgments : DataFrame
        From :func:`evaltk.datasets.load_judgebench` (``judge_model, pair_id,
        trial, label, decision``).

    Returns
    -------
    DataFrame
        ``judge, pair_id, trial, decision, label_presented``; ``decision`` keeps
        ``A=B`` and missing verdicts (abstentions for the bias statistics).

    Examples
    --------
    >>> j = pd.DataFrame({"judge_model": ["m", "m"], "pair_id": ["p", "p"], "trial": [0, 1],
    ...                   "label": ["A>B", "A>B"], "decision": ["A>B", "A>B"]})
    >>> judgebench_presented(j)[["trial", "decision", "label_presented"]].values.tolist()
    [[0, 'A>B', 'A>B'], [1, 'A>B', 'B>A']]
    """
    judgments = _frame(judgments, "judgments")
    _need(judgments, ["judge_model", "pair_id", "trial", "label", "decision"], "judgments")
    bad = ~judgments["trial"].isin([0, 1])
    if bad.any():
        raise InputError(f"trial must be 0 or 1; got {judgments.loc[bad, 'trial'].iloc[0]!r}.", field="trial")
    flip = {"A>B": "B>A", "B>A": "A>B"}
    label = judgments["label"].astype(str)
    presented = np.where(judgments["trial"].to_numpy() == 1, label.map(flip), label)
    return pd.DataFrame({"judge": judgments["judge_model"].to_numpy(), "pair_id": judgments["pair_id"].to_numpy(),
                         "trial": judgments["trial"].to_numpy(), "decision": judgments["decision"].to_numpy(),
                         "label_presented": presented})


# --------------------------------------------------------------------------- notebook parameters

_WEEK_RE = re.compile(r"^(\d{4})-W(\d{2})$")


def current_week(today: _dt.date | None = None) -> str:
    """The ISO week of ``today`` as ``YYYY-Www``.

    Examples
    --------
    >>> current_week(_dt.date(2026, 11, 30))
    '2026-W49'
    """
    y, w, _ = (today or _dt.date.today()).isocalendar()
    return f"{y}-W{w:02d}"


def _check_week(week: Any) -> str:
    if week is None or week == "":
        return current_week()
    if not isinstance(week, str) or not _WEEK_RE.match(week):
        raise InputError(f"must be an ISO week like '2026-W48'; got {week!r}.", field="week")
    y, w = map(int, _WEEK_RE.match(week).groups())  # type: ignore[union-attr]
    last = _dt.date(y, 12, 28).isocalendar()[1]
    if not 1 <= w <= last:
        raise InputError(f"week {w} does not exist in {y} (it has {last} ISO weeks); got {week!r}.", field="week")
    return week


def _check_str_list(name: str, v: Any) -> list[str]:
    if isinstance(v, str) or not isinstance(v, list | tuple) or not all(isinstance(x, str) and x for x in v):
        raise InputError(f"must be a list of names (an empty list means all); got {v!r}.", field=name)
    return list(v)


def _check_unit(name: str, v: Any, *, open_: bool) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(float(v)):
        raise InputError(f"must be a number; got {v!r}.", field=name)
    v = float(v)
    ok = 0.0 < v < 1.0 if open_ else 0.0 <= v <= 1.0
    if not ok:
        raise InputError(f"must be in {'(0, 1)' if open_ else '[0, 1]'}; got {v!r}.", field=name)
    return v


def check_params(**params: Any) -> dict[str, Any]:
    """Validate a notebook's parameters and return them normalised (for the record).

    Every notebook calls this right after its ``parameters`` cell, so a bad value
    stops the notebook in its second cell with a message that names the
    parameter.  Known names are checked by rule; any other name must hold a
    literal (str, number, bool, None, or a list / dict of those).

    Rules: ``week`` an ISO week ``YYYY-Www`` ("" means the current week);
    ``data_dir`` "" (embedded demo data) or an existing folder; ``suite_run``,
    ``host_summary`` and names ending in ``_path`` / ``_file`` "" or an existing file;
    ``confidence_level`` in (0, 1); ``seed`` and ``n_resamples`` non-negative /
    positive ints; ``judges``, ``dimensions`` lists of names; ``thresholds`` and
    ``judge_costs`` mappings of name to number (thresholds in [0, 1]); names
    ending in ``_threshold`` or ``_score`` numbers in [0, 1].

    Raises
    ------
    evaltk.errors.InputError
        ``field`` names the parameter.

    Examples
    --------
    >>> check_params(week="2026-W48", confidence_level=0.9)["confidence_level"]
    0.9
    >>> check_params(confidence_level=1.5)
    Traceback (most recent call last):
    ...
    evaltk.errors.InputError: field `confidence_level`: must be in (0, 1); got 1.5.
    """
    out: dict[str, Any] = {}
    for name, v in params.items():
        if name == "week":
            out[name] = _check_week(v)
        elif name == "data_dir":
            if v is None or v == "":
                out[name] = ""
            elif not isinstance(v, str):
                raise InputError(f"must be a folder path or '' for the demo data; got {v!r}.", field=name)
            else:
                p = Path(v).expanduser()
                if not p.is_dir():
                    raise UnreadableInput(f"no such folder: {v!r}.", field=name)
                out[name] = str(p.resolve())
        elif _is_path_param(name) and name != "data_dir":
            if v is None or v == "":
                out[name] = ""
            elif not isinstance(v, str):
                raise InputError(f"must be a file path or ''; got {v!r}.", field=name)
            elif not Path(v).expanduser().is_file():
                raise UnreadableInput(f"no such file: {v!r}.", field=name)
            else:
                out[name] = str(Path(v).expanduser().resolve())
        elif name == "confidence_level":
            out[name] = _check_unit(name, v, open_=True)
        elif name in ("seed",):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InputError(f"must be a non-negative int; got {v!r}.", field=name)
            out[name] = v
        elif name.startswith("n_") or name.startswith("max_") or name.startswith("min_"):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise InputError(f"must be a positive int; got {v!r}.", field=name)
            out[name] = v
        elif name in ("judges", "dimensions", "measures", "tasks"):
            out[name] = _check_str_list(name, v)
        elif name in ("thresholds", "judge_costs", "judge_latency_ms"):
            if not isinstance(v, Mapping):
                raise InputError(f"must be a mapping of name to number; got {v!r}.", field=name)
            d = {}
            for k, x in v.items():
                if name == "thresholds":
                    d[str(k)] = _check_unit(f"{name}.{k}", x, open_=False)
                else:
                    if isinstance(x, bool) or not isinstance(x, int | float) or x < 0:
                        raise InputError(f"must be a non-negative number; got {x!r}.", field=f"{name}.{k}")
                    d[str(k)] = float(x)
            out[name] = d
        elif name.endswith("_threshold") or name.endswith("_score"):
            out[name] = _check_unit(name, v, open_=False)
        else:
            _check_literal(name, v)
            out[name] = v
    return out


def _check_literal(name: str, v: Any) -> None:
    if v is None or isinstance(v, str | bool | int | float):
        return
    if isinstance(v, list | tuple):
        for i, x in enumerate(v):
            _check_literal(f"{name}[{i}]", x)
        return
    if isinstance(v, Mapping):
        for k, x in v.items():
            if not isinstance(k, str):
                raise InputError(f"mapping keys must be strings; got {k!r}.", field=name)
            _check_literal(f"{name}.{k}", x)
        return
    raise InputError(f"must be a literal (text, number, bool, list or mapping); got {type(v).__name__}.", field=name)


# --------------------------------------------------------------------------- provenance

_PROVENANCE_MIME = "application/vnd.evaltk.provenance+json"


def file_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes, as hex."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as e:
        raise UnreadableInput(f"cannot read input file: {e.strerror}.", file=str(path)) from None
    return h.hexdigest()


@dataclass(frozen=True)
class Provenance:
    """What produced a report: parameters, evaltk version, and a SHA-256 per input file.

    Displayed in a notebook it renders as a table (HTML) and carries the same
    record as JSON under the ``application/vnd.evaltk.provenance+json`` mime type,
    which :func:`render_report` collects into ``run.json``.
    """

    notebook: str
    parameters: Mapping[str, Any]
    inputs: Mapping[str, str]  # path -> sha256
    evaltk_version: str
    python: str
    generated_at: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "notebook": self.notebook,
            "evaltk_version": self.evaltk_version,
            "python": self.python,
            "generated_at": self.generated_at,
            "parameters": dict(self.parameters),
            "inputs": [{"path": p, "sha256": d} for p, d in self.inputs.items()],
            "notes": list(self.notes),
        }

    def to_frame(self) -> pd.DataFrame:
        rows = [("evaltk version", self.evaltk_version), ("python", self.python),
                ("generated at (UTC)", self.generated_at)]
        rows += [(f"parameter `{k}`", json.dumps(v, default=str)) for k, v in self.parameters.items()]
        rows += [(f"input {p}", f"sha256 {d}") for p, d in self.inputs.items()]
        rows += [("note", n) for n in self.notes]
        return pd.DataFrame(rows, columns=["item", "value"])

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><td style='text-align:left'>{html.escape(str(a))}</td>"
            f"<td style='text-align:left;font-family:monospace'>{html.escape(str(b))}</td></tr>"
            for a, b in self.to_frame().itertuples(index=False)
        )
        return f"<table class='evaltk-provenance'><thead><tr><th>item</th><th>value</th></tr></thead><tbody>{body}</tbody></table>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"text/html": self._repr_html_(), "text/plain": self.to_frame().to_string(index=False),
                _PROVENANCE_MIME: self.to_dict()}


def provenance(notebook: str, parameters: Mapping[str, Any], inputs: Sequence[str | os.PathLike[str]] = (),
               *, notes: Sequence[str] = ()) -> Provenance:
    """Record a notebook's parameters, the evaltk version and the SHA-256 of each input file.

    Examples
    --------
    >>> p = provenance("weekly", {"week": "2026-W48"})
    >>> p.to_dict()["parameters"]
    {'week': '2026-W48'}
    """
    from .. import __version__

    digests: dict[str, str] = {}
    for p in inputs:
        digests[str(Path(p))] = file_digest(p)
    now = _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()
    return Provenance(notebook=notebook, parameters=dict(parameters), inputs=digests,
                      evaltk_version=__version__, python=sys.version.split()[0], generated_at=now,
                      notes=tuple(notes))


# --------------------------------------------------------------------------- the runner

#: The notebooks, in the order they run; ``weekly`` last (it becomes index.html).
NOTEBOOKS: tuple[str, ...] = ("calibration", "judge_selection", "direction_of_error", "suite_gating", "weekly")
_INDEX = "weekly"
_KERNEL_NAME = "evaltk-report"


def notebooks_dir() -> Path:
    """Where the stored notebooks (``<name>.py``, jupytext py:percent) are.

    In order: ``$EVALTK_NOTEBOOKS``; ``evaltk/notebooks/`` inside the installed
    package (package data of a non-editable install); ``notebooks/`` beside the
    package (a source checkout or an editable install).
    """
    env = os.environ.get("EVALTK_NOTEBOOKS")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve().parent.parent
    candidates += [here / "notebooks", here.parent / "notebooks"]
    for c in candidates:
        if c.is_dir() and any((c / f"{n}.py").is_file() for n in NOTEBOOKS):
            return c
    raise UnreadableInput(
        "cannot find the report notebooks (looked in "
        + ", ".join(str(c) for c in candidates)
        + "); set EVALTK_NOTEBOOKS to the folder holding weekly.py and the others."
    )


@dataclass(frozen=True)
class NotebookFailure:
    """One notebook that did not run to the end: which cell, and the error."""

    notebook: str
    cell: int | None
    execution_count: int | None
    cell_source: str
    error_name: str
    error_value: str
    section: str = ""

    def __str__(self) -> str:
        where = f"cell {self.cell}" if self.cell is not None else "before any cell ran"
        if self.execution_count is not None:
            where += f" (In [{self.execution_count}])"
        if self.section:
            where += f" under '{self.section}'"
        first = next((ln.strip() for ln in self.cell_source.splitlines() if ln.strip()), "")
        code = f" `{first[:80]}`" if first else ""
        return f"notebook `{self.notebook}` failed in {where}{code}: {self.error_name}: {self.error_value}"


class ReportFailed(Exception):
    """One or more notebooks failed; ``failures`` names each notebook, cell and error."""

    def __init__(self, failures: Sequence[NotebookFailure], out_dir: Path) -> None:
        self.failures = list(failures)
        self.out_dir = out_dir
        super().__init__("; ".join(str(f) for f in self.failures))


@contextlib.contextmanager
def _report_kernel() -> Iterator[str]:
    """A kernelspec that runs this interpreter, in a temporary JUPYTER_PATH entry.

    Whatever kernels the machine (or the user's ~/.local/share/jupyter) has, the
    notebooks run on the Python that runs evaltk, with evaltk importable.
    """
    try:
        from ipykernel.kernelspec import write_kernel_spec
    except ImportError:  # pragma: no cover - depends on the environment
        raise InputError(
            "`evaltk report` needs the notebooks extra (ipykernel, nbconvert, jupytext): "
            "pip install 'evaltk[notebooks]'."
        ) from None
    old = os.environ.get("JUPYTER_PATH")
    with tempfile.TemporaryDirectory(prefix="evaltk-kernel-") as tmp:
        kdir = Path(tmp) / "kernels" / _KERNEL_NAME
        write_kernel_spec(kdir, overrides={"display_name": f"evaltk report (Python {sys.version.split()[0]})"})
        spec = json.loads((kdir / "kernel.json").read_text())
        spec["argv"][0] = sys.executable
        spec["argv"].append("--IPKernelApp.log_level=ERROR")  # no transport chatter on the terminal
        (kdir / "kernel.json").write_text(json.dumps(spec))
        os.environ["JUPYTER_PATH"] = tmp + (os.pathsep + old if old else "")
        try:
            yield _KERNEL_NAME
        finally:
            if old is None:
                os.environ.pop("JUPYTER_PATH", None)
            else:
                os.environ["JUPYTER_PATH"] = old


_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{% block data_svg scoped -%}
<div class="jp-RenderedSVG jp-OutputArea-output {{ extra_class }}" data-mime-type="image/svg+xml">
{{ output.data['image/svg+xml'] }}
</div>
{%- endblock data_svg %}
{% block extra_css %}
<style type="text/css">
  main { max-width: 1100px; margin: 0 auto; }
  .jp-RenderedSVG svg { max-width: 100%; height: auto; }
  table.dataframe, table.evaltk-provenance { font-size: 12px; }
  table.evaltk-provenance td { word-break: break-all; }
</style>
{% endblock extra_css %}
"""


def _html_exporter() -> Any:
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    return HTMLExporter(
        template_name="lab",
        extra_loaders=[DictLoader({"evaltk_report.html.j2": _TEMPLATE})],
        template_file="evaltk_report.html.j2",
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        embed_images=True,
    )


def _load_params(params: Mapping[str, Any] | str | os.PathLike[str] | None) -> tuple[dict[str, Any], str | None]:
    if params is None:
        return {}, None
    if isinstance(params, Mapping):
        return dict(params), None
    path = Path(params)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UnreadableInput("no such parameters file.", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise UnreadableInput(f"cannot read the parameters file: {e}.", file=str(path)) from None
    import yaml

    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise UnreadableInput(f"not valid {'JSON' if path.suffix.lower() == '.json' else 'YAML'}: {e}",
                              file=str(path)) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError("must be a mapping of parameter names to values (or of notebook names "
                         "to such mappings).", file=str(path))
    return data, str(path)


def _plan_parameters(
    declared: Mapping[str, Mapping[str, Any]], given: Mapping[str, Any], source: str | None
) -> dict[str, dict[str, Any]]:
    """Split ``given`` into per-notebook parameters; refuse names no notebook declares."""
    per: dict[str, dict[str, Any]] = {nb: {} for nb in declared}
    known = set().union(*[set(d) for d in declared.values()]) if declared else set()
    for key, v in given.items():
        if key in declared and isinstance(v, Mapping):
            for k2, v2 in v.items():
                if k2 not in declared[key]:
                    raise InputError(
                        f"notebook `{key}` has no parameter `{k2}`; it takes: {', '.join(sorted(declared[key]))}.",
                        file=source, field=f"{key}.{k2}")
                _check_literal(f"{key}.{k2}", v2)
                per[key][k2] = v2
        elif key in known:
            _check_literal(key, v)
            for nb, names in declared.items():
                if key in names and key not in per[nb]:
                    per[nb][key] = v
        else:
            raise InputError(
                f"no notebook takes a parameter `{key}`; known parameters: {', '.join(sorted(known))}; "
                f"notebook sections: {', '.join(declared)}.", file=source, field=key)
    # notebook sections win over top-level values
    for key, v in given.items():
        if key in declared and isinstance(v, Mapping):
            per[key].update(v)
    return per


def render_report(
    *,
    week: str | None = None,
    data: str | os.PathLike[str] | None = None,
    params: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] = "reports",
    notebooks: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
    start_timeout: int = 120,
) -> Path:
    """Execute the report notebooks with papermill and render code-free HTML.

    Parameters
    ----------
    week : str, optional
        ISO week ``YYYY-Www`` labelling the report (default: the current week).
        Passed to every notebook as ``week``; the output folder is ``out/<week>``.
    data : path, optional
        A data folder passed to every notebook as ``data_dir`` (default: the
        embedded demo data).  Notebooks recognise, under it,
        ``agentrewardbench/annotations.csv`` and ``judgebench/judgments.csv``.
    params : mapping or path to a YAML/JSON file, optional
        Parameter values: top-level names apply to every notebook that declares
        them; a key naming a notebook (``calibration: {confidence_level: 0.9}``)
        applies to that notebook only.  A name no notebook declares is an error.
    out : path
        Root folder of the reports.
    notebooks : sequence of str, optional
        Subset of :data:`NOTEBOOKS` to run (default all).
    progress : callable, optional
        Called with one line of text per step (the CLI prints it on stderr).

    Returns
    -------
    Path
        ``out/<week>/index.html`` (or the first rendered page when ``weekly`` is not run).

    Raises
    ------
    ReportFailed
        When a notebook fails; every other notebook still runs, the failing one is
        rendered too (its error is visible in its page), and ``run.json`` records it.
    InputError, UnreadableInput
        Bad ``week``, ``data`` or ``params`` (before any notebook runs).
    """
    import jupytext
    import nbformat
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    from .. import __version__

    say = progress or (lambda _msg: None)
    week = _check_week(week)
    data_dir = ""
    if data is not None and str(data) != "":
        data_dir = check_params(data_dir=str(data))["data_dir"]
    given, params_file = _load_params(params)
    names = list(NOTEBOOKS if notebooks is None else notebooks)
    unknown = [n for n in names if n not in NOTEBOOKS]
    if unknown or not names:
        raise InputError(f"unknown notebook(s) {unknown}; choose among {', '.join(NOTEBOOKS)}.", field="notebooks")
    src_dir = notebooks_dir()
    out_dir = Path(out) / week
    nb_dir = out_dir / "notebooks"
    nb_dir.mkdir(parents=True, exist_ok=True)

    # 1. convert every notebook and read its declared parameters
    converted: dict[str, Path] = {}
    declared: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="evaltk-report-") as tmp:
        for name in names:
            src = src_dir / f"{name}.py"
            if not src.is_file():
                raise UnreadableInput("notebook source is missing.", file=str(src))
            nb = jupytext.read(src, fmt="py:percent")
            nb.metadata["kernelspec"] = {"name": _KERNEL_NAME, "display_name": "evaltk report", "language": "python"}
            nb.metadata.setdefault("language_info", {"name": "python"})
            ipynb = Path(tmp) / f"{name}.ipynb"
            nbformat.write(nb, ipynb)
            converted[name] = ipynb
            declared[name] = pm.inspect_notebook(str(ipynb))
            if not declared[name]:
                raise InputError(f"notebook `{name}` has no cell tagged `parameters`.", file=str(src))
        per = _plan_parameters(declared, given, params_file)
        # relative paths resolve inside the parameters file's folder (or the current folder for a
        # mapping): the kernels run with out/<week> as their working folder
        base = Path(params_file).resolve().parent if params_file else Path.cwd()
        for values in per.values():
            for k, v in values.items():
                if _is_path_param(k) and isinstance(v, str) and v and not Path(v).expanduser().is_absolute():
                    values[k] = str((base / v).resolve())
        for name in names:
            if "week" in declared[name]:
                per[name].setdefault("week", week)
            if "data_dir" in declared[name] and data_dir:
                per[name].setdefault("data_dir", data_dir)
            try:  # fail fast, before any kernel starts; the notebooks check again themselves
                check_params(**per[name])
            except InputError as e:
                raise type(e)(f"notebook `{name}`: {e.detail}", file=params_file, field=e.field) from None

        # 2. execute and render
        failures: list[NotebookFailure] = []
        records: dict[str, Any] = {}
        exporter = _html_exporter()
        with _report_kernel() as kernel:
            for i, name in enumerate(names, 1):
                t0 = time.monotonic()
                say(f"[{i}/{len(names)}] {name}: executing")
                executed = nb_dir / f"{name}.ipynb"
                failure: NotebookFailure | None = None
                try:
                    pm.execute_notebook(
                        str(converted[name]), str(executed), parameters=per[name], kernel_name=kernel,
                        progress_bar=False, log_output=False, cwd=str(out_dir), start_timeout=start_timeout,
                    )
                except PapermillExecutionError as e:
                    failure = NotebookFailure(name, int(e.cell_index), e.exec_count, e.source or "",
                                              e.ename, str(e.evalue))
                except Exception as e:  # kernel died, could not start, ...
                    failure = NotebookFailure(name, None, None, "", type(e).__name__, str(e))
                page = out_dir / ("index.html" if name == _INDEX else f"{name}.html")
                if executed.is_file():
                    result = nbformat.read(executed, as_version=4)
                    if failure is not None and failure.cell is not None:
                        failure = replace(failure, section=_section_of(result, failure.cell))
                    body, _ = exporter.from_notebook_node(result, resources={"metadata": {"name": _title(name, week)}})
                    page.write_text(body, encoding="utf-8")
                    prov = _collect_provenance(result)
                else:
                    prov = []
                records[name] = {
                    "status": "failed" if failure else "ok",
                    "page": page.name if page.is_file() else None,
                    "parameters": per[name],
                    "provenance": prov,
                    "error": str(failure) if failure else None,
                    "seconds": round(time.monotonic() - t0, 2),
                }
                if failure:
                    failures.append(failure)
                    say(f"[{i}/{len(names)}] {name}: FAILED ({time.monotonic() - t0:.1f}s): {failure}")
                else:
                    say(f"[{i}/{len(names)}] {name}: ok ({time.monotonic() - t0:.1f}s) -> {page}")

    run = {
        "week": week,
        "evaltk_version": __version__,
        "python": sys.version.split()[0],
        "generated_at": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
        "data_dir": data_dir or None,
        "params_file": None if params_file is None else {"path": params_file, "sha256": file_digest(params_file)},
        "notebooks": records,
    }
    (out_dir / "run.json").write_text(json.dumps(run, indent=2, default=str), encoding="utf-8")
    if failures:
        raise ReportFailed(failures, out_dir)
    if _INDEX in names:
        return out_dir / "index.html"
    return out_dir / f"{names[0]}.html"


def _is_path_param(name: str) -> bool:
    return name in ("data_dir", "suite_run", "host_summary") or name.endswith(("_path", "_file"))


def _title(name: str, week: str) -> str:
    return f"evaltk {name.replace('_', ' ')} report, {week}"


def _section_of(nb: Any, index: int) -> str:
    """The last markdown heading at or before cell ``index`` (how a reader finds the cell)."""
    for cell in reversed(nb.cells[: index + 1]):
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.lstrip().startswith("#"):
                    return line.lstrip("# ").strip()
    return ""


def _collect_provenance(nb: Any) -> list[dict[str, Any]]:
    found = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if _PROVENANCE_MIME in data:
                found.append(data[_PROVENANCE_MIME])
    return found
