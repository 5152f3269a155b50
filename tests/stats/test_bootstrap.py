"""Tests for evaltk.stats._bootstrap: the count-table engine, the general engine, undefined replicates.

Reference behaviour: Efron & Tibshirani (1993) ch. 13-14 (percentile, BCa) and
Davison & Hinkley (1997) sec. 5.2 (basic); scipy.stats.bootstrap implements the
same three intervals and is the peer the intervals are checked against, to Monte
Carlo error.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from evaltk.stats import (
    BootstrapResult,
    ConfidenceInterval,
    UndefinedReplicateError,
    bootstrap,
    bootstrap_sums,
    bootstrap_table,
    resample_counts,
)
from evaltk.values import Abstention, UndefinedWarning


def prop1(W):
    return W[:, 1] / W.sum(axis=1)


def kappa_table(W, q=2):
    P = W.reshape(-1, q, q)
    P = P / P.sum(axis=(1, 2))[:, None, None]
    po = np.trace(P, axis1=1, axis2=2)
    pe = (P.sum(axis=2) * P.sum(axis=1)).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (po - pe) / (1 - pe)
    out[~(1 - pe > 1e-12)] = np.nan
    return out


def kappa_vec(a, b, axis=-1):
    po = np.mean(a == b, axis=axis)
    pa, pb = np.mean(a, axis=axis), np.mean(b, axis=axis)
    pe = pa * pb + (1 - pa) * (1 - pb)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (po - pe) / (1 - pe)


@pytest.fixture(scope="module")
def labels():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 300)
    b = np.where(rng.random(300) < 0.8, a, 1 - a)
    return a, b


# --------------------------------------------------------------------------- resample_counts


def test_multinomial_counts_have_the_item_bootstrap_moments():
    t = np.array([0] * 30 + [1] * 50 + [2] * 20)
    W = resample_counts(t, 20000, rng=1)
    assert (W.sum(axis=1) == 100).all()
    p = np.array([0.3, 0.5, 0.2])
    # Multinomial(n, p): mean n p, variance n p (1 - p), covariance -n p_i p_j
    assert W.mean(axis=0) == pytest.approx(100 * p, rel=0.01)
    assert W.var(axis=0) == pytest.approx(100 * p * (1 - p), rel=0.05)
    assert np.cov(W[:, 0], W[:, 1])[0, 1] == pytest.approx(-100 * 0.3 * 0.5, rel=0.1)
    # the same moments as tabulating item indices drawn with replacement
    rng = np.random.default_rng(2)
    idx = rng.integers(0, 100, size=(20000, 100))
    Wi = np.stack([np.bincount(r, minlength=3) for r in t[idx]])
    assert Wi.var(axis=0) == pytest.approx(W.var(axis=0), rel=0.05)


def test_cluster_counts_are_sums_of_whole_clusters():
    t = np.repeat([0, 1, 2, 3], 5)          # cluster c holds 5 items of type c
    clusters = np.repeat(["a", "b", "c", "d"], 5)
    W = resample_counts(t, 500, unit="cluster", clusters=clusters, rng=3)
    assert (W % 5 == 0).all()
    assert (W.sum(axis=1) == 20).all()


def test_stratified_counts_keep_stratum_sizes():
    t = np.array([0, 0, 1, 1, 1, 2, 2, 3])
    strata = np.array(["x", "x", "x", "x", "x", "y", "y", "y"])
    W = resample_counts(t, 500, unit="stratified", strata=strata, rng=4)
    assert (W[:, :2].sum(axis=1) == 5).all()
    assert (W[:, 2:].sum(axis=1) == 3).all()


def test_clusters_nested_in_strata():
    t = np.arange(8) % 2
    clusters = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    strata = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    W = resample_counts(t, 100, unit="cluster", clusters=clusters, strata=strata, rng=0)
    assert (W.sum(axis=1) == 8).all()
    with pytest.raises(ValueError, match="nest"):
        resample_counts(t, 10, unit="cluster", clusters=clusters, strata=[0, 1] * 4)


# --------------------------------------------------------------------------- table engine


def test_table_engine_matches_item_bootstrap(labels):
    a, b = labels
    cells = a * 2 + b
    tab = bootstrap_table(cells, kappa_table, n_types=4, rng=5, n_resamples=4000)
    gen = bootstrap((a, b), kappa_vec, vectorized=True, rng=6, n_resamples=4000)
    assert tab.statistic == pytest.approx(gen.statistic)
    assert tab.standard_error == pytest.approx(gen.standard_error, rel=0.06)
    assert tab.confidence_interval[0] == pytest.approx(gen.confidence_interval[0], abs=0.015)
    assert tab.confidence_interval[1] == pytest.approx(gen.confidence_interval[1], abs=0.015)


@pytest.mark.parametrize("method", ["percentile", "basic", "bca"])
def test_intervals_match_scipy(labels, method):
    a, b = labels
    ours = bootstrap_table(a * 2 + b, kappa_table, n_types=4, method=method, rng=7, n_resamples=4000)
    ref = stats.bootstrap((a, b), kappa_vec, paired=True, vectorized=True, method=method,
                          n_resamples=4000, random_state=8)
    lo, hi = ref.confidence_interval
    assert ours.confidence_interval[0] == pytest.approx(lo, abs=0.015)
    assert ours.confidence_interval[1] == pytest.approx(hi, abs=0.015)
    assert ours.method == method


def test_basic_interval_reflects_percentiles():
    x = np.random.default_rng(1).exponential(size=60)
    t = (x > 1).astype(int)
    p = bootstrap_table(t, prop1, n_types=2, rng=0, n_resamples=1000)
    bs = bootstrap_table(t, prop1, n_types=2, rng=0, n_resamples=1000, method="basic")
    theta = t.mean()
    assert bs.confidence_interval[0] == pytest.approx(2 * theta - p.confidence_interval[1])
    assert bs.confidence_interval[1] == pytest.approx(2 * theta - p.confidence_interval[0])


def test_bca_acceleration_from_jackknife_with_multiplicities():
    t = np.array([0] * 7 + [1] * 3)
    res = bootstrap_table(t, prop1, n_types=2, method="bca", rng=0, n_resamples=2000)
    # leave-one-out values of a proportion: 3/9 (7 times) and 2/9 (3 times)
    jk = np.array([3 / 9] * 7 + [2 / 9] * 3)
    d = jk.mean() - jk
    a = (d ** 3).sum() / (6 * ((d ** 2).sum()) ** 1.5)
    assert res.acceleration == pytest.approx(a)
    assert res.method == "bca"


def test_reproducible_with_seed_and_generator(labels):
    a, b = labels
    r1 = bootstrap_table(a * 2 + b, kappa_table, n_types=4, rng=42, n_resamples=300)
    r2 = bootstrap_table(a * 2 + b, kappa_table, n_types=4, rng=42, n_resamples=300)
    assert np.array_equal(r1.bootstrap_distribution, r2.bootstrap_distribution)
    r3 = bootstrap_table(a * 2 + b, kappa_table, n_types=4, rng=np.random.default_rng(42),
                         n_resamples=300)
    assert np.array_equal(r1.bootstrap_distribution, r3.bootstrap_distribution)
    with pytest.raises(TypeError, match="rng"):
        bootstrap_table(a, prop1, rng="seed")


# --------------------------------------------------------------------------- undefined replicates


def rare_table():
    # 1 agreement on the rare category in 30 units: many resamples lose it, kappa undefined there
    a = np.array([1] + [0] * 29)
    return a * 2 + a


def test_undefined_replicates_are_counted_and_dropped():
    with pytest.warns(UndefinedWarning, match="undefined"):
        res = bootstrap_table(rare_table(), kappa_table, n_types=4, rng=0, n_resamples=2000)
    assert res.statistic == pytest.approx(1.0)
    assert 0 < res.n_undefined < 2000
    # P(unit never drawn) = (29/30)^30 ~ 0.362
    assert res.n_undefined / 2000 == pytest.approx((29 / 30) ** 30, abs=0.04)
    assert res.bootstrap_distribution.size == res.n_defined == 2000 - res.n_undefined
    assert res.to_frame().loc[0, "n_undefined"] == res.n_undefined


def test_undefined_replicates_raise_on_request():
    with pytest.raises(UndefinedReplicateError, match="undefined"):
        bootstrap_table(rare_table(), kappa_table, n_types=4, rng=0, undefined="raise")


def _share_given_rare(W):
    """Share of type-1 units, defined only on resamples that keep the one type-3 unit."""
    return np.where(W[:, 3] > 0, W[:, 1] / W.sum(axis=1), np.nan)


def test_bca_falls_back_when_jackknife_is_undefined():
    t = np.array([3] + [1] * 8 + [0] * 21)  # leaving the type-3 unit out is undefined
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = bootstrap_table(t, _share_given_rare, n_types=4, rng=0, method="bca")
    assert res.method == "percentile" and res.method_requested == "bca"
    assert res.fallback_reason is not None
    assert any("BCa" in str(x.message) for x in w)


def test_bca_parameters_refuse_a_jackknife_with_no_spread():
    from evaltk.stats._bootstrap import _bca_parameters
    z0, a, reason = _bca_parameters(0.5, np.linspace(0.1, 1.0, 50), (np.full(5, 0.5), np.ones(5)))
    assert z0 is None and a is None and "spread" in reason


@pytest.mark.parametrize("method", ["percentile", "basic", "bca"])
def test_a_degenerate_bootstrap_distribution_abstains(method):
    """Every resample equal (a constant statistic, perfect agreement): no zero-width interval (issue #16)."""
    t = np.array([0, 1, 1, 1, 1])
    with pytest.warns(UndefinedWarning, match="all resamples equal"):
        res = bootstrap_table(t, lambda W: np.full(W.shape[0], 0.5), n_types=2,
                              method=method, rng=0, n_resamples=200)
    assert res.statistic == 0.5 and not isinstance(res.confidence_interval, ConfidenceInterval)
    assert res.confidence_interval.cause.value == "missing_evidence"
    assert "degenerate bootstrap distribution: all resamples equal" in res.confidence_interval.reason
    assert isinstance(res.standard_error, Abstention)
    f = res.to_frame()
    assert np.isnan(f.loc[0, "ci_low"]) and f.loc[0, "ci_cause"] == "missing_evidence"


def test_bca_parameters_refuse_infinite_bias_correction():
    from evaltk.stats._bootstrap import _bca_parameters
    z0, a, reason = _bca_parameters(0.0, np.linspace(0.1, 1.0, 50), (np.array([0.1, 0.2]), np.ones(2)))
    assert z0 is None and a is None and "one side" in reason


def test_undefined_point_estimate_abstains():
    with pytest.warns(UndefinedWarning):
        res = bootstrap_table([0, 0, 0], kappa_table, n_types=4, rng=0)
    assert isinstance(res.statistic, Abstention)
    assert isinstance(res.confidence_interval, Abstention)


def test_generic_engine_counts_abstentions():
    x = np.array([1.0] + [0.0] * 19)

    def ratio(v):
        s = v.sum()
        return Abstention("missing_evidence", "no positive") if s == 0 else v.max() / s

    with pytest.warns(UndefinedWarning):
        res = bootstrap(x, ratio, rng=0, n_resamples=400)
    assert res.n_undefined == pytest.approx(400 * (19 / 20) ** 20, abs=40)


# --------------------------------------------------------------------------- general engine


def test_generic_loop_and_vectorized_agree():
    x = np.random.default_rng(3).normal(size=80)
    loop = bootstrap(x, np.mean, rng=0, n_resamples=3000)
    vec = bootstrap(x, np.mean, rng=0, n_resamples=3000, vectorized=True)
    se = x.std(ddof=1) / np.sqrt(80)
    assert loop.standard_error == pytest.approx(se, rel=0.07)
    assert vec.standard_error == pytest.approx(se, rel=0.07)


def test_generic_bca_matches_scipy():
    x = np.random.default_rng(4).exponential(size=50)
    ours = bootstrap(x, np.mean, method="bca", rng=0, n_resamples=5000, vectorized=True)
    ref = stats.bootstrap((x,), np.mean, method="BCa", n_resamples=5000, random_state=1)
    assert ours.confidence_interval[0] == pytest.approx(ref.confidence_interval.low, rel=0.04)
    assert ours.confidence_interval[1] == pytest.approx(ref.confidence_interval.high, rel=0.04)


def test_paired_resampling_narrows_correlated_difference():
    rng = np.random.default_rng(5)
    base = rng.normal(size=200)
    a = base + rng.normal(scale=0.1, size=200)
    b = base + 0.05 + rng.normal(scale=0.1, size=200)

    def diff(x, y, axis=-1):
        return np.mean(x, axis=axis) - np.mean(y, axis=axis)

    paired = bootstrap((a, b), diff, vectorized=True, rng=0, n_resamples=2000)
    indep = bootstrap((a, b), diff, vectorized=True, paired=False, rng=0, n_resamples=2000)
    assert paired.standard_error < 0.3 * indep.standard_error


def test_cluster_and_stratified_generic():
    rng = np.random.default_rng(6)
    clusters = np.repeat(np.arange(30), 8)
    effect = rng.normal(size=30)[clusters]
    x = effect + rng.normal(scale=0.2, size=240)
    item = bootstrap(x, np.mean, rng=0, n_resamples=800)
    clus = bootstrap(x, np.mean, unit="cluster", clusters=clusters, rng=0, n_resamples=800)
    assert clus.standard_error > 2 * item.standard_error
    strat = bootstrap(x, np.mean, unit="stratified", strata=clusters % 2, rng=0, n_resamples=400,
                      vectorized=True)
    assert strat.unit == "stratified" and strat.n_undefined == 0
    clus_bca = bootstrap(x, np.mean, unit="cluster", clusters=clusters, rng=0, n_resamples=400,
                         method="bca")
    assert clus_bca.method == "bca"


def test_validation_messages():
    x = [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="`method`"):
        bootstrap(x, np.mean, method="studentized")
    with pytest.raises(ValueError, match="`unit`"):
        bootstrap(x, np.mean, unit="task")
    with pytest.raises(ValueError, match="clusters"):
        bootstrap(x, np.mean, unit="cluster")
    with pytest.raises(ValueError, match="`n_resamples`"):
        bootstrap(x, np.mean, n_resamples=0)
    with pytest.raises(ValueError, match="`confidence_level`"):
        bootstrap(x, np.mean, confidence_level=95)
    with pytest.raises(ValueError, match="paired"):
        bootstrap(([1, 2], [1, 2, 3]), lambda a, b: 0.0)
    with pytest.raises(ValueError, match="empty"):
        bootstrap([], np.mean)
    with pytest.raises(ValueError, match="one value per row"):
        bootstrap_table([0, 1], lambda W: np.zeros(3), n_types=2)


def test_result_frame():
    res = bootstrap(np.arange(10.0), np.mean, rng=0, n_resamples=100)
    assert isinstance(res, BootstrapResult)
    row = res.to_frame().iloc[0]
    assert row["method"] == "percentile" and row["n_resamples"] == 100
    assert row["ci_low"] < 4.5 < row["ci_high"]


def test_vectorized_jackknife_equals_loop():
    x = np.random.default_rng(9).exponential(size=120)
    y = x + np.random.default_rng(10).normal(size=120)

    def diff(a, b, axis=-1):
        return np.mean(a, axis=axis) - np.median(b, axis=axis)

    loop = bootstrap((x, y), lambda a, b: diff(a, b), method="bca", rng=0, n_resamples=200)
    vec = bootstrap((x, y), diff, method="bca", rng=0, n_resamples=200, vectorized=True)
    assert vec.acceleration == pytest.approx(loop.acceleration, rel=1e-12)


# --------------------------------------------------------------------------- one engine, one config


def test_bootstrap_sums_is_the_multinomial_draw_of_units():
    from evaltk.stats import bootstrap_sums

    rows = np.array([[1.0, 2.0], [3.0, 3.0], [0.0, 4.0], [2.0, 2.0], [1.0, 5.0]])
    res = bootstrap_sums(rows, lambda S: S[:, 0] / S[:, 1], unit="cluster", n_resamples=400, rng=5)
    K = np.random.default_rng(5).multinomial(5, np.full(5, 0.2), size=400).astype(float)
    by_hand = (K @ rows)[:, 0] / (K @ rows)[:, 1]
    assert res.statistic == pytest.approx(7 / 16)
    assert tuple(res.confidence_interval) == pytest.approx(tuple(np.quantile(by_hand, [0.025, 0.975])))
    assert res.unit == "cluster" and res.n_undefined == 0


def test_bootstrap_sums_counts_undefined_replicates():
    from evaltk.stats import bootstrap_sums

    rows = np.array([[1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])  # only one unit has a denominator
    with pytest.warns(UndefinedWarning, match="of 300 bootstrap replicates are undefined"):
        res = bootstrap_sums(rows, lambda S: np.where(S[:, 1] > 0, S[:, 0] / np.where(S[:, 1] > 0, S[:, 1], 1),
                                                      np.nan), n_resamples=300, rng=0)
    K = np.random.default_rng(0).multinomial(4, np.full(4, 0.25), size=300)
    assert res.n_undefined == int((K[:, 0] == 0).sum()) > 0
    assert res.n_defined == 300 - res.n_undefined


def test_bootstrap_config_is_the_same_as_the_keywords_and_refuses_both():
    from evaltk.stats import BootstrapConfig, bootstrap_table

    t = [0, 1, 1, 0, 1, 1, 0, 1]
    cfg = BootstrapConfig(method="bca", n_resamples=300, confidence_level=0.9, rng=3)
    stat = lambda W: W[:, 1] / W.sum(axis=1)  # noqa: E731
    a = bootstrap_table(t, stat, method=cfg)
    b = bootstrap_table(t, stat, method="bca", n_resamples=300, confidence_level=0.9, rng=3)
    assert a.confidence_interval == b.confidence_interval and a.method_requested == "bca"
    with pytest.raises(TypeError, match="set n_resamples on it"):
        bootstrap_table(t, stat, method=cfg, n_resamples=100)
    with pytest.raises(ValueError, match="`n_resamples` must be a positive int; got 0."):
        BootstrapConfig(n_resamples=0)
    with pytest.raises(ValueError, match=r"`confidence_level` must be in \(0, 1\); got 1.5."):
        BootstrapConfig(confidence_level=1.5)


def test_validation_has_one_message_form():
    from evaltk._validation import check_choice, check_columns, check_confidence_level, check_rng
    from evaltk.errors import InputError

    with pytest.raises(ValueError, match=r"^`confidence_level` must be in \(0, 1\); got 1.5.$"):
        check_confidence_level(1.5)
    with pytest.raises(TypeError, match="^`rng` must be None, an int seed or a numpy Generator; got float.$"):
        check_rng(1.5)
    with pytest.raises(ValueError, match=r"^`rng` must be None, a non-negative int seed or a numpy Generator; got -1\.$"):
        check_rng(-1)
    with pytest.raises(ValueError, match="^`unit` must be one of 'item', 'cluster'; got 'items'.$"):
        check_choice("unit", "items", ("item", "cluster"))
    import pandas as pd

    with pytest.raises(InputError, match="`data` must have a column `rating`"):
        check_columns(pd.DataFrame({"item": [1]}), ["item", "rating"])
    g = np.random.default_rng(1)
    assert check_rng(g) is g


# --------------------------------------------------------------------------- pinned numbers
# Computed from the engines as they stood before the #13 refactor (commit ae00e0e): the same
# rng must give the same resamples and the same interval, to 1e-12.


def _diff(a, b, axis=None):
    return np.mean(a, axis=axis) - np.mean(b, axis=axis)


def _agree(W):
    return (W[:, 0] + W[:, 3]) / W.sum(axis=1)


def _pinned_cases():
    x = np.random.default_rng(11).integers(0, 2, 40).astype(float)
    y = np.random.default_rng(12).normal(size=40)
    cl = np.repeat(np.arange(10), 4)
    st = np.tile([0, 1], 20)
    st_cl = (np.arange(10) % 2)[cl]
    t = np.random.default_rng(13).integers(0, 4, 60)
    tcl = np.repeat(np.arange(12), 5)
    tst = np.tile([0, 1, 2], 20)
    diff, agree, prop = _diff, _agree, prop1
    return {
        "item_percentile": lambda: bootstrap(x, np.mean, rng=0, n_resamples=300),
        "item_basic": lambda: bootstrap(x, np.mean, method="basic", rng=1, n_resamples=300),
        "paired_bca": lambda: bootstrap((x, y), diff, method="bca", rng=2, n_resamples=300),
        "unpaired_bca": lambda: bootstrap((x, y), diff, paired=False, method="bca", rng=3, n_resamples=300),
        "vectorized_bca": lambda: bootstrap((x, y), diff, vectorized=True, method="bca", rng=4, n_resamples=300),
        "vectorized_unpaired": lambda: bootstrap((x, y), diff, vectorized=True, paired=False, rng=5, n_resamples=300),
        "stratified": lambda: bootstrap(y, np.mean, unit="stratified", strata=st, rng=6, n_resamples=300),
        "stratified_vectorized": lambda: bootstrap(y, np.mean, unit="stratified", strata=st, vectorized=True, rng=6, n_resamples=300),
        "cluster_bca": lambda: bootstrap(y, np.mean, unit="cluster", clusters=cl, method="bca", rng=7, n_resamples=300),
        "cluster_strata": lambda: bootstrap(y, np.mean, unit="cluster", clusters=cl, strata=st_cl, rng=8, n_resamples=300),
        "generator": lambda: bootstrap(y, np.median, rng=np.random.default_rng(9), n_resamples=300),
        "table_item": lambda: bootstrap_table(t, agree, rng=0, n_resamples=500),
        "table_bca": lambda: bootstrap_table(t, prop, method="bca", rng=1, n_resamples=500),
        "table_cluster_bca": lambda: bootstrap_table(t, agree, unit="cluster", clusters=tcl, method="bca", rng=2, n_resamples=500),
        "table_stratified": lambda: bootstrap_table(t, prop, unit="stratified", strata=tst, rng=3, n_resamples=500),
        "table_cluster_strata": lambda: bootstrap_table(t, agree, unit="cluster", clusters=tcl, strata=(np.arange(12) % 3)[tcl], rng=4, n_resamples=500),
        "sums_cluster": lambda: bootstrap_sums([[1, 2], [3, 3], [0, 4], [2, 5]], lambda S: S[:, 0] / S[:, 1], unit="cluster", method="bca", rng=5, n_resamples=500),
    }


# statistic, low, high, standard error, sum of the defined replicates (in draw order)
PINNED = {
    "item_percentile": (0.575, 0.425, 0.725, 0.07528911202949282, 172.3),
    "item_basic": (0.575, 0.42499999999999993, 0.7249999999999999, 0.07753716697880585, 171.65),
    "paired_bca": (0.5757053551475856, 0.2986864012744548, 0.8557139100945886, 0.1520261856358465, 174.95865092716977),
    "unpaired_bca": (0.5757053551475856, 0.25623529370859577, 0.914189975121372, 0.1644781784582935, 173.7459754753285),
    "vectorized_bca": (0.5757053551475856, 0.27445915548441535, 0.8839855506582551, 0.15256627186657876, 175.71664290427665),
    "vectorized_unpaired": (0.5757053551475856, 0.25070966379483417, 0.9166919988951651, 0.17033610135986488, 172.93088523523704),
    "stratified": (-0.000705355147585618, -0.25620193032340727, 0.2553380751935039, 0.13499380818808865, 2.370363205905122),
    "stratified_vectorized": (-0.000705355147585618, -0.2672284061330415, 0.2525260676707798, 0.14009017864789106, -1.066521405180388),
    "cluster_bca": (-0.000705355147585618, -0.29326401050596795, 0.3029177939045357, 0.14633367716428317, -2.0917963319087103),
    "cluster_strata": (-0.000705355147585618, -0.2680540215050839, 0.24976597677903634, 0.13797981294770864, 0.8185364262633812),
    "generator": (-0.08280373522449967, -0.4208873509582093, 0.3204642813329229, 0.16192811652944233, -27.92700290397649),
    "table_item": (0.5833333333333334, 0.45, 0.7, 0.06297985243324976, 291.9666666666667),
    "table_bca": (0.23333333333333334, 0.15, 0.35, 0.05054434263352944, 117.15),
    "table_cluster_bca": (0.5833333333333334, 0.4666666666666667, 0.7333333333333333, 0.06989296617047297, 293.95000000000005),
    "table_stratified": (0.23333333333333334, 0.13333333333333333, 0.3333333333333333, 0.053273429952463376, 113.6),
    "table_cluster_strata": (0.5833333333333334, 0.4666666666666667, 0.7166666666666667, 0.06249773097640298, 293.65),
    "sums_cluster": (0.42857142857142855, 0.11764705882352941, 0.8, 0.182732566782348, 219.2718529105913),
}


@pytest.mark.parametrize("case", sorted(PINNED))
def test_pinned_bootstrap_numbers(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _pinned_cases()[case]()
    got = (res.statistic, *res.confidence_interval, res.standard_error,
           float(res.bootstrap_distribution.sum()))
    assert got == pytest.approx(PINNED[case], rel=1e-12, abs=1e-12)


# --------------------------------------------------------------------------- the seed a result drew
# Issue #13: "every result records the seed it drew" -- and re-running with it gives the same numbers.


def _same(a, b):
    return (a.confidence_interval == b.confidence_interval
            and np.array_equal(a.bootstrap_distribution, b.bootstrap_distribution))


@pytest.mark.parametrize("engine", ["bootstrap", "bootstrap_table", "bootstrap_sums"])
def test_every_rng_form_records_a_seed_that_reproduces_the_interval(engine):
    x = np.array([0, 1, 1, 1, 0, 1, 1, 0, 1, 1])
    run = {
        "bootstrap": lambda rng: bootstrap(x, np.mean, rng=rng, n_resamples=200),
        "bootstrap_table": lambda rng: bootstrap_table(x, prop1, rng=rng, n_resamples=200),
        "bootstrap_sums": lambda rng: bootstrap_sums(np.c_[x, np.ones(10)], lambda S: S[:, 0] / S[:, 1],
                                                     rng=rng, n_resamples=200),
    }[engine]
    by_int = run(7)
    assert by_int.seed == 7 and by_int.seed_reason is None
    by_fresh_generator = run(np.random.default_rng(7))   # a Generator that has not drawn: its seed is known
    assert by_fresh_generator.seed == 7 and _same(by_fresh_generator, by_int)
    by_entropy = run(None)                               # fresh entropy, drawn by us and recorded
    assert isinstance(by_entropy.seed, int) and by_entropy.seed >= 2 ** 32
    assert _same(run(by_entropy.seed), by_entropy)
    used = np.random.default_rng(7)
    used.random()
    mid_stream = run(used)                               # no int seed gives this stream ...
    assert mid_stream.seed is None and "already drawn" in mid_stream.seed_reason
    assert not _same(mid_stream, by_int)
    assert _same(run(mid_stream.seed_record.generator()), mid_stream)   # ... but its state replays it


def test_recording_the_seed_draws_nothing_from_the_callers_generator():
    g, h = np.random.default_rng(3), np.random.default_rng(3)
    bootstrap(np.arange(10.0), np.mean, rng=g, n_resamples=50)
    for _ in range(50):
        h.integers(0, 10, size=(1, 10))   # exactly the draws of 50 item resamples of 10 items
    assert g.random() == h.random()


def test_seed_is_a_to_frame_column_and_absent_with_a_reason_when_nothing_was_drawn():
    res = bootstrap([0.0, 1.0, 1.0], np.mean, rng=11, n_resamples=100)
    row = res.to_frame().iloc[0]
    assert row["seed"] == 11 and row["seed_reason"] is None
    with pytest.warns(UndefinedWarning):
        res = bootstrap([1.0, 2.0], lambda v: np.nan, rng=11, n_resamples=100)
    assert res.seed is None and "no resample was drawn" in res.to_frame().iloc[0]["seed_reason"]
