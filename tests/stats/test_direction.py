"""Direction of error of a judge against a human anchor (seed 002, issue 3 section 3).

Published values:

* Fagerland, Lydersen and Laake (2013), "The McNemar test for binary matched-pairs
  data: mid-p and asymptotic are better than exact conditional", BMC Med Res
  Methodol 13:91, example of Bentur et al. (2009), b = 1, c = 7: exact conditional
  p = 0.070, mid-p = 0.039, asymptotic = 0.034, asymptotic with continuity
  correction = 0.077.
* Stuart (1955), Biometrika 42, unaided distance vision of 7,477 women (4 x 4);
  Agresti (2002) Categorical Data Analysis section 10.3: Stuart-Maxwell 11.96 on
  3 df (P = 0.008).
* Newcombe (1998b) Table II, example (a) 36/12/2/0: 0.0569 to 0.3404.
* Fagerland, Lydersen and Laake (2017), Statistical Analysis of Contingency
  Tables, ch. 9, Peterson et al. (2007) pretherapy susceptibility 4 x 4: Stuart
  test T0 = 26.250 on 3 df, P = 0.000008 (as printed by the book's companion R
  package ``contingencytables``, tests/testthat/test-ch9.R).
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.contingency_tables import SquareTable, mcnemar

from evaltk.errors import InputError
from evaltk.stats import (
    LEANS,
    MCNEMAR_METHOD,
    NO_DETECTABLE_LEAN,
    OVERSTATES,
    UNDERSTATES,
    UNKNOWN,
    DirectionResult,
    McNemarResult,
    MeanSignedDifferenceResult,
    SignedBiasResult,
    StuartMaxwellResult,
    class_bias,
    confusion_asymmetry,
    confusion_table,
    direction_of_error,
    direction_table,
    holm_adjust,
    lean_from_interval,
    mcnemar_test,
    mean_signed_difference,
    signed_bias,
    stuart_maxwell_test,
    table_direction,
)
from evaltk.values import Abstention, UndefinedWarning

BENTUR = [[1, 1], [7, 12]]
STUART_VISION = [[1520, 266, 124, 66], [234, 1512, 432, 78], [117, 362, 1772, 205], [36, 82, 179, 492]]


def _labels_from_table(a, b, c, d, pos="Yes", neg="No"):
    j = [pos] * a + [pos] * b + [neg] * c + [neg] * d
    h = [pos] * a + [neg] * b + [pos] * c + [neg] * d
    return j, h


# --------------------------------------------------------------------------- McNemar


def test_mcnemar_fagerland_2013_bentur():
    assert round(mcnemar_test(BENTUR, method="exact").pvalue, 3) == 0.070
    assert round(mcnemar_test(BENTUR, method="mid-p").pvalue, 3) == 0.039
    assert round(mcnemar_test(BENTUR, method="asymptotic").pvalue, 3) == 0.034
    assert round(mcnemar_test(BENTUR, method="asymptotic", correction=True).pvalue, 3) == 0.077


@pytest.mark.parametrize("table", [[[10, 3], [9, 20]], [[5, 0], [0, 5]], [[1, 12], [2, 0]], [[0, 40], [35, 0]],
                                   [[3, 4], [4, 3]]])
def test_mcnemar_cross_check_statsmodels(table):
    ex = mcnemar_test(table, method="exact")
    ref = mcnemar(table, exact=True)
    assert ex.pvalue == pytest.approx(ref.pvalue) and ex.statistic == ref.statistic
    b, c = table[0][1], table[1][0]
    if b + c:
        # with b == c the corrected statistic is clamped at 0 here (p = 1); statsmodels and R
        # square (|b - c| - 1) and report 1/(b + c): a documented deviation, tested below.
        for corr in (False, True) if b != c else (False,):
            asy = mcnemar_test(table, method="asymptotic", correction=corr)
            ref = mcnemar(table, exact=False, correction=corr)
            assert asy.pvalue == pytest.approx(ref.pvalue) and asy.statistic == pytest.approx(ref.statistic)


def test_mcnemar_midp_between_and_edge_cases():
    r = mcnemar_test([[0, 4], [4, 0]], method="mid-p")
    assert r.pvalue == 1.0  # balanced discordance
    r = mcnemar_test([[0, 4], [4, 0]], method="asymptotic", correction=True)
    assert r.statistic == 0.0 and r.pvalue == 1.0
    assert mcnemar_test([[5, 0], [0, 5]], method="mid-p").pvalue == 1.0
    with pytest.warns(UndefinedWarning):
        m = mcnemar_test([[5, 0], [0, 5]], method="asymptotic")
    assert isinstance(m, McNemarResult) and isinstance(m.statistic, Abstention) and isinstance(m.pvalue, Abstention)
    assert not m.defined and m.to_frame().loc[0, "cause"] == "missing_evidence"
    with pytest.raises(ValueError, match="`method` must be one of 'exact', 'mid-p', 'asymptotic'"):
        mcnemar_test(BENTUR, method="fisher")
    with pytest.raises(ValueError, match="2x2"):
        mcnemar_test([[1, 2, 3]])
    with pytest.raises(ValueError, match="non-negative whole counts"):
        mcnemar_test([[1, -2], [3, 4]])


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 40), st.integers(0, 40))
def test_mcnemar_midp_never_exceeds_exact(b, c):
    t = [[3, b], [c, 3]]
    assert mcnemar_test(t, method="mid-p").pvalue <= mcnemar_test(t, method="exact").pvalue + 1e-12


# --------------------------------------------------------------------------- Stuart-Maxwell


def test_stuart_maxwell_published_vision_data():
    r = stuart_maxwell_test(STUART_VISION)
    assert round(r.statistic, 2) == 11.96 and r.df == 3 and round(r.pvalue, 3) == 0.008


def test_stuart_maxwell_fagerland_2017_peterson():
    # same source: Bhapkar test T = 27.304 on 3 df, P = 0.000005
    peterson = [[596, 18, 6, 5], [0, 2, 0, 0], [0, 0, 42, 0], [11, 0, 0, 0]]
    r = stuart_maxwell_test(peterson)
    assert f"{r.statistic:.3f}" == "26.250" and r.df == 3 and f"{r.pvalue:.6f}" == "0.000008"
    b = stuart_maxwell_test(peterson, method="bhapkar")
    assert f"{b.statistic:.3f}" == "27.304" and b.df == 3 and f"{b.pvalue:.6f}" == "0.000005"
    with pytest.raises(ValueError, match="`method` must be one of 'stuart_maxwell', 'bhapkar'"):
        stuart_maxwell_test(peterson, method="bowker")


@pytest.mark.parametrize("table", [STUART_VISION, [[20, 5, 1], [2, 15, 4], [1, 1, 30]],
                                   [[10, 2, 3, 1], [4, 8, 2, 2], [0, 1, 12, 5], [2, 3, 1, 9]]])
def test_stuart_maxwell_cross_check_statsmodels(table):
    for method in ("stuart_maxwell", "bhapkar"):
        r = stuart_maxwell_test(table, method=method)
        ref = SquareTable(np.asarray(table), shift_zeros=False).homogeneity(method=method)
        assert r.statistic == pytest.approx(ref.statistic) and r.df == ref.df
        assert r.pvalue == pytest.approx(ref.pvalue)


def test_stuart_maxwell_two_categories_is_mcnemar():
    r = stuart_maxwell_test([[10, 3], [9, 20]])
    assert r.statistic == pytest.approx(mcnemar_test([[10, 3], [9, 20]], method="asymptotic").statistic)


def test_stuart_maxwell_unused_category_dropped_and_undefined():
    t = [[10, 2, 0], [5, 8, 0], [0, 0, 7]]  # third class never confused: no information on margins
    r = stuart_maxwell_test(t, categories=["a", "b", "c"])
    assert r.df == 1 and r.categories == ("a", "b")
    with pytest.warns(UndefinedWarning):
        sm = stuart_maxwell_test(np.diag([3, 4, 5]))
    assert isinstance(sm, StuartMaxwellResult) and isinstance(sm.statistic, Abstention) and not sm.defined
    with pytest.raises(ValueError, match="square"):
        stuart_maxwell_test([[1, 2, 3], [1, 2, 3]])


# --------------------------------------------------------------------------- signed bias


def test_signed_bias_newcombe_example_and_counts():
    j, h = _labels_from_table(36, 12, 2, 0)
    r = signed_bias(j, h, positive="Yes", negative="No")
    assert r.statistic == pytest.approx(0.2)
    assert r.confidence_interval == pytest.approx((0.0569, 0.3404), abs=5e-5)
    assert r.judge_rate == pytest.approx(0.96) and r.human_rate == pytest.approx(0.76)
    assert (r.over_predicted, r.under_predicted) == (12, 2)
    assert r.lean == OVERSTATES
    assert r.mcnemar.method == "mid-p" and r.mcnemar.pvalue < 0.05
    f = r.to_frame()
    assert f.loc[0, "lean"] == OVERSTATES and f.loc[0, "n_pairs"] == 50


def test_signed_bias_abstentions_excluded_and_counted():
    j = ["Yes", "Yes", "Cannot tell", None, "No", "Yes", float("nan")]
    h = ["Yes", "No", "Yes", "Unsure", "Unsure", "No", "No"]
    r = signed_bias(j, h, positive="Yes", abstain=["Cannot tell", "Unsure"])
    c = r.counts
    assert (c.n_items, c.n_pairs, c.n_judge_abstained, c.n_human_abstained, c.n_both_abstained) == (7, 3, 2, 1, 1)
    assert c.coverage == pytest.approx(3 / 7)
    assert r.table == (1, 2, 0, 0)


def test_signed_bias_understates_and_no_lean():
    j, h = _labels_from_table(20, 1, 15, 64)
    assert signed_bias(j, h, positive="Yes").lean == UNDERSTATES
    j, h = _labels_from_table(20, 5, 5, 70)
    r = signed_bias(j, h, positive="Yes")
    assert r.statistic == 0 and r.lean == NO_DETECTABLE_LEAN


def test_signed_bias_errors_and_undefined():
    with pytest.raises(ValueError, match="same items; got 2 and 3"):
        signed_bias(["Yes", "No"], ["Yes", "No", "No"], positive="Yes")
    with pytest.raises(ValueError, match="label 'yes '"):
        signed_bias(["Yes", "yes "], ["Yes", "No"], positive="Yes", negative="No")
    with pytest.raises(TypeError, match="`judge` must be a sequence"):
        signed_bias("YesNo", ["Yes", "No"], positive="Yes")
    with pytest.raises(ValueError, match="`confidence_level` must be in"):
        signed_bias(["Yes"], ["Yes"], positive="Yes", confidence_level=95)
    with pytest.warns(UndefinedWarning):
        r = signed_bias([None, "Yes"], ["Yes", None], positive="Yes")
    assert isinstance(r, SignedBiasResult) and isinstance(r.statistic, Abstention) and r.lean == UNKNOWN
    f = r.to_frame()
    assert f.loc[0, "cause"] == "missing_evidence" and f.loc[0, "n_pairs"] == 0


def test_signed_bias_bool_and_series_inputs():
    j = pd.Series([True, True, False, True])
    h = np.array([True, False, False, False])
    r = signed_bias(j, h)
    assert r.statistic == pytest.approx(0.5)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=80))
def test_signed_bias_antisymmetric_and_order_invariant(pairs):
    j = [a for a, _ in pairs]
    h = [b for _, b in pairs]
    r = signed_bias(j, h)
    s = signed_bias(h, j)
    assert s.statistic == pytest.approx(-r.statistic)
    assert s.confidence_interval == pytest.approx((-r.confidence_interval[1], -r.confidence_interval[0]))
    flip = {OVERSTATES: UNDERSTATES, UNDERSTATES: OVERSTATES, NO_DETECTABLE_LEAN: NO_DETECTABLE_LEAN}
    assert s.lean == flip[r.lean]
    perm = np.random.default_rng(len(pairs)).permutation(len(pairs))
    p = signed_bias([j[i] for i in perm], [h[i] for i in perm])
    assert p.statistic == pytest.approx(r.statistic) and p.confidence_interval == pytest.approx(r.confidence_interval)
    assert r.judge_rate - r.human_rate == pytest.approx(np.mean(j) - np.mean(h))


# --------------------------------------------------------------------------- per class


def test_class_bias_counts_and_leans():
    # judge pushes "B" items into "A": 30 items human B / judge A
    j = ["A"] * 40 + ["A"] * 30 + ["B"] * 30 + ["C"] * 20
    h = ["A"] * 40 + ["B"] * 30 + ["B"] * 30 + ["C"] * 20
    f = class_bias(j, h).set_index("category")
    assert f.loc["A", "over_predicted"] == 30 and f.loc["A", "under_predicted"] == 0
    assert f.loc["B", "under_predicted"] == 30 and f.loc["B", "over_predicted"] == 0
    assert f.loc["A", "lean"] == OVERSTATES and f.loc["B", "lean"] == UNDERSTATES
    assert f.loc["C", "lean"] == NO_DETECTABLE_LEAN and f.loc["C", "bias"] == 0
    assert f["bias"].sum() == pytest.approx(0.0)  # rates sum to one on both sides
    assert (f["judge_rate"] - f["human_rate"]).tolist() == pytest.approx(f["bias"].tolist())


def test_class_bias_declared_domain():
    f = class_bias(["A", "A"], ["A", "B"], categories=["A", "B", "C"])
    assert f["category"].tolist() == ["A", "B", "C"]
    assert f.set_index("category").loc["C", "judge_rate"] == 0
    with pytest.raises(ValueError, match="label 'D' is not among `categories`"):
        class_bias(["A", "D"], ["A", "B"], categories=["A", "B"])


def test_confusion_asymmetry_matches_square_table():
    rng = np.random.default_rng(3)
    cats = ["a", "b", "c"]
    j = rng.choice(cats, 300).tolist()
    h = rng.choice(cats, 300).tolist()
    f = confusion_asymmetry(j, h, categories=cats)
    tab = pd.crosstab(pd.Series(j, name="j"), pd.Series(h, name="h")).reindex(index=cats, columns=cats).to_numpy()
    for _, row in f.iterrows():
        i, k = cats.index(row["class_i"]), cats.index(row["class_j"])
        assert row["judge_i_human_j"] == tab[i, k] and row["judge_j_human_i"] == tab[k, i]
        assert row["asymmetry"] == pytest.approx((tab[i, k] - tab[k, i]) / (tab[i, k] + tab[k, i]))
    assert len(f) == 3


def test_confusion_asymmetry_no_confusion_has_cause():
    f = confusion_asymmetry(["a", "b"], ["a", "b"], categories=["a", "b"])
    assert np.isnan(f.loc[0, "asymmetry"]) and f.loc[0, "cause"] == "missing_evidence"


# --------------------------------------------------------------------------- ordinal


def test_mean_signed_difference_matches_scipy_t_interval():
    from scipy import stats

    scale = ["1. Complete Failure", "2. Suboptimal", "3. Somewhat Optimal", "4. Completely Optimal"]
    rng = np.random.default_rng(7)
    h = rng.integers(0, 4, 120)
    j = np.clip(h + rng.choice([0, 0, 1], 120), 0, 3)
    r = mean_signed_difference([scale[i] for i in j], [scale[i] for i in h], categories=scale)
    d = (j - h).astype(float)
    ref = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert r.statistic == pytest.approx(d.mean())
    assert r.confidence_interval == pytest.approx((ref.low, ref.high))
    assert r.lean == OVERSTATES


def test_mean_signed_difference_mapping_numeric_and_errors():
    eff = {"Lots": 0.0, "A few": 0.5, "None": 1.0}
    r = mean_signed_difference(["Lots", "Lots", "A few"], ["None", "A few", "A few"], categories=eff)
    assert r.statistic == pytest.approx(-0.5)
    with pytest.warns(UndefinedWarning, match="no spread"):
        r = mean_signed_difference([1, 2, 3], [1, 2, 3])
    assert r.statistic == 0 and r.lean == NO_DETECTABLE_LEAN and isinstance(r.std_error, Abstention)
    assert r.pvalue == 1.0 and r.test == "sign"
    with pytest.raises(ValueError, match="pass the ordered scale as `categories`"):
        mean_signed_difference(["a", "b"], ["a", "b"])
    with pytest.raises(ValueError, match="outside the declared scale"):
        mean_signed_difference(["Lots", "Some"], ["Lots", "Lots"], categories=eff)
    with pytest.warns(UndefinedWarning):
        m = mean_signed_difference([1], [2])
    assert isinstance(m, MeanSignedDifferenceResult) and isinstance(m.statistic, Abstention) and m.lean == UNKNOWN


# --------------------------------------------------------------------------- in words


def test_lean_words():
    assert set(LEANS) == {"overstates", "understates", "no detectable lean", "unknown"}
    assert lean_from_interval(0.0, 0.1) == NO_DETECTABLE_LEAN
    assert lean_from_interval(float("nan"), 0.1) == UNKNOWN


def test_direction_of_error_binary_ordinal_unknown():
    j, h = _labels_from_table(30, 2, 14, 54)
    r = direction_of_error(j, h, positive="Yes")
    assert isinstance(r, DirectionResult) and r.lean == UNDERSTATES and r.scale == "binary"
    assert r.pvalue == pytest.approx(mcnemar_test([[30, 2], [14, 54]]).pvalue)
    assert direction_of_error(j, None, positive="Yes").lean == UNKNOWN
    none_paired = direction_of_error(["Yes", None], [None, "No"], positive="Yes")
    assert none_paired.lean == UNKNOWN and "no anchor" in none_paired.reason
    o = direction_of_error([3, 3, 2, 3, 3], [1, 2, 1, 2, 1], scale="ordinal")
    assert o.lean == OVERSTATES and 0 <= o.pvalue < 0.05
    with pytest.raises(ValueError, match="`scale` must be one of 'binary', 'ordinal'"):
        direction_of_error(j, h, scale="nominal")


def test_direction_table_fills_seed_002_shape():
    # t_task: cannot-tell scored as failure by the judge -> understates completion.
    task_j, task_h = _labels_from_table(50, 0, 20, 30)
    # t_eff: no human waste label anywhere -> unknown.
    df = pd.concat([
        pd.DataFrame({"dimension": "t_task", "judge": task_j, "human": task_h}),
        pd.DataFrame({"dimension": "t_eff", "judge": ["None", "Lots"] * 5, "human": [None] * 10}),
        pd.DataFrame({"dimension": "t_safe", "judge": ["Yes"] * 40 + ["No"] * 10,
                      "human": ["Yes"] * 25 + ["No"] * 25}),
    ], ignore_index=True)
    t = direction_table(df, positive="Yes", scales={"t_eff": "ordinal"},
                        categories={"t_eff": ["Lots", "A few", "None"]}).set_index("dimension")
    assert t.loc["t_task", "lean"] == UNDERSTATES
    assert t.loc["t_eff", "lean"] == UNKNOWN and t.loc["t_eff", "n_pairs"] == 0
    assert t.loc["t_safe", "lean"] == OVERSTATES
    assert {"statistic", "ci_low", "ci_high", "pvalue", "reason", "n_items"} <= set(t.columns)
    with pytest.raises(ValueError, match="must have a column `human`"):
        direction_table(df.drop(columns="human"))


# --------------------------------------------------------------------------- honest at the boundaries (issue #16)


def test_identical_ordinal_differences_are_read_by_the_sign_test():
    """Two items with the same difference gave a point interval, p = 0.0 and "overstates"."""
    from scipy.stats import binomtest
    r = direction_of_error([2, 3], [1, 2], scale="ordinal", categories=[1, 2, 3])
    assert r.lean == NO_DETECTABLE_LEAN and r.statistic == 1.0
    assert r.pvalue == pytest.approx(binomtest(2, 2, 0.5).pvalue) == 0.5
    assert isinstance(r.confidence_interval, Abstention) and "no spread" in r.confidence_interval.reason
    assert "sign test" in r.method
    f = r.to_frame()
    assert np.isnan(f.loc[0, "ci_low"]) and f.loc[0, "ci_cause"] == "missing_evidence"
    # ten items all one step up: the sign test does support a lean (p = 2 / 2^10)
    r10 = direction_of_error([2] * 10, [1] * 10, scale="ordinal", categories=[1, 2, 3])
    assert r10.lean == "overstates" and r10.pvalue == pytest.approx(binomtest(10, 10, 0.5).pvalue)
    with pytest.warns(UndefinedWarning):
        down = mean_signed_difference([1] * 10, [3] * 10, categories=[1, 2, 3])
    assert down.lean == "understates" and down.test == "sign"


def test_ordinal_t_test_pvalue_matches_scipy():
    from scipy.stats import ttest_1samp
    j, h = [1, 2, 3, 3, 2, 3, 1, 3], [1, 1, 2, 3, 3, 2, 1, 2]
    m = mean_signed_difference(j, h)
    assert m.test == "t" and m.pvalue == pytest.approx(ttest_1samp(np.subtract(j, h), 0.0).pvalue)
    assert direction_of_error(j, h, scale="ordinal", categories=[1, 2, 3]).pvalue == pytest.approx(m.pvalue)


def test_one_mcnemar_for_signed_bias_and_the_regression_gate():
    """The gate used the exact test while signed_bias used mid-p: one choice, one home."""
    from evaltk.judges._regression import _compare_binary
    rng = np.random.default_rng(4)
    mb = (rng.random(60) < 0.7).astype(int)
    mc = np.where(rng.random(60) < 0.8, mb, 1 - mb)
    row = _compare_binary(mb, mc, 0.95)
    sb = signed_bias(mc.tolist(), mb.tolist(), positive=1)
    assert MCNEMAR_METHOD == "mid-p" and sb.mcnemar.method == MCNEMAR_METHOD
    assert row["pvalue"] == sb.mcnemar.pvalue and row["test"].startswith("McNemar mid-p")
    assert mcnemar_test([[1, 1], [7, 12]]).pvalue == mcnemar_test([[1, 1], [7, 12]], method="mid-p").pvalue


def test_r_mcnemar_test_gives_zero_when_b_equals_c():
    """R: mcnemar.test(matrix(c(5, 3, 3, 5), 2)) -> McNemar's chi-squared = 0, df = 1, p-value = 1."""
    r = mcnemar_test([[5, 3], [3, 5]], method="asymptotic", correction=True)
    assert r.statistic == 0.0 and r.pvalue == 1.0
    sm = mcnemar([[5, 3], [3, 5]], exact=False, correction=True)
    assert sm.statistic == pytest.approx(1 / 6)  # statsmodels squares -1: the one that differs
    from pathlib import Path
    doc = (Path(__file__).parents[2] / "docs" / "calibration.md").read_text()
    assert "R and statsmodels square" not in doc and "as R's `mcnemar.test` does" in doc


def test_holm_adjust_matches_statsmodels():
    from statsmodels.stats.multitest import multipletests
    rng = np.random.default_rng(9)
    for m in (1, 3, 7):
        p = rng.random(m) ** 2
        assert holm_adjust(p) == pytest.approx(multipletests(p, method="holm")[1])
    got = holm_adjust([0.01, np.nan, 0.04, 0.03])
    assert np.isnan(got[1]) and got[[0, 2, 3]] == pytest.approx(multipletests([0.01, 0.04, 0.03], method="holm")[1])
    with pytest.raises(ValueError):
        holm_adjust([0.5, 1.5])


def test_per_class_tests_report_holm_beside_the_raw_pvalue():
    """class_bias and confusion_asymmetry reported one test per class with no multiplicity control."""
    from statsmodels.stats.multitest import multipletests
    rng = np.random.default_rng(3)
    cats = ["A", "B", "C", "D"]
    h = rng.choice(cats, 300).tolist()
    j = [x if rng.random() < 0.7 else rng.choice(["A", "A", "B"]) for x in h]
    cb = class_bias(j, h, categories=cats)
    for _, r in cb.iterrows():
        both = sum(a == b == r["category"] for a, b in zip(j, h, strict=True))
        rest = len(h) - both - r["over_predicted"] - r["under_predicted"]
        t = [[both, r["over_predicted"]], [r["under_predicted"], rest]]
        assert r["mcnemar_midp"] == pytest.approx(mcnemar_test(t).pvalue)
    assert cb["mcnemar_midp_holm"].to_numpy() == pytest.approx(multipletests(cb["mcnemar_midp"], method="holm")[1])
    assert (cb["mcnemar_midp_holm"] >= cb["mcnemar_midp"]).all()
    ca = confusion_asymmetry(j, h, categories=cats)
    tested = ca["mcnemar_midp"].notna()
    assert ca.loc[tested, "mcnemar_midp_holm"].to_numpy() == pytest.approx(
        multipletests(ca.loc[tested, "mcnemar_midp"], method="holm")[1])
    assert list(ca.columns[6:8]) == ["mcnemar_midp", "mcnemar_midp_holm"]


# --------------------------------------------------------------------------- from a count table


def _labels_with_gaps(draw, cats, n):
    """Two raters' labels on n units, each missing (None) on some of them."""
    a = draw(st.lists(st.one_of(st.none(), st.sampled_from(cats)), min_size=n, max_size=n))
    b = draw(st.lists(st.one_of(st.none(), st.sampled_from(cats)), min_size=n, max_size=n))
    return a, b


@st.composite
def _pairs(draw):
    cats = draw(st.sampled_from([[0.0, 1.0], [0.0, 0.5, 1.0]]))
    n = draw(st.integers(1, 60))
    return (cats, *_labels_with_gaps(draw, cats, n))


@settings(max_examples=120, deadline=None)
@given(_pairs())
def test_a_count_table_gives_the_direction_of_its_units(p):
    """``table_direction`` on the units' confusion table equals ``direction_of_error`` on the
    units' own label lists: the lean, the estimate, its interval, the p-value and every count
    (only one side missing, the other, both), for binary and ordinal scales."""
    cats, judge, human = p
    scale = "binary" if len(cats) == 2 else "ordinal"
    t = confusion_table(judge, human, categories=cats)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedWarning)
        got = table_direction(t, scale=scale).to_frame()
        want = direction_of_error(judge, human, scale=scale, positive=1.0, categories={c: c for c in cats},
                                  abstain=()).to_frame()
    pd.testing.assert_frame_equal(got, want)


def test_a_count_table_with_exclusions_that_cannot_be_is_refused():
    t = confusion_table([1.0, None], [1.0, 0.0], categories=[0.0, 1.0])
    bad = dataclasses.replace(t, n_units=1)
    with pytest.raises(InputError, match="do not fit"):
        table_direction(bad)
