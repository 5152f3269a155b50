"""Binomial intervals and the paired difference of proportions.

Published values:

* Newcombe, R. G. (1998a). Two-sided confidence intervals for the single
  proportion: comparison of seven methods. Stat Med 17, 857-872, Table II
  (examples 81/263, 15/148, 0/20, 1/29; methods 3 Wilson, 4 Wilson with
  continuity correction, 5 Clopper-Pearson), 4 decimals.
* Newcombe, R. G. (1998b). Improved confidence intervals for the difference
  between binomial proportions based on paired data. Stat Med 17, 2635-2650,
  Table II, example (a) 36/12/2/0, method 10: 0.0569 to 0.3404.
* Fagerland, Lydersen and Laake (2017), Statistical Analysis of Contingency
  Tables, ch. 8, Cavo et al. (2012) 59/6/16/80, Newcombe square-and-add
  (method 10): -0.0621 (-0.1186 to -0.0046), as printed by the book's companion
  R package ``contingencytables`` (tests/testthat/test-ch8.R).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from evaltk.stats import (
    ConfidenceInterval,
    PairedDifferenceResult,
    ProportionInterval,
    clopper_pearson_bounds,
    clopper_pearson_interval,
    critical_value,
    paired_difference_interval,
    wilson_bounds,
    wilson_interval,
)
from evaltk.values import Abstention, UndefinedWarning

# Newcombe (1998a) Table II: (x, n) -> (Wilson, Wilson cc, Clopper-Pearson), 95%.
NEWCOMBE_1998A = {
    (81, 263): ((0.2553, 0.3662), (0.2535, 0.3682), (0.2527, 0.3676)),
    (15, 148): ((0.0624, 0.1605), (0.0598, 0.1644), (0.0578, 0.1617)),
    (0, 20): ((0.0000, 0.1611), (0.0000, 0.2005), (0.0000, 0.1684)),
    (1, 29): ((0.0061, 0.1718), (0.0018, 0.1963), (0.0009, 0.1776)),
}


def _close(ci, ref, tol=5e-5):
    return abs(ci[0] - ref[0]) <= tol and abs(ci[1] - ref[1]) <= tol


@pytest.mark.parametrize("case", sorted(NEWCOMBE_1998A))
def test_newcombe_1998a_table_ii(case):
    x, n = case
    w, wcc, cp = NEWCOMBE_1998A[case]
    assert _close(wilson_interval(x, n).confidence_interval, w)
    assert _close(wilson_interval(x, n, continuity=True).confidence_interval, wcc)
    assert _close(clopper_pearson_interval(x, n).confidence_interval, cp)


@pytest.mark.parametrize("x,n", [(0, 1), (0, 10), (3, 10), (10, 10), (81, 263), (999, 1000), (5, 7)])
@pytest.mark.parametrize("cl", [0.8, 0.9, 0.95, 0.99])
def test_cross_check_statsmodels(x, n, cl):
    alpha = 1 - cl
    w = wilson_interval(x, n, confidence_level=cl).confidence_interval
    np.testing.assert_allclose(w, proportion_confint(x, n, alpha=alpha, method="wilson"), atol=1e-12)
    cp = clopper_pearson_interval(x, n, confidence_level=cl).confidence_interval
    np.testing.assert_allclose(cp, proportion_confint(x, n, alpha=alpha, method="beta"), atol=1e-10)


def test_result_shape_and_frame():
    r = wilson_interval(3, 10)
    assert isinstance(r, ProportionInterval)
    assert r.statistic == 0.3 and r.n == 10 and r.successes == 3 and r.method == "wilson"
    f = r.to_frame()
    assert list(f.columns) == ["statistic", "cause", "reason", "ci_low", "ci_high", "ci_cause", "ci_reason", "successes",
                               "n",
                               "confidence_level", "method"]
    assert r.defined and isinstance(r.confidence_interval, ConfidenceInterval)
    assert f.loc[0, "ci_low"] == r.confidence_interval[0]
    assert r.half_width == pytest.approx((r.confidence_interval[1] - r.confidence_interval[0]) / 2)
    assert clopper_pearson_interval(3, 10).method == "clopper_pearson"
    assert wilson_interval(3, 10, continuity=True).method == "wilson_cc"


def test_zero_trials_abstains_with_warning():
    for fn in (wilson_interval, clopper_pearson_interval):
        with pytest.warns(UndefinedWarning):
            r = fn(0, 0)
        assert isinstance(r, ProportionInterval) and not r.defined
        assert isinstance(r.statistic, Abstention) and r.statistic.cause.value == "missing_evidence"
        assert isinstance(r.confidence_interval, Abstention) and isinstance(r.half_width, Abstention)
        f = r.to_frame()
        assert f.loc[0, "cause"] == "missing_evidence" and f.loc[0, "ci_cause"] == "missing_evidence"
    with pytest.warns(UndefinedWarning):
        d = paired_difference_interval([[0, 0], [0, 0]])
    assert isinstance(d, PairedDifferenceResult) and isinstance(d.statistic, Abstention)
    assert d.to_frame().loc[0, "cause"] == "missing_evidence"


@pytest.mark.parametrize(
    "args,kwargs,exc,msg",
    [
        ((5, 4), {}, ValueError, "`successes` (5) must not exceed `n` (4)"),
        ((-1, 4), {}, ValueError, "`successes` must be >= 0"),
        ((1.5, 4), {}, TypeError, "`successes` must be a whole number"),
        ((True, 4), {}, TypeError, "`successes` must be a whole number"),
        ((1, 4), {"confidence_level": 1.5}, ValueError, "`confidence_level` must be in (0, 1); got 1.5."),
        ((1, 4), {"confidence_level": 0}, ValueError, "`confidence_level` must be in (0, 1)"),
    ],
)
def test_bad_input_names_the_parameter(args, kwargs, exc, msg):
    for fn in (wilson_interval, clopper_pearson_interval):
        with pytest.raises(exc) as e:
            fn(*args, **kwargs)
        assert msg in str(e.value)


def test_whole_float_counts_accepted():
    assert wilson_interval(3.0, 10.0).confidence_interval == wilson_interval(3, 10).confidence_interval


def test_vectorised_bounds_match_scalar():
    xs = np.array([0, 1, 5, 10, 3])
    ns = np.array([10, 10, 10, 10, 0])
    xs[4] = 0
    for cc in (False, True):
        lo, hi = wilson_bounds(xs, ns, continuity=cc)
        for i in range(4):
            ci = wilson_interval(int(xs[i]), int(ns[i]), continuity=cc).confidence_interval
            assert (lo[i], hi[i]) == pytest.approx(ci)
        assert np.isnan(lo[4]) and np.isnan(hi[4])
    lo, hi = clopper_pearson_bounds(xs, ns)
    assert np.isnan(lo[4])
    assert (lo[1], hi[1]) == pytest.approx(clopper_pearson_interval(1, 10).confidence_interval)
    with pytest.raises(ValueError):
        wilson_bounds([3], [2])


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 400), st.integers(1, 400), st.sampled_from([0.8, 0.95, 0.99]))
def test_interval_invariants(x, n, cl):
    x = min(x, n)
    p = x / n
    w = wilson_interval(x, n, confidence_level=cl).confidence_interval
    wcc = wilson_interval(x, n, confidence_level=cl, continuity=True).confidence_interval
    cp = clopper_pearson_interval(x, n, confidence_level=cl).confidence_interval
    for lo, hi in (w, wcc, cp):
        assert 0.0 <= lo <= p <= hi <= 1.0
    # the continuity correction only widens; Clopper-Pearson contains... nothing weaker than Wilson at 0 and n
    assert wcc[0] <= w[0] + 1e-12 and wcc[1] >= w[1] - 1e-12
    # symmetry: x successes <-> n - x failures
    w2 = wilson_interval(n - x, n, confidence_level=cl).confidence_interval
    assert w2 == pytest.approx((1 - w[1], 1 - w[0]), abs=1e-12)
    cp2 = clopper_pearson_interval(n - x, n, confidence_level=cl).confidence_interval
    assert cp2 == pytest.approx((1 - cp[1], 1 - cp[0]), abs=1e-9)


# --------------------------------------------------------------------------- paired difference


def test_newcombe_1998b_example_a():
    # Newcombe (1998b) Table II, example (a): 36/12/2/0, method 10: 0.0569 to 0.3404.
    r = paired_difference_interval([[36, 12], [2, 0]])
    assert isinstance(r, PairedDifferenceResult)
    assert r.statistic == pytest.approx(0.2)
    assert _close(r.confidence_interval, (0.0569, 0.3404))
    assert r.p1 == pytest.approx(48 / 50) and r.p2 == pytest.approx(38 / 50)
    assert r.table == (36, 12, 2, 0) and r.n == 50


def test_fagerland_2017_cavo_example():
    r = paired_difference_interval([[59, 6], [16, 80]])
    assert round(r.statistic, 4) == -0.0621
    assert _close(r.confidence_interval, (-0.1186, -0.0046))


@pytest.mark.parametrize(
    "table",
    # 0 <= ad - bc <= n/2 makes phi = 0: method 10 then equals the independent-samples
    # hybrid score interval with both samples of size n (statsmodels' "newcomb").
    [[[4, 3], [3, 3]], [[3, 4], [4, 6]], [[2, 10], [1, 5]], [[5, 5], [5, 5]]],
)
def test_phi_zero_reduces_to_independent_newcombe(table):
    (a, b), (c, d) = table
    n = a + b + c + d
    assert 0 <= a * d - b * c <= n / 2  # the precondition for phi = 0
    r = paired_difference_interval(table)
    ref = confint_proportions_2indep(a + b, n, a + c, n, method="newcomb", compare="diff")
    np.testing.assert_allclose(r.confidence_interval, ref, atol=1e-10)


def test_positive_correlation_narrows_the_interval():
    # Same margins, more concordance: ad - bc > n/2 gives phi > 0 and a narrower interval
    # than the phi = 0 (independent) construction.
    paired = paired_difference_interval([[40, 8], [2, 50]]).confidence_interval
    ref = confint_proportions_2indep(48, 100, 42, 100, method="newcomb", compare="diff")
    assert paired[1] - paired[0] < ref[1] - ref[0]


def test_orientation_and_antisymmetry():
    r = paired_difference_interval([[20, 9], [3, 18]])
    s = paired_difference_interval([[20, 3], [9, 18]])  # sources swapped
    assert r.statistic == pytest.approx(6 / 50)
    assert s.statistic == pytest.approx(-r.statistic)
    assert s.confidence_interval == pytest.approx((-r.confidence_interval[1], -r.confidence_interval[0]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 60), min_size=4, max_size=4))
def test_paired_interval_invariants(cells):
    if sum(cells) == 0:
        return
    a, b, c, d = cells
    r = paired_difference_interval([[a, b], [c, d]])
    lo, hi = r.confidence_interval
    assert -1.0 <= lo <= r.statistic <= hi <= 1.0
    assert r.statistic == pytest.approx((b - c) / sum(cells))


def test_paired_bad_table():
    with pytest.raises(ValueError, match="2x2"):
        paired_difference_interval([[1, 2, 3], [4, 5, 6]])
    with pytest.raises(ValueError, match=r"`table\[0\]\[1\]` must be >= 0"):
        paired_difference_interval([[1, -2], [3, 4]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paired_difference_interval([[1, 0], [0, 0]])  # n = 1 is defined


def test_paired_frame():
    f = paired_difference_interval([[36, 12], [2, 0]]).to_frame()
    assert f.loc[0, ["n11", "n10", "n01", "n00", "n"]].tolist() == [36, 12, 2, 0, 50]
    assert f.loc[0, "method"] == "newcombe_hybrid_score"


@pytest.mark.parametrize(("cl", "df", "table"), [(0.95, 1, 12.706), (0.95, 11, 2.201), (0.99, 5, 4.032),
                                                 (0.90, 30, 1.697), (0.95, 120, 1.980)])
def test_t_critical_value_matches_the_t_table_and_scipy(cl, df, table):
    """Student's t two-sided critical values (any t table, 3 decimals) and scipy's t.ppf exactly."""
    from scipy import stats

    c = critical_value(cl, "t", df)
    assert round(c, 3) == table
    assert c == float(stats.t.ppf(0.5 + cl / 2.0, df))


def test_t_critical_value_on_infinite_df_is_normal():
    assert critical_value(0.95, "t") == pytest.approx(critical_value(0.95), abs=1e-12)
    with pytest.raises(ValueError, match="distribution"):
        critical_value(0.95, "chi2")
