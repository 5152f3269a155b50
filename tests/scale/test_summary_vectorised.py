"""The vectorised per-partition summaries equal their definition, row by row.

``score_partials``, ``calibration_table``, ``report_summary`` and the Dask engine's
per-partition ``DatasetSummary`` count with integer codes and ``np.bincount`` (issue 19:
the summary step was a third of a partition's CPU).  Each is checked here against a
reference computed independently, by a plain Python loop over the rows of random score
tables with abstentions of every cause, missing group keys and scores whose run is
absent: counts and abstentions per cause exactly, sums to 1e-12, and the groups in the
order ``groupby(sort=True, dropna=False)`` gives (a categorical key in category order,
missing keys last).  Both the in-memory layout (categorical columns, as
``ScoreMatrix.frame``) and the written one (plain strings) are drawn.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaltk.scale import report_summary
from evaltk.scale._scale import _summary_of
from evaltk.scale._summaries import CALIBRATION_CATEGORIES
from evaltk.stats import ScoreSummary, calibration_table, score_partials
from evaltk.values import CAUSES

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MEASURES = ("x_task", "x_eff", "x_safe")
VALUES = {"x_task": (0.0, 1.0), "x_eff": (0.0, 0.5, 1.0)}
AGENTS = ("a2", "a1", None)  # None: a run without an agent (the missing-key group)


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA


def _ref_partials(rows, keys):
    """``{key tuple: [n, n_valued, total, total_sq, n_<cause>...]}`` by a loop over the rows."""
    out: dict[tuple, list] = {}
    for r in rows:
        k = tuple(None if _missing(r[c]) else r[c] for c in keys)
        acc = out.setdefault(k, [0, 0, 0.0, 0.0, *[0] * len(CAUSES)])
        acc[0] += 1
        if not _missing(r["value"]):
            acc[1] += 1
            acc[2] += r["value"]
            acc[3] += r["value"] ** 2
        if r["cause"] in CAUSES:
            acc[4 + CAUSES.index(r["cause"])] += 1
    return out


def _check_partials(got: pd.DataFrame, want: dict, keys, order) -> None:
    got_keys = [tuple(None if _missing(x) else x for x in t) for t in got[keys].itertuples(index=False)]
    assert got_keys == sorted(want, key=order)  # one row per group, in groupby's order
    for t, r in zip(got_keys, got.itertuples(index=False), strict=True):
        w = want[t]
        assert [r.n, r.n_valued, *[getattr(r, f"n_{c}") for c in CAUSES]] == [w[0], w[1], *w[4:]]
        assert r.total == pytest.approx(w[2], rel=1e-12, abs=1e-12)
        assert r.total_sq == pytest.approx(w[3], rel=1e-12, abs=1e-12)


@st.composite
def score_tables(draw, bare_missing: bool = False):
    """Runs (some without an agent) and their long score table: every measure and tier drawn,
    values in each calibrated measure's domain, abstentions of every cause, a few scores whose run
    is not in the run table; with ``bare_missing``, also a missing value without a cause (outside
    the value/cause contract a summary needs; a judge-vs-human table counts it ``missing_evidence``)."""
    n = draw(st.integers(1, 25))
    runs = [{"trace_id": f"t{i}", "task": draw(st.sampled_from(["buy", "email", "book"])),
             "agent": draw(st.sampled_from(AGENTS)), "week": draw(st.sampled_from(["w1", "w2"]))}
            for i in range(n)]
    orphans = draw(st.integers(0, 2))
    rows = []
    for tid in [r["trace_id"] for r in runs] + [f"orphan{i}" for i in range(orphans)]:
        for m in MEASURES:
            for tier in ("automatic", "human"):
                if not draw(st.booleans()) and not (tier == "automatic" and m == "x_task"):
                    continue
                v = (draw(st.sampled_from(VALUES[m])) if m in VALUES
                     else draw(st.floats(0.0, 1.0, allow_nan=False)))
                cause = draw(st.sampled_from([None, None, *([""] if bare_missing else []), *CAUSES]))
                rows.append({"trace_id": tid, "measure": m, "tier": tier,
                             "value": np.nan if cause is not None else v, "cause": cause or None,
                             "scorer": "rule", "scorer_version": draw(st.sampled_from(["1.0", "1.1"])),
                             "n_raters": 1})
    frame = pd.DataFrame(rows, columns=["trace_id", "measure", "tier", "value", "cause", "scorer",
                                        "scorer_version", "n_raters"])
    frame["cause"] = frame["cause"].astype(object)
    if draw(st.booleans()):  # the in-memory layout: categoricals, the measure in a non-sorted category order
        frame = frame.astype({"trace_id": "category", "tier": "category", "cause": "category",
                              "scorer": "category", "scorer_version": "category"})
        frame["measure"] = pd.Categorical(frame["measure"], categories=list(MEASURES))
    return frame, pd.DataFrame(runs), rows


def _order(frame: pd.DataFrame, keys):
    """groupby(sort=True)'s order: category order for a categorical key, else the value; missing last."""
    def rank(c, x):
        if x is None:
            return (1, 0)
        if isinstance(frame[c].dtype, pd.CategoricalDtype):
            return (0, list(frame[c].cat.categories).index(x))
        return (0, x)
    return lambda t: tuple(rank(c, x) for c, x in zip(keys, t, strict=True))


@SETTINGS
@given(score_tables())
def test_score_partials_equal_a_loop_over_the_rows(table):
    frame, runs, rows = table
    agent = dict(zip(runs["trace_id"], runs["agent"], strict=True))
    with_agent = frame.assign(agent=[agent.get(str(t)) for t in frame["trace_id"]])
    rows = [{**r, "agent": agent.get(r["trace_id"])} for r in rows]
    for keys in (["measure"], ["measure", "tier"], ["measure", "tier", "agent"], ["agent"]):
        got = score_partials(with_agent, keys)
        _check_partials(got, _ref_partials(rows, keys), keys, _order(with_agent, keys))
        # and the previous definition (one pandas groupby) gives the same groups in the same order
        prev = with_agent.assign(one=1).groupby(keys, sort=True, observed=True, dropna=False)["one"].sum()
        assert got["n"].tolist() == prev.tolist()


def _ref_calibration(rows, measure):
    """Units: the human rows of ``measure``; each side's value and cause, by a loop."""
    judge = {r["trace_id"]: r for r in rows if r["measure"] == measure and r["tier"] == "automatic"}
    cats = CALIBRATION_CATEGORIES[measure]
    counts = np.zeros((len(cats), len(cats)), np.int64)
    ex_a, ex_b, n = Counter(), Counter(), 0
    for h in (r for r in rows if r["measure"] == measure and r["tier"] == "human"):
        n += 1
        j = judge.get(h["trace_id"])
        va = None if j is None or _missing(j["value"]) else j["value"]
        vb = None if _missing(h["value"]) else h["value"]
        if va is None:
            ex_a[(j or {}).get("cause") or "missing_evidence"] += 1
        if vb is None:
            ex_b[h["cause"] or "missing_evidence"] += 1
        if va is not None and vb is not None:
            counts[cats.index(va), cats.index(vb)] += 1
    return counts, n, {c: ex_a[c] for c in CAUSES}, {c: ex_b[c] for c in CAUSES}


@SETTINGS
@given(score_tables(bare_missing=True))
def test_calibration_tables_equal_a_loop_over_the_units(table):
    frame, _, rows = table
    for m, cats in CALIBRATION_CATEGORIES.items():
        t = calibration_table(frame, m, categories=cats)
        counts, n, ex_a, ex_b = _ref_calibration(rows, m)
        assert t.categories == cats
        assert t.counts.tolist() == counts.tolist()
        assert (t.n_units, dict(t.excluded_a), dict(t.excluded_b)) == (n, ex_a, ex_b)


def _check_summary(got: ScoreSummary, want: dict) -> None:
    assert set(got.groups) == set(want)
    for k, w in want.items():
        s = got.groups[k]
        assert [s.n, s.n_valued, *[s.excluded[c] for c in CAUSES]] == [w[0], w[1], *w[4:]]
        assert s.total == pytest.approx(w[2], rel=1e-12, abs=1e-12)
        assert s.total_sq == pytest.approx(w[3], rel=1e-12, abs=1e-12)


@SETTINGS
@given(score_tables())
def test_report_summary_equals_a_loop_over_the_rows(table):
    frame, runs, rows = table
    agent = dict(zip(runs["trace_id"], runs["agent"], strict=True))
    rows = [{**r, "agent": agent.get(r["trace_id"])} for r in rows]  # an absent run: no agent
    auto = [r for r in rows if r["tier"] == "automatic"]
    s = report_summary(frame, runs)
    _check_summary(s.scores, _ref_partials(rows, ["measure", "tier"]))
    _check_summary(s.agents, _ref_partials(auto, ["measure", "agent"]))
    values = defaultdict(Counter)
    for r in auto:
        if not _missing(r["value"]):
            values[r["measure"]][float(r["value"])] += 1
    assert s.values == {m: dict(c) for m, c in values.items()}
    assert (s.n_traces, s.n_scores) == (len({r["trace_id"] for r in auto}), len(auto))
    assert s.scorer_versions == {r["scorer_version"] for r in auto}
    for m in CALIBRATION_CATEGORIES:
        counts, n, ex_a, ex_b = _ref_calibration(rows, m)
        t = s.calibration[m]
        assert (t.counts.tolist(), t.n_units, dict(t.excluded_a), dict(t.excluded_b)) == \
            (counts.tolist(), n, ex_a, ex_b)


@SETTINGS
@given(score_tables(), st.sampled_from([[], ["agent"], ["week"], ["agent", "week"]]))
def test_dask_partition_summary_equals_a_loop_over_the_rows(table, by):
    """The Dask engine's per-partition ``DatasetSummary`` (reusing the written ``ReportSummary``)."""
    frame, runs, rows = table
    run_of = {r["trace_id"]: r for r in runs.to_dict("records")}
    rows = [{**r, **{b: run_of.get(r["trace_id"], {}).get(b) for b in by}} for r in rows]  # no run: no key
    for report in (None, report_summary(frame, runs)):
        d = _summary_of(frame, runs, by, report)
        _check_summary(d.scores, _ref_partials(rows, ["measure", "tier", *by]))
        passes: dict[str, list[int]] = {}
        for r in rows:  # trials of the runs in the table (a score without its run has no task: as DuckDB's join)
            if r["measure"] == "x_task" and r["tier"] == "automatic" and r["trace_id"] in run_of:
                p = passes.setdefault(run_of[r["trace_id"]]["task"], [0, 0, 0])
                if _missing(r["value"]):
                    p[2] += 1
                else:
                    p[0] += 1
                    p[1] += int(r["value"] >= 1.0)
        assert {t: list(v) for t, v in d.pass_counts.counts.items()} == passes
        assert (d.tasks, d.n_runs) == (frozenset(runs["task"]), len(runs))
        for m in CALIBRATION_CATEGORIES:
            counts, n, ex_a, ex_b = _ref_calibration(rows, m)
            assert d.calibration[m].counts.tolist() == counts.tolist()
            assert (d.calibration[m].n_units, dict(d.calibration[m].excluded_b)) == (n, ex_b)


def test_large_random_partials_sums_to_1e12():
    """200k rows of continuous values: the bincount sums agree with ``math.fsum`` per group."""
    rng = np.random.default_rng(19)
    n = 200_000
    cause = rng.choice(np.array([None, *CAUSES], dtype=object), n, p=[0.6, 0.1, 0.1, 0.1, 0.1])
    f = pd.DataFrame({"measure": pd.Categorical(rng.choice(["m2", "m1", "m3"], n), categories=["m2", "m1", "m3"]),
                      "agent": rng.choice(np.array(["a", "b", None], dtype=object), n),
                      "value": np.where(pd.isna(cause), rng.random(n), np.nan), "cause": cause})
    got = score_partials(f, ["measure", "agent"])
    for r in got.itertuples(index=False):
        sel = ((f["measure"] == r.measure) & (f["agent"].isna() if r.agent is None else f["agent"] == r.agent)
               ).to_numpy()
        v = f["value"].to_numpy()[sel]
        v = v[~np.isnan(v)]
        assert (r.n, r.n_valued) == (int(sel.sum()), v.size)
        assert r.total == pytest.approx(math.fsum(v), rel=1e-12)
        assert r.total_sq == pytest.approx(math.fsum(v * v), rel=1e-12)
        assert [getattr(r, f"n_{c}") for c in CAUSES] == [int((cause[sel] == c).sum()) for c in CAUSES]
    assert [(m, a) for m, a in got[["measure", "agent"]].itertuples(index=False)] == \
        [(m, a) for m in ("m2", "m1", "m3") for a in ("a", "b", None)]


def test_unknown_cause_in_a_calibration_table_is_refused():
    f = pd.DataFrame({"trace_id": ["t1", "t1"], "measure": "x_task", "tier": ["automatic", "human"],
                      "value": [np.nan, 1.0], "cause": ["tired", None]})
    with pytest.raises(ValueError, match="unknown causes \\['tired'\\]"):
        calibration_table(f, "x_task", categories=(0.0, 1.0))


@SETTINGS
@given(st.sampled_from([3, 2**16, 2**16 + 5, 2**20]), st.integers(0, 2**32 - 1), st.integers(1, 300))
def test_stable_order_is_a_stable_sort(size, seed, n):
    """The radix passes of ``score_partials`` order the rows as a stable sort of the group numbers."""
    from evaltk.stats._tables import _stable_order

    gid = np.random.default_rng(seed).integers(0, min(size, 7) if seed % 2 else size, n).astype(np.int64)
    np.testing.assert_array_equal(_stable_order(gid, size), np.argsort(gid, kind="stable"))


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(["t1", "t0", 3, "t2"]), st.sampled_from([None, 0.0, 0.5, 1.0, True, False])),
                max_size=40))
def test_pass_counts_is_its_definition(trials):
    """``pass_counts``: per task (in order of first appearance) decided trials, passes, abstentions."""
    from evaltk.stats import pass_counts

    want: dict = {}
    for t, p in trials:
        n, c, a = want.get(t, (0, 0, 0))
        want[t] = (n, c, a + 1) if p is None else (n + 1, c + int(float(p) >= 1.0), a)
    got = pass_counts([t for t, _ in trials], [p for _, p in trials]).counts
    assert list(got) == list(want) and got == want
