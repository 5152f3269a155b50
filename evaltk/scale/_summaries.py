"""The per-partition mergeable summaries of a scored dataset: what the weekly report reads.

:func:`score_dataset` writes, beside each partition's ``scores/``, ``runs/`` and
``ledger/`` files, ``summaries/<key>.json`` (:data:`SUMMARIES_DIR`): the partition's
:class:`ReportSummary`, recorded with its SHA-256 in the partition's marker and in the
completion record.  :func:`read_report_summary` checks the completion record and combines
those small files, so ``evaltk report --scored DIR`` renders a week of any size without
reading a score row: memory and time grow with the number of partitions, not of traces.

:mod:`evaltk.scale._scored` reads them back.  Every number of the weekly page's score sections is a function of these summaries:
counts, abstentions per cause, coverage and means per measure (and per agent) through
:class:`evaltk.stats.ScoreSummary` (n, n valued, sum, sum of squares, abstentions per
cause: exact counts, means to floating-point rounding), the judge-vs-human
:class:`evaltk.stats.ConfusionTable` per measure (Cohen's kappa and its bootstrap interval,
identical to the rows' for the same seed), and the automatic tier's value counts per
measure (verdicts at any threshold; kept up to :data:`MAX_VALUES` distinct values a
measure, else marked unavailable).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._display import HtmlTable
from .._io import write_json
from ..errors import SchemaViolation
from ..stats import (
    MISSING_KEY,
    PARTIAL_COLUMNS,
    ConfusionTable,
    ScoreSummary,
    calibration_table,
    score_partials,
)
from ..values import CAUSES

#: Judge-vs-human tables kept for calibration: measure -> declared category domain.
CALIBRATION_CATEGORIES: dict[str, tuple[float, ...]] = {"x_task": (0.0, 1.0), "x_eff": (0.0, 0.5, 1.0)}
#: Where a scored dataset keeps its per-partition summaries (``summaries/<key>.json``).
SUMMARIES_DIR = "summaries"
SUMMARY_FORMAT = "evaltk.scale.summary/1"
#: Distinct automatic-tier values kept per measure for verdicts; beyond, that measure's
#: value counts are dropped (``None``) and a verdict at a validated threshold says so.
MAX_VALUES = 1000
_KEYS = ("measure", "tier")
_AGENT_KEYS = ("measure", "agent")


def _merge_values(a: Mapping[float, int] | None, b: Mapping[float, int] | None) -> dict[float, int] | None:
    if a is None or b is None:
        return None
    out = dict(a)
    for v, n in b.items():
        out[v] = out.get(v, 0) + n
    return out if len(out) <= MAX_VALUES else None


@dataclass(frozen=True)
class ReportSummary(HtmlTable):
    """The mergeable summary of scored runs the weekly report shows: adds across partitions.

    Attributes
    ----------
    scores : ScoreSummary
        Grouped by ``measure, tier``.
    agents : ScoreSummary
        The automatic tier grouped by ``measure, agent`` (a run without an agent is the
        missing-key group).
    calibration : mapping of str to ConfusionTable
        Judge (automatic) vs human per measure of :data:`evaltk.scale.CALIBRATION_CATEGORIES`.
    values : mapping of str to (mapping of float to int, or None)
        Automatic-tier value counts per measure (None: more than :data:`MAX_VALUES`).
    n_traces, n_scores : int
        Runs scored and automatic-tier score rows.
    scorer_versions : frozenset of str
        Of the automatic tier.
    """

    scores: ScoreSummary
    agents: ScoreSummary
    calibration: Mapping[str, ConfusionTable] = field(default_factory=dict)
    values: Mapping[str, Mapping[float, int] | None] = field(default_factory=dict)
    n_traces: int = 0
    n_scores: int = 0
    scorer_versions: frozenset[str] = frozenset()

    def combine(self, other: ReportSummary) -> ReportSummary:
        """The summary of the union of two disjoint sets of runs."""
        cal = dict(self.calibration)
        for m, t in other.calibration.items():
            cal[m] = cal[m].combine(t) if m in cal else t
        vals = {m: _merge_values(self.values.get(m, {}), other.values.get(m, {}))
                for m in dict.fromkeys([*self.values, *other.values])}
        return ReportSummary(self.scores.combine(other.scores), self.agents.combine(other.agents), cal, vals,
                             self.n_traces + other.n_traces, self.n_scores + other.n_scores,
                             self.scorer_versions | other.scorer_versions)

    __add__ = combine

    def to_frame(self, *, tier: str = "automatic") -> pd.DataFrame:
        """One row per measure of ``tier``: the columns of :func:`evaltk.values.summarize_frame`."""
        groups = {k[:1]: s for k, s in self.scores.groups.items() if k[1] == tier}
        return ScoreSummary(("measure",), groups).to_frame()

    def _html_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [(f"ReportSummary: {self.n_traces:,} runs, {self.n_scores:,} automatic scores", self.to_frame())]

    # ---- the JSON document of one partition
    def to_dict(self) -> dict[str, Any]:
        def rows(s: ScoreSummary) -> list[dict[str, Any]]:
            p = s.partials()
            return [{str(k): (None if k in s.keys and _missing(v) else _plain(v)) for k, v in r.items()}
                    for r in p.to_dict(orient="records")]

        return {"format": SUMMARY_FORMAT, "n_traces": self.n_traces, "n_scores": self.n_scores,
                "scorer_versions": sorted(self.scorer_versions),
                "scores": rows(self.scores), "agents": rows(self.agents),
                "calibration": {m: {"categories": list(t.categories), "counts": t.counts.tolist(),
                                    "n_units": t.n_units, "excluded_a": dict(t.excluded_a),
                                    "excluded_b": dict(t.excluded_b)} for m, t in self.calibration.items()},
                "values": {m: None if v is None else [[float(x), int(n)] for x, n in sorted(v.items())]
                           for m, v in self.values.items()}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, file: str | None = None) -> ReportSummary:
        """The summary a partition's ``summaries/<key>.json`` holds (refused if it is not one)."""
        try:
            if d["format"] != SUMMARY_FORMAT:
                raise ValueError(f"format {d['format']!r}, expected {SUMMARY_FORMAT!r}")
            cal = {str(m): ConfusionTable(tuple(t["categories"]), np.asarray(t["counts"], np.int64),
                                          int(t["n_units"]), {c: int(t["excluded_a"][c]) for c in CAUSES},
                                          {c: int(t["excluded_b"][c]) for c in CAUSES})
                   for m, t in d["calibration"].items()}
            vals = {str(m): None if v is None else {float(x): int(n) for x, n in v} for m, v in d["values"].items()}
            return cls(_from_rows(d["scores"], _KEYS), _from_rows(d["agents"], _AGENT_KEYS), cal, vals,
                       int(d["n_traces"]), int(d["n_scores"]), frozenset(str(v) for v in d["scorer_versions"]))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise SchemaViolation(f"integrity check `summary`: not a partition summary ({e})", file=file) from None


def _missing(v: Any) -> bool:
    """A missing group key, however the frame holds it (the missing-key group: ``MISSING_KEY``)."""
    return v is MISSING_KEY or v is None or v is pd.NA or (isinstance(v, float) and v != v)


def _plain(v: Any) -> Any:
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return None if v is pd.NA else v


def _from_rows(rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> ScoreSummary:
    cols = [*keys, *PARTIAL_COLUMNS]
    frame = pd.DataFrame([[r[c] for c in cols] for r in rows], columns=cols)
    return ScoreSummary.from_partials(frame, keys) if len(frame) else ScoreSummary(tuple(keys))


def _run_positions(score_ids: pd.Series, run_ids: pd.Series) -> np.ndarray:
    """Each score's row in the run table (-1 where its run is absent); through the categories
    when the ids are categorical (a score matrix in memory), so no id string is rebuilt.  One
    Arrow hash lookup (``pyarrow.compute.index_in``), ids compared as text; none when the
    categories are the run ids in order (a score matrix and its own runs: the codes are the
    positions)."""
    runs = pc.cast(pa.array(run_ids.astype(str)), pa.large_string())
    if isinstance(score_ids.dtype, pd.CategoricalDtype):
        cats = pc.cast(pa.array(score_ids.cat.categories.astype(str)), pa.large_string())
        if cats.equals(runs):
            at = np.arange(len(cats) + 1, dtype=float)
            at[-1] = np.nan
        else:
            at = np.append(pc.index_in(cats, value_set=runs).to_numpy(zero_copy_only=False), np.nan)
        codes = score_ids.cat.codes.to_numpy()
        got = at[np.where(codes >= 0, codes, len(at) - 1)]
    else:
        ids = pc.cast(pa.array(score_ids.astype(str)), pa.large_string())
        got = pc.index_in(ids, value_set=runs).to_numpy(zero_copy_only=False)
    return np.where(np.isnan(got), -1, got).astype(np.int64)


def _run_column(runs: pd.DataFrame, column: str, pos: np.ndarray) -> pd.Categorical:
    """A run column for each score (``pos``: :func:`_run_positions`) as a categorical, missing where
    the run has no value or is absent: group keys without building a string per score row."""
    cat = pd.Categorical(runs[column]) if column in runs.columns else pd.Categorical([None] * len(runs))
    codes = np.append(cat.codes, np.int8(-1)).astype(np.int64)[pos]  # position -1: no run, no value
    return pd.Categorical.from_codes(codes, categories=cat.categories)


def _value_counts(measure: pd.Series, values: np.ndarray, rows: np.ndarray) -> dict[str, dict[float, int]]:
    """``measure -> {value: count}`` over ``rows`` (valued automatic scores): one ``bincount`` of
    (measure, value) codes; measures in their category order, values sorted."""
    if isinstance(measure.dtype, pd.CategoricalDtype):
        mc, mu = measure.cat.codes.to_numpy()[rows].astype(np.int64), np.asarray(measure.cat.categories, object)
    else:
        codes, uniques = pd.factorize(measure.iloc[rows], sort=True)
        mc, mu = np.asarray(codes, np.int64), np.asarray(uniques, object)
    vc, vu = pd.factorize(values[rows], sort=True)
    cell = mc * len(vu) + vc
    seen, n = np.unique(cell, return_counts=True)
    counts: dict[str, dict[float, int]] = {}
    for c, k in zip(seen.tolist(), n.tolist(), strict=True):
        counts.setdefault(str(mu[c // len(vu)]), {})[float(vu[c % len(vu)])] = int(k)
    return counts


def report_summary(scores: pd.DataFrame, runs: pd.DataFrame) -> ReportSummary:
    """The :class:`ReportSummary` of scored runs: a long score table (``ScoreMatrix.frame``, or
    a partition's ``scores/`` file) and its run table (``agent`` used when present).

    Vectorised: the group keys are categoricals (a score's agent through its run's position),
    counted by :func:`evaltk.stats.score_partials` in one pass.

    Examples
    --------
    >>> from evaltk import score_traces
    >>> from evaltk.data import make_demo
    >>> d = make_demo(n_traces=60, rng=0)
    >>> m = score_traces(d.traces, d.answers, d.labels)
    >>> s = report_summary(m.frame, m.runs)
    >>> s.n_traces == m.runs.shape[0], int(s.to_frame()["n"].sum()) == s.n_scores
    (True, True)
    """
    is_auto = (scores["tier"] == "automatic").to_numpy(bool, na_value=False)
    pos = _run_positions(scores["trace_id"], runs["trace_id"])
    value = pd.to_numeric(scores["value"], errors="coerce").to_numpy(float)
    f = pd.DataFrame({"measure": scores["measure"].array, "tier": scores["tier"].array,
                      "agent": _run_column(runs, "agent", pos), "value": value, "cause": scores["cause"].array})
    p = score_partials(f, ["measure", "tier", "agent"])  # one pass; the two summaries add its rows up
    auto_p = p[(p["tier"] == "automatic").to_numpy(bool)]
    counts = _value_counts(scores["measure"], value, np.flatnonzero(is_auto & ~np.isnan(value)))
    values = {m: (d if len(d) <= MAX_VALUES else None) for m, d in counts.items()}
    auto_ids = scores["trace_id"][is_auto]
    return ReportSummary(
        ScoreSummary.from_partials(p[[*_KEYS, *PARTIAL_COLUMNS]], _KEYS),
        ScoreSummary.from_partials(auto_p[[*_AGENT_KEYS, *PARTIAL_COLUMNS]], _AGENT_KEYS),
        {m: calibration_table(scores, m, categories=cats) for m, cats in CALIBRATION_CATEGORIES.items()},
        values, int(auto_ids.nunique()), int(is_auto.sum()),
        frozenset(str(v) for v in scores["scorer_version"][is_auto].dropna().unique()))


def write_partition_summary(folder: Path, key: str, summary: ReportSummary) -> str:
    """Write ``folder/summaries/<key>.json`` (atomically); its name relative to ``folder``."""
    rel = f"{SUMMARIES_DIR}/{key}.json"
    write_json(folder / rel, summary.to_dict())
    return rel
