"""Mergeable summaries: pieces combined equal the whole (issue 9, section 1).

Property tests draw random partitionings of the same data; counts and abstention
tallies must agree exactly and floats to 1e-12.  Cross-checks tie each summary's
statistics to the in-memory functions (``ScoreMatrix.summary``, ``evaltk.stats._agreement``,
``evaltk.suite._suite.pass_at_k``) and to the ``krippendorff`` package.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaltk.data import make_demo
from evaltk.scoring import score_traces
from evaltk.stats import (
    PARTIAL_COLUMNS,
    ConfusionTable,
    PassCounts,
    ScoreSummary,
    TreeCombiner,
    UnitPatterns,
    calibration_table,
    combine_all,
    confusion_table,
    pass_counts,
    score_partials,
    score_summary,
    summarize_frame,
    unit_patterns,
)
from evaltk.stats import _agreement as ag
from evaltk.suite import pass_at_k, pass_hat_k
from evaltk.values import CAUSES, Abstention, MeanSummary, summarize

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def demo():
    return make_demo(n_traces=120, rng=3)


@pytest.fixture(scope="module")
def whole(demo):
    return score_traces(demo.traces, demo.answers, demo.labels)


def _pieces(n: int, labels: list[int]) -> list[np.ndarray]:
    lab = np.asarray(labels[:n] + [0] * max(0, n - len(labels)))
    return [np.flatnonzero(lab == k) for k in np.unique(lab)]


def assert_mean_summary_equal(a: MeanSummary, b: MeanSummary) -> None:
    assert (a.n, a.n_valued, dict(a.excluded)) == (b.n, b.n_valued, dict(b.excluded))
    assert a.total == pytest.approx(b.total, abs=1e-12, rel=1e-12)
    assert a.total_sq == pytest.approx(b.total_sq, abs=1e-12, rel=1e-12)


def assert_score_summary_equal(a: ScoreSummary, b: ScoreSummary) -> None:
    assert a.keys == b.keys
    assert set(a.groups) == set(b.groups)
    for k in a.groups:
        assert_mean_summary_equal(a.groups[k], b.groups[k])


def assert_summary_frames_equal(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns)
    assert len(a) == len(b)
    a, b = a.reset_index(drop=True), b.reset_index(drop=True)
    for c in a.columns:
        if c in ("mean", "coverage"):
            np.testing.assert_allclose(a[c].to_numpy(float), b[c].to_numpy(float), rtol=1e-12, atol=1e-12)
        elif c.startswith("n"):
            assert a[c].astype(np.int64).tolist() == b[c].astype(np.int64).tolist(), c
        else:
            x = [None if (v is None or (isinstance(v, float) and math.isnan(v))) else str(v) for v in a[c]]
            y = [None if (v is None or (isinstance(v, float) and math.isnan(v))) else str(v) for v in b[c]]
            assert x == y, c


# --------------------------------------------------------------------------- means

scores = st.one_of(st.floats(0.0, 1.0, allow_nan=False), st.sampled_from(CAUSES))


@SETTINGS
@given(st.lists(scores, min_size=1, max_size=60), st.lists(st.integers(0, 4), max_size=60))
def test_mean_summary_pieces_equal_whole(items, labels):
    vals = [x if isinstance(x, float) else Abstention(x) for x in items]
    whole = summarize(vals)
    parts = [summarize([vals[i] for i in idx]) for idx in _pieces(len(vals), labels)]
    assert_mean_summary_equal(combine_all(parts), whole)
    assert_mean_summary_equal(combine_all(parts[::-1]), whole)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["x_task", "x_safe", "x_eff"]), st.sampled_from(["a1", "a2", None]),
                          scores), min_size=1, max_size=80),
       st.lists(st.integers(0, 5), max_size=80))
def test_score_summary_pieces_equal_whole(rows, labels):
    f = pd.DataFrame({"measure": [r[0] for r in rows], "agent": [r[1] for r in rows],
                      "value": [r[2] if isinstance(r[2], float) else np.nan for r in rows],
                      "cause": pd.Series([None if isinstance(r[2], float) else r[2] for r in rows], dtype=object)})
    for by in (["measure"], ["measure", "agent"]):
        whole = score_summary(f, by)
        parts = [score_summary(f.iloc[idx], by) for idx in _pieces(len(f), labels)]
        got = combine_all(parts)
        assert_score_summary_equal(got, whole)
        assert_summary_frames_equal(got.to_frame(), whole.to_frame())
        # partial tables concatenate and sum to the same summary (the Dask/SQL path)
        cat = pd.concat([score_partials(f.iloc[idx], by) for idx in _pieces(len(f), labels)], ignore_index=True)
        assert_score_summary_equal(ScoreSummary.from_partials(cat, by), whole)


def test_score_matrix_summary_counts_every_run_by_hand(whole):
    """``ScoreMatrix.summary``, ``score_summary`` and ``summarize_frame`` are one summary; checked
    against a plain count per group, with runs whose key is missing as a group of their own."""
    runs = whole.runs.copy()
    runs.loc[runs.index % 5 == 0, "agent"] = None  # some runs with no agent
    m = replace(whole, runs=runs)
    overall = m.summary().set_index("measure")
    for by in (None, "agent", "domain"):
        f = m.scores().assign(measure=lambda d: d["measure"].astype(str))
        keys = ["measure"]
        if by is not None:
            f = f.merge(runs[["trace_id", by]], on="trace_id", how="left")
            keys.append(by)
        got = m.summary(by=by)
        assert_summary_frames_equal(score_summary(f, keys).to_frame(), got)
        assert_summary_frames_equal(summarize_frame(f, keys), got)
        rows = {}
        for rec in f.itertuples(index=False):
            k = tuple(None if pd.isna(getattr(rec, c)) else getattr(rec, c) for c in keys)
            n, nv, tot = rows.get(k, (0, 0, 0.0))
            v = rec.value
            rows[k] = (n + 1, nv + (not np.isnan(v)), tot + (0.0 if np.isnan(v) else v))
        assert len(got) == len(rows)
        for r in got.itertuples(index=False):
            k = tuple(None if pd.isna(getattr(r, c)) else getattr(r, c) for c in keys)
            n, nv, tot = rows[k]
            assert (r.n, r.n_valued) == (n, nv)
            assert (np.isnan(r.mean) and nv == 0) or r.mean == pytest.approx(tot / nv)
        assert (got.groupby("measure")["n"].sum() == overall["n"]).all()  # no run leaves the denominator


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 3), min_size=120, max_size=120))
def test_scoring_in_pieces_then_combining_equals_whole(demo, whole, labels):
    """Score each piece of traces (with its answers and labels) separately; combine the summaries.

    The ``human`` tier is compared where the piece holds labels: ``score_tables`` adds that
    tier only when its label table is non-empty (``evaltk.scale._scale`` keeps it present in every
    partition of a store with labels; tested in tests/test_scale.py).
    """
    tids = np.array([t["trace_id"] for t in demo.traces])
    parts_s, parts_t, parts_p = [], [], []
    for idx in _pieces(len(tids), labels):
        keep = set(tids[idx])
        m = score_traces([demo.traces[i] for i in idx], demo.answers[demo.answers["trace_id"].isin(keep)],
                         demo.labels[demo.labels["trace_id"].isin(keep)],
                         population=whole.manifest.population)
        parts_s.append(score_summary(m.scores("automatic"), ["measure", "tier"]))
        parts_t.append(calibration_table(m.frame, "x_task", categories=(0.0, 1.0)))
        x = m.scores().merge(m.runs[["trace_id", "task"]], on="trace_id")
        x = x[x["measure"] == "x_task"]
        parts_p.append(pass_counts(x["task"], x["value"]))
    assert_score_summary_equal(combine_all(parts_s), score_summary(whole.scores("automatic"), ["measure", "tier"]))
    t_whole = calibration_table(whole.frame, "x_task", categories=(0.0, 1.0))
    t = combine_all(parts_t)
    assert np.array_equal(t.counts, t_whole.counts)
    assert t.excluded_a == t_whole.excluded_a or t.n_units < t_whole.n_units
    x = whole.scores().merge(whole.runs[["trace_id", "task"]], on="trace_id")
    x = x[x["measure"] == "x_task"]
    assert combine_all(parts_p).counts == pass_counts(x["task"], x["value"]).counts


# --------------------------------------------------------------------------- two-rater tables

labels_ab = st.lists(st.tuples(st.sampled_from(["y", "n", "u", None]), st.sampled_from(["y", "n", "u", None])),
                     min_size=2, max_size=80)


@SETTINGS
@given(labels_ab, st.lists(st.integers(0, 4), max_size=80))
def test_confusion_table_pieces_equal_whole(pairs, labels):
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    ca = [None if x is not None else "abstained" for x in a]
    cb = [None if x is not None else "not_implemented" for x in b]
    clusters = [i // 2 for i in range(len(a))]  # pairs of units form a cluster
    whole = confusion_table(a, b, cause_a=ca, cause_b=cb, clusters=clusters)
    parts = []
    for idx in _pieces(len(a), [labels[i // 2] if i // 2 < len(labels) else 0 for i in range(len(a))]):
        parts.append(confusion_table([a[i] for i in idx], [b[i] for i in idx], cause_a=[ca[i] for i in idx],
                                     cause_b=[cb[i] for i in idx], clusters=[clusters[i] for i in idx]))
    got = combine_all(parts)
    assert got.categories == whole.categories
    assert np.array_equal(got.counts, whole.counts)
    assert (got.n_units, got.excluded_a, got.excluded_b) == (whole.n_units, whole.excluded_a, whole.excluded_b)
    assert got.patterns == whole.patterns
    if whole.n_pairable and len(whole.categories) >= 2:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for s in ("cohen_kappa", "scott_pi", "percent_agreement", "pabak"):
                x, y = got.statistic(s), whole.statistic(s)
                if isinstance(y, Abstention):
                    assert isinstance(x, Abstention)
                else:
                    assert x == pytest.approx(y, abs=1e-12)
            for unit in ("item", "cluster"):
                r1 = got.bootstrap(rng=7, n_resamples=200, unit=unit)
                r2 = whole.bootstrap(rng=7, n_resamples=200, unit=unit)
                assert r1.confidence_interval == r2.confidence_interval


def test_confusion_table_statistics_match_agreement():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 300)
    b = np.where(rng.random(300) < 0.7, a, rng.integers(0, 3, 300))
    t = confusion_table(a, b)
    assert t.statistic("cohen_kappa") == pytest.approx(ag.cohen_kappa(a, b).statistic, abs=1e-12)
    assert t.statistic("cohen_kappa", weights="quadratic") == pytest.approx(
        ag.cohen_kappa(a, b, weights="quadratic").statistic, abs=1e-12)
    assert t.statistic("scott_pi") == pytest.approx(ag.scott_pi(a, b).statistic, abs=1e-12)
    assert t.statistic("pabak") == pytest.approx(ag.pabak(a, b).statistic, abs=1e-12)
    assert t.statistic("percent_agreement") == pytest.approx(ag.percent_agreement(a, b).statistic, abs=1e-12)
    # the bootstrap from the table alone is the row bootstrap of evaltk.stats._agreement, same seed
    for method in ("percentile", "bca"):
        r1 = t.bootstrap("cohen_kappa", rng=5, n_resamples=400, method=method)
        r2 = ag.cohen_kappa(a, b, method=method, rng=5, n_resamples=400)
        assert r1.confidence_interval == r2.confidence_interval
        assert r1.statistic == pytest.approx(r2.statistic, abs=1e-12)
    # the mergeable table's bootstrap records the seed it drew, and the seed reproduces it (#13)
    drawn = t.bootstrap("cohen_kappa", n_resamples=300)
    again = t.bootstrap("cohen_kappa", rng=drawn.seed, n_resamples=300)
    assert drawn.to_frame().loc[0, "seed"] == drawn.seed == again.seed
    assert again.confidence_interval == drawn.confidence_interval


def test_cluster_bootstrap_is_a_cluster_bootstrap():
    """Units of a cluster move together: with perfectly correlated clusters the cluster interval is wider."""
    rng = np.random.default_rng(1)
    a = np.repeat(rng.integers(0, 2, 60), 5)
    b = np.repeat(np.where(rng.random(60) < 0.8, a[::5], 1 - a[::5]), 5)
    cl = np.repeat(np.arange(60), 5)
    t = confusion_table(a, b, clusters=cl)
    ri = t.bootstrap(rng=0, n_resamples=1000)
    rc = t.bootstrap(rng=0, n_resamples=1000, unit="cluster")
    wi = ri.confidence_interval[1] - ri.confidence_interval[0]
    wc = rc.confidence_interval[1] - rc.confidence_interval[0]
    assert wc > 1.5 * wi
    # every replicate still holds 300 units (60 clusters of 5)
    with pytest.raises(ValueError, match="cluster"):
        confusion_table(a, b).bootstrap(unit="cluster")


def test_confusion_table_rejects_bad_input():
    with pytest.raises(ValueError, match="one label per unit"):
        confusion_table([1, 2], [1])
    with pytest.raises(ValueError, match="unknown causes"):
        confusion_table([1, None], [1, 2], cause_a=[None, "bogus"])
    with pytest.raises(ValueError, match="both a label and a cause"):
        confusion_table([1, 2], [1, 2], cause_a=[None, "abstained"])
    with pytest.raises(ValueError, match="not among"):
        confusion_table([1, 3], [1, 2], categories=[1, 2])
    with pytest.warns(Warning, match="undefined"):
        assert isinstance(confusion_table([None], [1]).statistic(), Abstention)
    assert isinstance(ConfusionTable((1, 2), np.zeros((2, 2)), 0).coverage, Abstention)


# --------------------------------------------------------------------------- multi-rater patterns

ratings = st.lists(st.lists(st.sampled_from([0.0, 1.0, 2.0, np.nan, 9.0]), min_size=3, max_size=3),
                   min_size=2, max_size=50)


@SETTINGS
@given(ratings, st.lists(st.integers(0, 4), max_size=50))
def test_unit_patterns_pieces_equal_whole(rows, labels):
    R = np.array(rows, dtype=float)
    whole = unit_patterns(R, abstain=[9.0])
    parts = [unit_patterns(R[idx], abstain=[9.0]) for idx in _pieces(len(R), labels)]
    got = combine_all(parts)
    assert got.categories == whole.categories
    assert dict(got.patterns) == dict(whole.patterns)
    assert (got.n_abstained, got.n_unrated) == (whole.n_abstained, whole.n_unrated)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in ("fleiss_kappa", "krippendorff_alpha", "percent_agreement", "gwet_ac1"):
            x, y = got.statistic(s), whole.statistic(s)
            if isinstance(y, Abstention):
                assert isinstance(x, Abstention)
            else:
                assert x == pytest.approx(y, abs=1e-12)
        if whole.patterns:
            np.testing.assert_allclose(got.coincidence(), whole.coincidence(), atol=1e-12)


def test_unit_patterns_match_agreement_and_krippendorff():
    krippendorff = pytest.importorskip("krippendorff", reason="the krippendorff package is not installed")
    rng = np.random.default_rng(2)
    R = rng.integers(0, 3, (150, 4)).astype(float)
    R[rng.random(R.shape) < 0.2] = np.nan
    up = unit_patterns(R)
    for name, fn in (("fleiss_kappa", ag.fleiss_kappa), ("gwet_ac1", ag.gwet_ac1),
                     ("brennan_prediger", ag.brennan_prediger), ("percent_agreement", ag.percent_agreement)):
        assert up.statistic(name) == pytest.approx(fn(R).statistic, abs=1e-12), name
    alpha = up.statistic("krippendorff_alpha")
    assert alpha == pytest.approx(ag.krippendorff_alpha(R, level="nominal").statistic, abs=1e-12)
    assert alpha == pytest.approx(krippendorff.alpha(R.T, level_of_measurement="nominal"), abs=1e-12)
    # alpha from the coincidence table (Krippendorff 2011): 1 - (n - 1) D_o / D_e
    o = up.coincidence()
    n_c = o.sum(axis=1)
    n = n_c.sum()
    d_o = o.sum() - np.trace(o)
    d_e = (n_c.sum() ** 2 - (n_c ** 2).sum()) / (n - 1)
    assert 1 - d_o / d_e == pytest.approx(alpha, abs=1e-12)
    r = up.bootstrap("krippendorff_alpha", rng=0, n_resamples=300)
    assert r.confidence_interval[0] < alpha < r.confidence_interval[1]


# --------------------------------------------------------------------------- pass counts


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(["t1", "t2", "t3"]), st.sampled_from([0.0, 1.0, 0.5, None])),
                min_size=1, max_size=60),
       st.lists(st.integers(0, 4), max_size=60))
def test_pass_counts_pieces_equal_whole(trials, labels):
    tasks = [t for t, _ in trials]
    passed = [p for _, p in trials]
    whole = pass_counts(tasks, passed)
    got = combine_all([pass_counts([tasks[i] for i in idx], [passed[i] for i in idx])
                       for idx in _pieces(len(tasks), labels)])
    assert dict(got.counts) == dict(whole.counts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in (1, 2, 3):
            for fn in ("pass_at_k", "pass_hat_k"):
                x, y = getattr(got, fn)(k), getattr(whole, fn)(k)
                assert (isinstance(x, Abstention) and isinstance(y, Abstention)) or x == pytest.approx(y, abs=1e-12)


def test_pass_counts_match_suite_estimators():
    p = pass_counts(["a"] * 5 + ["b"] * 4, [1, 1, 0, 1, 0, 0, 0, 1, None])
    assert p.counts == {"a": (5, 3, 0), "b": (3, 1, 1)}
    assert p.pass_at_k(2) == pytest.approx((pass_at_k(5, 3, 2) + pass_at_k(3, 1, 2)) / 2, abs=1e-15)
    assert p.pass_hat_k(2) == pytest.approx((pass_hat_k(5, 3, 2) + pass_hat_k(3, 1, 2)) / 2, abs=1e-15)
    assert p.n_tasks_short(4) == 1
    assert p.pass_at_k(4) == pass_at_k(5, 3, 4)
    with pytest.warns(Warning, match="undefined"):
        assert isinstance(PassCounts({}).pass_at_k(1), Abstention)
    with pytest.raises(ValueError, match="`k`"):
        p.pass_at_k(0)


def test_partial_columns_and_from_partials_validation():
    assert PARTIAL_COLUMNS[:4] == ("n", "n_valued", "total", "total_sq")
    with pytest.raises(ValueError, match="lacks columns"):
        ScoreSummary.from_partials(pd.DataFrame({"measure": ["x"]}), ["measure"])
    with pytest.raises(ValueError, match="cannot combine"):
        ScoreSummary(("measure",)).combine(ScoreSummary(("measure", "agent")))
    with pytest.raises(ValueError, match="empty"):
        combine_all([])
    with pytest.raises(ValueError, match="empty"):
        TreeCombiner().result()
    assert isinstance(UnitPatterns((), {}).statistic.__doc__, str)


class _Shape:
    """A "summary" whose combine records the tree: the shape of a reduction, not its sum."""

    def __init__(self, text: str) -> None:
        self.text = text

    def combine(self, other: _Shape) -> _Shape:
        return _Shape(f"({self.text} {other.text})")


@given(st.integers(1, 300))
def test_the_streamed_tree_is_the_level_by_level_tree(n):
    """TreeCombiner (what combine_all and the DuckDB engine's driver use, holding log2(n)
    partials) builds the tree of the level-by-level reduction combine_all did before: pairs at
    each level, an odd last piece carried up, so sums are bit for bit those of before."""
    items = [_Shape(str(i)) for i in range(n)]
    level = list(items)
    while len(level) > 1:  # combine_all as it was written before TreeCombiner
        level = [level[i].combine(level[i + 1]) if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)]
    tree = TreeCombiner()
    held = 0
    for x in items:
        tree.push(x)
        held = max(held, len(tree._stack))
    assert tree.result().text == combine_all(items).text == level[0].text and len(tree) == n
    assert held <= n.bit_length()
