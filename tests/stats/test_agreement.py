"""Tests for evaltk.stats._agreement: published worked examples, peer cross-checks, undefined cases.

Published values and their sources:

* Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C
  (4 observers x 12 units, values 1-5, missing data): alpha nominal 0.743,
  ordinal 0.815, interval 0.849, ratio 0.797.  The same data is Gwet (2014),
  *Handbook of Inter-Rater Reliability* 4th ed., p. 120 (irrCAC ``cac.raw4raters``),
  with Gwet's published AC1 0.775 (SE 0.143), Fleiss 0.761 (SE 0.153),
  Conger 0.763, Krippendorff SE 0.146, and the weighted AC2 / Conger values below.
* Fleiss (1971), Table 1 (30 patients x 6 psychiatrists, 5 diagnoses): kappa 0.430,
  per-category kappas .245, .245, .520, .471, .566; the null-hypothesis SE 0.0244
  (Fleiss, Nee & Landis 1979 formula) against the general SE 0.0542.
* SAS PROC FREQ AGREE output reproduced in statsmodels' test suite (3x3 table):
  simple kappa 0.4842, ASE 0.1380, CI (0.2137, 0.7547), ASE under H0 0.1484;
  weighted (Cicchetti-Allison = linear) kappa 0.4701, ASE 0.1457, CI (0.1845, 0.7558),
  ASE under H0 0.1426.
* Gwet (2014) contingency tables (irrCAC ``cont3x3abstractors``, ``cont4x4diagnosis``):
  Scott's pi 0.796 (SE 0.059) and weighted variants; 0.430 (SE 0.046).
* Gwet (2014) irrCAC raw data sets ``cac.raw5obser``, ``cac.raw.gender``, ``cac.ben.gerry``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaltk.errors import InputError
from evaltk.stats import (
    AgreementResult,
    CategoryDomainWarning,
    agreement_difference,
    brennan_prediger,
    classification_metrics,
    classification_report,
    cohen_kappa,
    conger_kappa,
    fleiss_kappa,
    gwet_ac1,
    gwet_ac2,
    krippendorff_alpha,
    pabak,
    percent_agreement,
    scott_pi,
    weight_matrix,
)
from evaltk.values import Abstention, UndefinedWarning, check_value_cause

N = None
# Krippendorff (2011) example C == Gwet (2014) p. 120 (raters in columns, units in rows).
KRIPP_C = np.array(
    [[1, 1, N, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
     [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [N, 5, 5, 5], [N, N, 1, 1], [N, N, 3, N]],
    dtype=float,
)
CATS5 = [1, 2, 3, 4, 5]

# Fleiss (1971) Table 1 as raw ratings (the layout statsmodels' tests use).
FLEISS_1971 = np.array([
    [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5],
    [2, 2, 2, 4, 4, 4], [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4],
    [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5], [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4],
    [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5], [3, 3, 3, 3, 3, 5],
    [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4],
    [1, 4, 4, 4, 4, 5], [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
])

OBS5 = pd.DataFrame({  # Gwet (2014) irrCAC cac.raw5obser
    "Observer1": [1, 1, 2, N, 0, 0, 1, 1, 2, 2, N, 0, 1, 3, 1],
    "Observer2": [1, 1, 3, 0, 0, 0, 0, N, 2, 1, 1, 0, 2, 3, 1],
    "Observer3": [2, 0, 3, 0, 0, 0, 2, 2, 2, 1, 0, 0, 2, 2, 1],
    "Observer4": [N, 1, 3, N, N, N, N, 0, N, 1, 0, 0, 2, 2, N],
    "Observer5": [2, N, N, 0, 0, 0, 1, N, 2, N, N, N, N, 3, 1],
})
GENDER = pd.DataFrame({  # Gwet (2014) irrCAC cac.raw.gender
    "Rater1": "a a a a a b b b c a a a a a b".split(),
    "Rater2": "a a a a b a b c c a a a a b a".split(),
    "Rater3": "a b b c a a b b c a b b c a a".split(),
    "Rater4": "c c c c a a b b c c c c c a a".split(),
})
BEN_GERRY = pd.DataFrame({  # Gwet (2014) irrCAC cac.ben.gerry
    "Ben": ["a", "a", "b", "b", "d", "c", "c", "c", "e", "d", "d", "a"],
    "Gerry": ["b", "a", "b", "b", "b", "c", "c", "c", "e", N, "d", "d"],
})


def expand(table):
    """Two label vectors from a contingency table (rows rater 1, columns rater 2)."""
    t = np.asarray(table, dtype=int)
    idx = np.indices(t.shape).reshape(2, -1)
    reps = t.reshape(-1)
    return np.repeat(idx[0], reps), np.repeat(idx[1], reps)


# --------------------------------------------------------------------------- Krippendorff 2011


@pytest.mark.parametrize("level, published", [
    ("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)])
def test_krippendorff_2011_example_c(level, published):
    res = krippendorff_alpha(KRIPP_C, level=level, rng=0, n_resamples=200)
    assert round(res.statistic, 3) == published
    assert res.n_units == 12
    assert res.n_units_pairable == 11          # unit 12 has a single value
    assert res.n_pairable_ratings == 40         # Krippendorff's n.. = 40
    assert res.n_missing == 7


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_krippendorff_matches_krippendorff_package(level):
    kp = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(5)
    data = rng.integers(1, 6, size=(40, 5)).astype(float)
    data[rng.random(data.shape) < 0.2] = np.nan
    ours = krippendorff_alpha(data, level=level, method="percentile", rng=0, n_resamples=50).statistic
    theirs = kp.alpha(reliability_data=data.T, level_of_measurement=level)
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_krippendorff_se_gwet_2014():
    # Gwet (2014) / irrCAC krippen.alpha.raw: SE 0.146 nominal; weighted interval (quadratic) 0.129.
    assert round(krippendorff_alpha(KRIPP_C, level="nominal").standard_error, 3) == 0.146
    assert round(krippendorff_alpha(KRIPP_C, level="interval").standard_error, 3) == 0.129
    assert round(krippendorff_alpha(KRIPP_C, level="ratio").standard_error, 3) == 0.140


@pytest.mark.parametrize("data, alpha, se", [
    (OBS5, 0.481, 0.114), (GENDER, 0.143, 0.141), (BEN_GERRY, 0.665, 0.180)])
def test_krippendorff_gwet_datasets(data, alpha, se):
    res = krippendorff_alpha(data, level="nominal")
    assert round(res.statistic, 3) == alpha
    assert round(res.standard_error, 3) == se


def test_krippendorff_level_is_required_and_validated():
    with pytest.raises(TypeError):
        krippendorff_alpha(KRIPP_C)  # no silent default
    with pytest.raises(ValueError, match="`level`"):
        krippendorff_alpha(KRIPP_C, level="nominl")
    with pytest.raises(InputError, match="numeric"):
        krippendorff_alpha([["a", "b"], ["a", "a"]], level="interval")


def test_krippendorff_ordinal_defaults_to_the_jackknife_and_bootstraps_on_request():
    # Issue #17: the default ordinal interval ran a 2,000-resample bootstrap on every call.
    res = krippendorff_alpha(KRIPP_C, level="ordinal")
    assert res.method == "jackknife" and res.bootstrap is None
    boot = krippendorff_alpha(KRIPP_C, level="ordinal", method="percentile", rng=1, n_resamples=300)
    assert boot.method == "percentile"
    assert boot.bootstrap is not None and boot.bootstrap.n_resamples == 300
    assert boot.standard_error == pytest.approx(boot.bootstrap.standard_error)
    assert boot.statistic == res.statistic
    with pytest.raises(ValueError, match="jackknife"):
        krippendorff_alpha(KRIPP_C, level="ordinal", method="analytic")


def _alpha_brute_jackknife(r: np.ndarray, level: str) -> float:
    """Delete each pairable unit in turn and recompute alpha: the textbook jackknife SE."""
    pairable = [i for i in range(r.shape[0]) if (~np.isnan(r[i])).sum() >= 2]
    loo = np.array([krippendorff_alpha(np.delete(r, i, axis=0), level=level, ci=False).statistic
                    for i in pairable])
    n = len(pairable)
    return float(np.sqrt((n - 1) / n * ((loo - loo.mean()) ** 2).sum()))


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_krippendorff_jackknife_se_is_the_delete_one_unit_jackknife(level):
    rng = np.random.default_rng(5)
    truth = rng.integers(1, 6, 60)
    r = np.where(rng.random((60, 4)) < 0.6, truth[:, None], rng.integers(1, 6, (60, 4))).astype(float)
    r[rng.random(r.shape) < 0.2] = np.nan
    res = krippendorff_alpha(r, level=level, method="jackknife")
    assert res.method == "jackknife"
    assert res.standard_error == pytest.approx(_alpha_brute_jackknife(r, level), rel=1e-10)
    # the interval is the analytic one's construction around the jackknife SE
    ref = krippendorff_alpha(r, level="nominal", method="analytic")
    lo, hi = res.confidence_interval
    assert (lo + hi) / 2 == pytest.approx(res.statistic, abs=1e-12)
    assert (hi - lo) / res.standard_error == pytest.approx(
        (ref.confidence_interval[1] - ref.confidence_interval[0]) / ref.standard_error, rel=1e-9)


def test_krippendorff_statistic_alone():
    """Issue #17: a way to ask for alpha without an interval (no resampling at all)."""
    for level in ("nominal", "ordinal"):
        full = krippendorff_alpha(KRIPP_C, level=level)
        bare = krippendorff_alpha(KRIPP_C, level=level, ci=False)
        assert bare.statistic == full.statistic and bare.bootstrap is None and bare.method == "none"
        assert isinstance(bare.confidence_interval, Abstention)
        assert bare.confidence_interval.cause.value == "not_applicable"
        assert bare.to_frame().loc[0, "statistic"] == full.statistic
    assert krippendorff_alpha(KRIPP_C, level="nominal", ci=False).standard_error == pytest.approx(
        krippendorff_alpha(KRIPP_C, level="nominal").standard_error)
    with pytest.raises(TypeError, match="ci=False"):
        krippendorff_alpha(KRIPP_C, level="nominal", ci=False, method="bca")


# --------------------------------------------------------------------------- Gwet (2014) raw data


def test_gwet_handbook_raw4raters_unweighted():
    ac1 = gwet_ac1(KRIPP_C)
    assert (round(ac1.statistic, 3), round(ac1.standard_error, 3)) == (0.775, 0.143)
    assert (round(ac1.observed_agreement, 3), round(ac1.expected_agreement, 3)) == (0.818, 0.190)
    fk = fleiss_kappa(KRIPP_C)
    assert (round(fk.statistic, 5), round(fk.standard_error, 5)) == (0.76117, 0.15302)
    assert round(fk.expected_agreement, 5) == 0.23872
    ck = conger_kappa(KRIPP_C)
    assert (round(ck.statistic, 3), round(ck.expected_agreement, 3)) == (0.763, 0.233)
    bp = brennan_prediger(KRIPP_C)
    assert round(bp.statistic, 4) == round((0.818182 - 0.2) / 0.8, 4)
    assert round(percent_agreement(KRIPP_C).statistic, 5) == 0.81818


@pytest.mark.parametrize("weights, ac2, ac2_se, conger, conger_se", [
    # irrCAC gwet.ac1.raw / conger.kappa.raw on cac.raw4raters (Gwet 2014)
    ("linear", 0.859, 0.117, 0.814, 0.145),
    ("quadratic", 0.914, 0.104, 0.858, 0.144),
    ("ordinal", 0.899, 0.107, 0.844, 0.144),
    ("ratio", 0.857, 0.122, 0.812, 0.149),
])
def test_gwet_handbook_weighted(weights, ac2, ac2_se, conger, conger_se):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CategoryDomainWarning)
        a = gwet_ac2(KRIPP_C, weights=weights, categories=CATS5)
        c = conger_kappa(KRIPP_C, weights=weights, categories=CATS5)
    assert (round(a.statistic, 3), round(a.standard_error, 3)) == (ac2, ac2_se)
    assert (round(c.statistic, 3), round(c.standard_error, 3)) == (conger, conger_se)


@pytest.mark.parametrize("data, expected", [
    (OBS5, {"gwet_ac1": (0.497, 0.122), "conger_kappa": (0.469, 0.117)}),
    (GENDER, {"gwet_ac1": (0.208, 0.091), "conger_kappa": (0.166, 0.121)}),
    (BEN_GERRY, {"gwet_ac1": (0.661, 0.184), "conger_kappa": (0.657, 0.179)}),
])
def test_gwet_conger_datasets(data, expected):
    for fn in (gwet_ac1, conger_kappa):
        res = fn(data)
        assert (round(res.statistic, 3), round(res.standard_error, 3)) == expected[fn.__name__]


# --------------------------------------------------------------------------- Fleiss 1971


def test_fleiss_1971_table():
    res = fleiss_kappa(FLEISS_1971, distribution="normal")
    assert round(res.statistic, 3) == 0.430
    # the trap: the null SE is not the SE of the estimate
    assert round(res.standard_error_null, 4) == 0.0244
    assert round(res.standard_error, 4) == 0.0542
    lo, hi = res.confidence_interval
    assert lo == pytest.approx(res.statistic - 1.959964 * res.standard_error, abs=1e-5)
    assert hi == pytest.approx(res.statistic + 1.959964 * res.standard_error, abs=1e-5)
    pc = res.per_category.set_index("category")
    assert [round(k, 3) for k in pc["kappa"]] == [0.245, 0.245, 0.520, 0.471, 0.566]
    assert pc["standard_error_null"].iloc[0] == pytest.approx(np.sqrt(2 / (30 * 6 * 5)))


def test_fleiss_matches_statsmodels():
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss
    rng = np.random.default_rng(3)
    for _ in range(5):
        data = rng.integers(0, 4, size=(60, 5))
        ours = fleiss_kappa(data).statistic
        assert ours == pytest.approx(sm_fleiss(aggregate_raters(data)[0]), abs=1e-12)


def test_fleiss_null_se_absent_when_raters_vary():
    res = fleiss_kappa(KRIPP_C)
    assert isinstance(res.standard_error_null, Abstention)
    assert "constant number" in res.standard_error_null.reason


# --------------------------------------------------------------------------- Cohen / Scott / PABAK

TABLE10 = [[0, 4, 1], [0, 8, 0], [0, 1, 5]]


def test_cohen_sas_unweighted():
    a, b = expand(TABLE10)
    res = cohen_kappa(a, b, distribution="normal")  # SAS PROC FREQ: Wald interval on z
    assert round(res.statistic, 4) == 0.4842
    assert round(res.standard_error, 4) == 0.1380
    assert round(res.standard_error_null, 4) == 0.1484
    assert tuple(round(x, 4) for x in res.confidence_interval) == (0.2137, 0.7547)


def test_cohen_sas_weighted_linear():
    a, b = expand(TABLE10)
    res = cohen_kappa(a, b, weights="linear", distribution="normal")
    assert round(res.statistic, 4) == 0.4701
    assert round(res.standard_error, 4) == 0.1457
    assert round(res.standard_error_null, 4) == 0.1426
    assert tuple(round(x, 4) for x in res.confidence_interval) == (0.1845, 0.7558)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_matches_sklearn_and_statsmodels(weights):
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import cohens_kappa
    rng = np.random.default_rng(11)
    a = rng.integers(0, 4, 300)
    b = np.where(rng.random(300) < 0.6, a, rng.integers(0, 4, 300))
    res = cohen_kappa(a, b, weights=weights)
    assert res.statistic == pytest.approx(cohen_kappa_score(a, b, weights=weights), abs=1e-12)
    table = pd.crosstab(a, b).to_numpy()
    sm = cohens_kappa(table, wt=weights or None) if weights else cohens_kappa(table)
    assert res.statistic == pytest.approx(sm.kappa, abs=1e-12)
    assert res.standard_error == pytest.approx(sm.std_kappa, rel=1e-10)
    assert res.standard_error_null == pytest.approx(sm.std_kappa0, rel=1e-10)


def test_custom_weight_matrix_equals_named():
    a, b = expand(TABLE10)
    w = weight_matrix([0, 1, 2], "quadratic")
    assert cohen_kappa(a, b, weights=w).statistic == pytest.approx(
        cohen_kappa(a, b, weights="quadratic").statistic)
    with pytest.raises(ValueError, match="diagonal"):
        cohen_kappa(a, b, weights=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="3, 3"):
        cohen_kappa(a, b, weights=np.eye(2))


@pytest.mark.parametrize("weights, coef, se", [
    # Gwet (2014) cont3x3abstractors, irrCAC scott2.table
    (None, 0.796, 0.059), ("linear", 0.843, 0.048), ("quadratic", 0.892, 0.035),
    ("ordinal", 0.872, 0.041), ("ratio", 0.927, 0.025)])
def test_scott_pi_gwet_tables(weights, coef, se):
    a, b = expand([[13, 0, 0], [0, 20, 7], [0, 4, 56]])
    res = scott_pi(a + 1, b + 1, weights=weights)
    assert (round(res.statistic, 3), round(res.standard_error, 3)) == (coef, se)


def test_scott_pi_diagnosis_table():
    a, b = expand([[40, 4, 4, 17], [6, 25, 2, 13], [4, 1, 21, 12], [15, 5, 9, 45]])
    res = scott_pi(a, b)
    assert (round(res.statistic, 3), round(res.standard_error, 3)) == (0.430, 0.046)


def test_two_raters_special_cases_agree():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 3, 200)
    b = np.where(rng.random(200) < 0.7, a, rng.integers(0, 3, 200))
    both = np.column_stack([a, b])
    # Conger with two raters and complete data is Cohen; Fleiss with two raters is Scott.
    assert conger_kappa(both).statistic == pytest.approx(cohen_kappa(a, b).statistic, abs=1e-12)
    assert fleiss_kappa(both).statistic == pytest.approx(scott_pi(a, b).statistic, abs=1e-12)
    assert percent_agreement(a, b).statistic == pytest.approx(np.mean(a == b))


def test_pabak_byrt_1993():
    # Byrt, Bishop & Carlin (1993): PABAK = 2 p_o - 1 for two categories.
    a, b = expand([[40, 9], [6, 45]])
    assert pabak(a, b).statistic == pytest.approx(2 * 0.85 - 1)
    # one label observed but a declared binary domain: PABAK stays defined
    assert pabak([1, 1, 1], [1, 1, 1], categories=[0, 1]).statistic == pytest.approx(1.0)


# --------------------------------------------------------------------------- undefined cases


@pytest.mark.parametrize("fn", [cohen_kappa, scott_pi, fleiss_kappa, conger_kappa, gwet_ac1])
def test_one_category_is_an_abstention_not_a_number(fn):
    with pytest.warns(UndefinedWarning):
        res = fn(["yes"] * 5, ["yes"] * 5)
    assert isinstance(res.statistic, Abstention)
    assert res.statistic.cause.value == "missing_evidence"
    assert isinstance(res.confidence_interval, Abstention)
    row = res.to_frame().iloc[0]
    assert pd.isna(row["statistic"]) and row["cause"] == "missing_evidence"


def test_expected_agreement_one_with_declared_domain():
    with pytest.warns(UndefinedWarning, match="expected"):
        res = cohen_kappa([1, 1, 1], [1, 1, 1], categories=[0, 1])
    assert isinstance(res.statistic, Abstention)


def test_krippendorff_undefined_cases():
    with pytest.warns(UndefinedWarning):
        res = krippendorff_alpha([[1, 1], [1, 1]], level="nominal")
    assert isinstance(res.statistic, Abstention)
    with pytest.warns(UndefinedWarning, match="pairable"):
        res = krippendorff_alpha([[1, N], [N, 2]], level="nominal")
    assert isinstance(res.statistic, Abstention)
    assert res.n_units_pairable == 0


def test_fewer_than_two_pairable_ratings():
    with pytest.warns(UndefinedWarning, match="two answered"):
        res = cohen_kappa([1, N, 0], [N, 1, N])
    assert isinstance(res.statistic, Abstention)
    assert res.n_units_pairable == 0


def test_abstention_is_never_coerced():
    with pytest.warns(UndefinedWarning):
        res = cohen_kappa(["a"] * 3, ["a"] * 3)
    with pytest.raises(TypeError):
        float(res)


# --------------------------------------------------------------------------- abstentions / coverage


def test_abstained_ratings_are_counted_not_scored():
    y1 = ["yes", "no", "cannot_tell", "yes", "no", "yes"]
    y2 = ["yes", "no", "yes", "Unsure", "no", "no"]
    res = cohen_kappa(y1, y2, abstain=["cannot_tell", "Unsure"])
    clean = cohen_kappa(["yes", "no", "no", "yes"], ["yes", "no", "no", "no"])
    assert res.statistic == pytest.approx(clean.statistic)
    assert res.n_abstained == 2
    assert res.n_units_pairable == 4
    assert res.coverage == pytest.approx(10 / 12)
    assert "cannot_tell" not in res.categories


def test_unknown_label_names_record_and_field():
    data = pd.DataFrame({"item_id": ["t1", "t1", "t2", "t2"], "rater": ["h1", "h2", "h1", "h2"],
                         "rating": ["yes", "yes", "no", "maybe"]})
    with pytest.raises(InputError) as e:
        fleiss_kappa(data=data, categories=["yes", "no"])
    assert e.value.record == "t2" and e.value.field == "rating"
    assert "maybe" in str(e.value) and "h2" in str(e.value)


def test_long_format_matches_wide_and_rejects_duplicates():
    wide = pd.DataFrame(KRIPP_C, columns=["A", "B", "C", "D"])
    long = wide.reset_index().melt(id_vars="index", var_name="coder", value_name="v").dropna()
    a = krippendorff_alpha(data=long, item="index", rater="coder", rating="v", level="interval")
    assert a.statistic == pytest.approx(0.849107, abs=1e-6)
    dup = pd.concat([long, long.iloc[:1]])
    with pytest.raises(InputError, match="more than once"):
        fleiss_kappa(data=dup, item="index", rater="coder", rating="v")
    with pytest.raises(InputError, match="must have a column"):
        fleiss_kappa(data=long, item="unit", rater="coder", rating="v")


def test_domain_warning_for_weighted_statistics():
    with pytest.warns(CategoryDomainWarning, match="strict subset"):
        cohen_kappa([1, 2, 2, 1], [1, 2, 1, 1], weights="linear", categories=[1, 2, 3])
    with pytest.warns(CategoryDomainWarning), warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedWarning)  # tiny data: some replicates undefined
        krippendorff_alpha([[1, 2], [2, 2], [1, 1]], level="ordinal", categories=[1, 2, 3],
                           rng=0, n_resamples=50)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CategoryDomainWarning)
        cohen_kappa([1, 2, 2, 1], [1, 2, 1, 1], categories=[1, 2, 3])  # nominal: no warning


def test_declared_unseen_category_changes_chance_agreement():
    # Weighted kappa is invariant to rescaling disagreement weights, but coefficients whose
    # chance agreement depends on q (AC2, Brennan-Prediger) change with the declared domain.
    a, b = [1, 2, 2, 1, 2], [1, 2, 1, 1, 2]
    with pytest.warns(CategoryDomainWarning):
        wide = gwet_ac2(a, b, weights="linear", categories=[1, 2, 3]).statistic
    narrow = gwet_ac2(a, b, weights="linear", categories=None).statistic
    assert wide != pytest.approx(narrow)
    with pytest.warns(CategoryDomainWarning):
        bp3 = brennan_prediger(a, b, categories=[1, 2, 3]).statistic
    assert bp3 == pytest.approx((0.8 - 1 / 3) / (1 - 1 / 3))


def test_bad_inputs_are_clear():
    with pytest.raises(InputError, match="lengths"):
        cohen_kappa([1, 2], [1])
    with pytest.raises(InputError, match="two-rater"):
        cohen_kappa(np.ones((3, 3)))
    with pytest.raises(InputError, match="empty"):
        fleiss_kappa(np.empty((0, 3)))
    with pytest.raises(ValueError, match="confidence_level"):
        cohen_kappa([1, 2], [1, 2], confidence_level=1.5)
    with pytest.raises(ValueError, match="`method`"):
        cohen_kappa([1, 2], [1, 2], method="wald")


# --------------------------------------------------------------------------- invariances


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=3, max_size=40),
       st.randoms())
def test_invariances(pairs, rnd):
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedWarning)
        base = cohen_kappa(a, b).statistic
        if isinstance(base, Abstention):
            return
        order = list(range(len(a)))
        rnd.shuffle(order)
        # order invariance
        assert cohen_kappa(a[order], b[order]).statistic == pytest.approx(base)
        # symmetry
        assert cohen_kappa(b, a).statistic == pytest.approx(base)
        # label-type invariance: strings instead of ints
        assert cohen_kappa([f"c{x}" for x in a], [f"c{x}" for x in b]).statistic == pytest.approx(base)
        # bounds
        assert -1.0 - 1e-12 <= base <= 1.0 + 1e-12
        for fn in (fleiss_kappa, gwet_ac1, conger_kappa, brennan_prediger):
            r = fn(np.column_stack([a, b]))
            if not isinstance(r.statistic, Abstention):
                assert fn(np.column_stack([b, a])[order]).statistic == pytest.approx(r.statistic)


# --------------------------------------------------------------------------- intervals


def test_bootstrap_intervals_cover_the_analytic_one():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 2, 400)
    b = np.where(rng.random(400) < 0.8, a, 1 - a)
    an = cohen_kappa(a, b)
    for method in ("percentile", "basic", "bca"):
        bs = cohen_kappa(a, b, method=method, rng=1, n_resamples=2000)
        assert bs.method == method
        assert bs.statistic == an.statistic
        assert bs.confidence_interval[0] == pytest.approx(an.confidence_interval[0], abs=0.02)
        assert bs.confidence_interval[1] == pytest.approx(an.confidence_interval[1], abs=0.02)
        assert bs.bootstrap.standard_error == pytest.approx(an.standard_error, rel=0.1)


def test_multi_rater_bootstrap_se_near_gwet_se():
    rng = np.random.default_rng(4)
    truth = rng.integers(0, 3, 300)
    data = np.where(rng.random((300, 4)) < 0.7, truth[:, None], rng.integers(0, 3, (300, 4)))
    for fn in (fleiss_kappa, gwet_ac1, conger_kappa):
        an = fn(data)
        bs = fn(data, method="percentile", rng=0, n_resamples=1000)
        assert bs.bootstrap.standard_error == pytest.approx(an.standard_error, rel=0.15)


def test_cluster_bootstrap_widens_for_clustered_errors():
    rng = np.random.default_rng(8)
    tasks = np.repeat(np.arange(40), 10)
    truth = rng.integers(0, 2, 400)
    task_flip = rng.random(40) < 0.25           # judge errs on whole tasks
    judge = np.where(task_flip[tasks], 1 - truth, truth)
    item = cohen_kappa(judge, truth, method="percentile", rng=0)
    clus = cohen_kappa(judge, truth, method="percentile", rng=0, unit="cluster", clusters=tasks)
    width = lambda r: r.confidence_interval[1] - r.confidence_interval[0]  # noqa: E731
    assert width(clus) > 1.5 * width(item)
    assert clus.bootstrap.unit == "cluster"


def test_agreement_difference_is_paired():
    rng = np.random.default_rng(9)
    h = rng.integers(0, 2, 500)
    a = np.where(rng.random(500) < 0.9, h, 1 - h)
    b = np.where(rng.random(500) < 0.05, 1 - a, a)   # b is a with a little noise: strongly paired
    res = agreement_difference(a, b, h, rng=0, n_resamples=2000)
    assert res.statistic == pytest.approx(cohen_kappa(a, h).statistic - cohen_kappa(b, h).statistic)
    # paired interval is much narrower than combining two independent intervals
    ka, kb = cohen_kappa(a, h), cohen_kappa(b, h)
    indep = 2 * 1.96 * np.hypot(ka.standard_error, kb.standard_error)
    assert res.confidence_interval[1] - res.confidence_interval[0] < 0.6 * indep


def test_to_frame_columns_and_value_cause():
    res = fleiss_kappa(FLEISS_1971)
    frame = res.to_frame()
    assert list(frame.columns[:4]) == ["coefficient", "statistic", "cause", "reason"]
    assert frame.loc[0, "n_units"] == 30 and frame.loc[0, "n_pairable_ratings"] == 180
    assert isinstance(res, AgreementResult)


# --------------------------------------------------------------------------- classification


def test_classification_metrics_match_sklearn_on_answered_items():
    from sklearn.metrics import (
        accuracy_score,
        balanced_accuracy_score,
        f1_score,
        precision_score,
        recall_score,
    )
    rng = np.random.default_rng(1)
    anchor = rng.integers(0, 2, 200)
    judge = np.where(rng.random(200) < 0.8, anchor, 1 - anchor).astype(object)
    judge[rng.random(200) < 0.1] = "cannot_tell"
    res = classification_metrics(judge, anchor, positive=1, abstain="cannot_tell")
    ok = judge != "cannot_tell"
    j, h = judge[ok].astype(int), anchor[ok]
    assert res.accuracy == pytest.approx(accuracy_score(h, j))
    assert res.balanced_accuracy == pytest.approx(balanced_accuracy_score(h, j))
    assert res.precision == pytest.approx(precision_score(h, j))
    assert res.recall == pytest.approx(recall_score(h, j)) == res.tpr
    assert res.f1 == pytest.approx(f1_score(h, j))
    assert res.tnr == pytest.approx(recall_score(h, j, pos_label=0))
    assert res.coverage == pytest.approx(ok.mean())
    assert res.n_judge_abstained == int((~ok).sum())


def test_classification_undefined_metric_abstains():
    with pytest.warns(UndefinedWarning, match="precision"):
        res = classification_metrics([0, 0, 0], [1, 0, 0], positive=1)
    assert isinstance(res.precision, Abstention)
    with pytest.warns(UndefinedWarning):
        table = classification_report([0, 0, 0], [1, 0, 0], positive=1)
    check_value_cause(table, where="report")
    assert table.set_index("metric").loc["precision", "cause"] == "missing_evidence"


def test_int_fast_path_equals_general_path():
    rng = np.random.default_rng(12)
    a = rng.integers(2, 6, 500)
    b = np.where(rng.random(500) < 0.6, a, rng.integers(2, 6, 500))
    cats = [1, 2, 3, 4, 5, 6]
    with pytest.warns(CategoryDomainWarning):
        fast = cohen_kappa(a, b, weights="quadratic", categories=cats)
    with pytest.warns(CategoryDomainWarning):
        slow = cohen_kappa(a.astype(float), b.astype(float), weights="quadratic", categories=cats)
    assert fast.statistic == pytest.approx(slow.statistic, abs=1e-12)
    assert fast.standard_error == pytest.approx(slow.standard_error, abs=1e-12)
    assert fast.categories == tuple(cats)
    clusters = np.arange(500) // 10
    f = cohen_kappa(a, b, method="percentile", unit="cluster", clusters=clusters, rng=3, n_resamples=300)
    g = cohen_kappa(a.astype(float), b.astype(float), method="percentile", unit="cluster",
                    clusters=clusters, rng=3, n_resamples=300)
    assert np.allclose(f.bootstrap.bootstrap_distribution, g.bootstrap.bootstrap_distribution)
    with pytest.raises(InputError, match="not in the declared"):
        cohen_kappa(a, b, categories=[2, 3, 4])


# --------------------------------------------------------------------------- CLI


@pytest.fixture
def long_csv(tmp_path):
    path = tmp_path / "labels.csv"
    pd.DataFrame({
        "item_id": ["t1", "t1", "t2", "t2", "t3", "t3", "t4", "t4", "t5", "t5"],
        "rater": ["a", "b"] * 5,
        "rating": ["yes", "yes", "no", "Unsure", "no", "no", "yes", "no", "yes", "yes"],
    }).to_csv(path, index=False)
    return path


def test_cli_agreement_json(long_csv, capsys):
    import json

    from evaltk.cli._main import main
    code = main(["agreement", str(long_csv), "--coefficient", "cohen_kappa", "--abstain", "Unsure", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    expected = cohen_kappa(["yes", "no", "yes", "yes"], ["yes", "no", "no", "yes"]).statistic
    assert out["result"]["statistic"] == pytest.approx(expected)
    assert out["result"]["n_abstained"] == 1


def test_cli_agreement_exit_codes(long_csv, tmp_path, capsys):
    from evaltk.cli._main import main
    assert main(["agreement", str(long_csv), "--level", "nominal"]) == 0
    assert "krippendorff_alpha" in capsys.readouterr().out
    assert main(["agreement", str(long_csv)]) == 64                      # alpha without --level
    assert main(["agreement", str(tmp_path / "missing.csv"), "--level", "nominal"]) == 66
    assert main(["agreement", str(long_csv), "--rating", "score", "--level", "nominal"]) == 65
    assert main(["agreement", str(long_csv), "--coefficient", "fleiss_kappa",
                 "--categories", "yes", "no"]) == 0                      # 'Unsure' abstains by default
    capsys.readouterr()
    assert main(["agreement", str(long_csv), "--coefficient", "fleiss_kappa", "--abstain",
                 "--categories", "yes", "no"]) == 65                     # no abstentions: outside the domain
    err = capsys.readouterr().err
    assert "Unsure" in err and "t2" in err


@pytest.mark.parametrize("weights, coef, se", [
    # Gwet (2014), irrCAC bp.coeff.raw on cac.raw4raters
    (None, 0.773, 0.145), ("linear", 0.848, 0.123), ("quadratic", 0.902, 0.111),
    ("ordinal", 0.886, 0.114), ("ratio", 0.840, 0.132)])
def test_brennan_prediger_gwet_raw4raters(weights, coef, se):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CategoryDomainWarning)
        res = brennan_prediger(KRIPP_C, weights=weights, categories=CATS5)
    assert (round(res.statistic, 3), round(res.standard_error, 3)) == (coef, se)


@pytest.mark.parametrize("data, coef, se", [
    (OBS5, 0.487, 0.121), (GENDER, 0.183, 0.102), (BEN_GERRY, 0.659, 0.185)])
def test_brennan_prediger_gwet_datasets(data, coef, se):
    res = brennan_prediger(data)
    assert (round(res.statistic, 3), round(res.standard_error, 3)) == (coef, se)


@pytest.mark.parametrize("table, coef, se", [
    ([[13, 0, 0], [0, 20, 7], [0, 4, 56]], 0.890, 0.031),   # Gwet (2014) cont3x3abstractors
    ([[40, 4, 4, 17], [6, 25, 2, 13], [4, 1, 21, 12], [15, 5, 9, 45]], 0.587, 0.033)])
def test_percent_agreement_gwet_tables(table, coef, se):
    a, b = expand(table)
    res = percent_agreement(a, b)
    assert (round(res.statistic, 3), round(res.standard_error, 3)) == (coef, se)


def test_edge_cases_never_crash():
    with pytest.warns(UndefinedWarning, match="at least two"):
        res = fleiss_kappa([[1, 2]])                       # one unit: no agreement statistic at all
    assert isinstance(res.statistic, Abstention) and isinstance(res.confidence_interval, Abstention)
    with pytest.warns(UndefinedWarning):
        one = cohen_kappa([1], [0])                        # never a 0.0 by accident (review finding)
    assert isinstance(one.statistic, Abstention)
    a = [0, 1, 1, 0, 1, 0, 0, 1] * 5
    b = [0, 1, 0, 0, 1, 0, 1, 1] * 5
    with pytest.warns(UndefinedWarning, match="cluster"):
        r = cohen_kappa(a, b, method="percentile", unit="cluster", clusters=[0] * 40, rng=0)
    assert isinstance(r.confidence_interval, Abstention)       # one cluster: no false precision
    with pytest.warns(UndefinedWarning):
        res = krippendorff_alpha(np.full((3, 2), np.nan), level="nominal")   # nothing rated
    assert isinstance(res.statistic, Abstention) and res.n_missing == 6
    # a rater who rated nothing is dropped by Conger (their marginals are undefined)
    res = conger_kappa([[1, 1, N], [2, 2, N], [1, 2, N]])
    assert res.statistic == pytest.approx(cohen_kappa([1, 2, 1], [1, 2, 2]).statistic)


# --------------------------------------------------------------------------- common properties

ALL_ESTIMATORS = {
    "percent_agreement": percent_agreement, "cohen_kappa": cohen_kappa, "scott_pi": scott_pi,
    "pabak": pabak, "fleiss_kappa": fleiss_kappa, "conger_kappa": conger_kappa,
    "gwet_ac1": gwet_ac1, "brennan_prediger": brennan_prediger,
    "krippendorff_alpha": lambda *a, **k: krippendorff_alpha(*a, level="nominal", **k),
}


@pytest.mark.parametrize("name", sorted(ALL_ESTIMATORS))
def test_common_properties(name):
    """Every estimator: rater symmetry, unit-order and label-type invariance, empty input raises
    (the scikit-learn ``test_common.py`` pattern)."""
    fn = ALL_ESTIMATORS[name]
    rng = np.random.default_rng(21)
    a = rng.integers(0, 3, 80)
    b = np.where(rng.random(80) < 0.7, a, rng.integers(0, 3, 80))
    base = fn(a, b).statistic
    perm = rng.permutation(80)
    assert fn(b, a).statistic == pytest.approx(base, abs=1e-12)
    assert fn(a[perm], b[perm]).statistic == pytest.approx(base, abs=1e-12)
    names = np.array(["low", "mid", "high"], dtype=object)
    assert fn(names[a], names[b]).statistic == pytest.approx(base, abs=1e-12)
    assert fn(a.astype(float), b.astype(float)).statistic == pytest.approx(base, abs=1e-12)
    res = fn(a, b)
    assert res.n_units == 80 and res.n_pairable_ratings == 160
    assert -1.0 <= base <= 1.0
    with pytest.raises(InputError):
        fn([], [])


@pytest.mark.parametrize("method", ["analytic", "percentile", "bca"])
def test_kappa_with_a_constant_rater_gives_no_falsely_precise_interval(method):
    """One rater uses one category: p_o = p_e in the sample and in every resample, so kappa is
    0 with a large-sample SE of exactly 0 (Fleiss, Cohen & Everitt 1969 at the boundary); an
    interval [0, 0] would claim a precision the sample does not have."""
    a = ["yes"] * 20
    b = ["yes"] * 15 + ["no"] * 5
    with pytest.warns(UndefinedWarning, match="single category"):
        r = cohen_kappa(a, b, method=method, rng=0, n_resamples=200)
    assert r.statistic == 0.0
    assert isinstance(r.confidence_interval, Abstention)
    assert r.confidence_interval.cause.value == "missing_evidence"
    assert isinstance(r.standard_error, Abstention)
    # weighted kappa is at the same boundary
    with pytest.warns(UndefinedWarning, match="single category"):
        rw = cohen_kappa(["a"] * 6, ["a", "b", "c", "a", "b", "c"], weights="linear",
                         categories=["a", "b", "c"])
    assert rw.statistic == 0.0 and isinstance(rw.confidence_interval, Abstention)


def test_agreement_result_records_the_seed_of_its_bootstrap():
    # Issue #13: every result records the seed it drew; re-running with it reproduces the interval.
    a = ["y", "n", "y", "y", "n", "y", "n", "n", "y", "y", "n", "y"]
    b = ["y", "n", "n", "y", "n", "y", "y", "n", "y", "y", "n", "n"]
    res = cohen_kappa(a, b, method="bca", rng=None, n_resamples=300)
    assert isinstance(res.seed, int) and res.to_frame().loc[0, "seed"] == res.seed
    again = cohen_kappa(a, b, method="bca", rng=res.seed, n_resamples=300)
    assert again.confidence_interval == res.confidence_interval and again.seed == res.seed
    analytic = cohen_kappa(a, b)
    assert analytic.seed is None and "analytic" in analytic.seed_reason
    assert analytic.to_frame().loc[0, "seed"] is None


# --------------------------------------------------------------------------- honest at the boundaries (issue #16)

# Gwet's irrCAC on cac.raw4raters (Gwet 2014, p. 120): the printed lower limits of
# ``coeff.val -+ qt(0.975, n - 1) * coeff.se``, unweighted (irrCAC README, "Computing agreement
# coefficients from raw ratings") and quadratic (vignette "Weighted Chance-corrected Agreement
# Coefficients", "Weighting for a dataset of raw ratings").  Alpha's n is the pairable units (11).
GWET_LOWER = [
    (percent_agreement, {"method": "analytic"}, 0.542), (gwet_ac1, {}, 0.461), (fleiss_kappa, {}, 0.424),
    (krippendorff_alpha, {"level": "nominal"}, 0.419), (conger_kappa, {}, 0.435), (brennan_prediger, {}, 0.454),
    (percent_agreement, {"method": "analytic", "weights": "quadratic"}, 0.776),
    (gwet_ac2, {"weights": "quadratic"}, 0.685), (fleiss_kappa, {"weights": "quadratic"}, 0.544),
    (krippendorff_alpha, {"level": "interval"}, 0.561), (conger_kappa, {"weights": "quadratic"}, 0.541),
    (brennan_prediger, {"weights": "quadratic"}, 0.657),
]


@pytest.mark.parametrize("fn, kw, lower", GWET_LOWER)
def test_gwet_irrcac_printed_lower_limits_with_t(fn, kw, lower):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CategoryDomainWarning)
        res = fn(KRIPP_C, categories=CATS5, **kw)
        z = fn(KRIPP_C, categories=CATS5, distribution="normal", **kw)
    assert res.method == "analytic" and res.distribution == "t"
    assert res.df == (10 if fn is krippendorff_alpha else 11)
    assert round(res.confidence_interval.low, 3) == lower
    assert res.confidence_interval.high == 1.0
    # the normal quantile sits above Gwet's limit: the gap the issue measured
    assert 0.02 < z.confidence_interval.low - res.confidence_interval.low < 0.04
    assert z.distribution == "normal" and z.to_frame().loc[0, "distribution"] == "normal"


def test_irrcac_two_rater_table_interval_is_t_on_n_minus_1():
    # irrCAC README, kappa2.table(cont3x3abstractors): 0.7964094, SE 0.05891072, CI (0.68, 0.913)
    a, b = expand([[13, 0, 0], [0, 20, 7], [0, 4, 56]])
    res = cohen_kappa(a, b)
    assert round(res.standard_error, 6) == 0.058911 and res.df == 99
    assert tuple(round(x, 3) for x in res.confidence_interval) == (0.680, 0.913)
    assert round(cohen_kappa(a, b, distribution="normal").confidence_interval.low, 3) == 0.681
    with pytest.raises(ValueError, match="distribution"):
        cohen_kappa(a, b, distribution="z")


ALL_COEFFICIENTS = [
    (cohen_kappa, {}), (scott_pi, {}), (pabak, {}), (fleiss_kappa, {}), (conger_kappa, {}),
    (gwet_ac1, {}), (gwet_ac2, {"weights": "quadratic"}), (brennan_prediger, {}),
    (krippendorff_alpha, {"level": "nominal"}), (krippendorff_alpha, {"level": "ordinal"}),
    (percent_agreement, {"method": "analytic"}),
]


@pytest.mark.parametrize("fn, kw", ALL_COEFFICIENTS)
@pytest.mark.parametrize("method", ["analytic", "percentile", "basic", "bca"])
@pytest.mark.parametrize("n", [2, 12, 40])
def test_perfect_agreement_never_gives_a_zero_width_interval(fn, kw, method, n):
    """Perfect agreement used to give SE 0 and [1, 1] from as few as 2 units."""
    y = [1, 2] * (n // 2)
    kw = {**kw, "method": method}
    if fn is krippendorff_alpha and kw["level"] == "ordinal" and method == "analytic":
        return  # ordinal alpha has no analytic SE (it raises)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = fn(y, y, categories=[1, 2], rng=0, n_resamples=200, **kw)
    assert res.statistic == 1.0
    ci = res.confidence_interval
    assert isinstance(ci, Abstention) and ci.cause.value == "missing_evidence"
    assert ("boundary" in ci.reason) or ("all resamples equal" in ci.reason)
    assert isinstance(res.standard_error, Abstention)
    assert any(issubclass(x.category, UndefinedWarning) for x in w)
    check_value_cause(res.to_frame(), value="ci_low", cause="ci_cause")


@pytest.mark.parametrize("n", [2, 12, 30])
def test_perfect_percent_agreement_gets_the_wilson_interval(n):
    from statsmodels.stats.proportion import proportion_confint
    y = ["yes", "no"] * (n // 2)
    res = percent_agreement(y, y)
    assert res.method == "wilson" and res.distribution is None
    lo, hi = proportion_confint(n, n, alpha=0.05, method="wilson")
    assert res.confidence_interval.low == pytest.approx(lo, abs=1e-12) and res.confidence_interval.high == 1.0
    assert res.confidence_interval.low < 1.0
    assert res.to_frame().loc[0, "method"] == "wilson"
    if n == 12:
        assert round(res.confidence_interval.low, 3) == 0.758  # the "Wilson [0.758, 1]"


def test_percent_agreement_default_is_wilson_and_matches_statsmodels():
    from statsmodels.stats.proportion import proportion_confint
    rng = np.random.default_rng(11)
    for n in (20, 50, 200):
        a = rng.integers(0, 2, n)
        b = np.where(rng.random(n) < 0.9, a, 1 - a)
        res = percent_agreement(a, b)
        x = int((a == b).sum())
        assert res.statistic == x / n and res.method == "wilson"
        lo, hi = proportion_confint(x, n, alpha=0.05, method="wilson")
        assert res.confidence_interval.low == pytest.approx(lo, abs=1e-12)
        assert res.confidence_interval.high == pytest.approx(hi, abs=1e-12)
        # the old default: Wald on Gwet's SE, sqrt(p (1 - p) / (n - 1))
        wald = percent_agreement(a, b, method="analytic", distribution="normal").confidence_interval
        p = x / n
        assert wald.low == pytest.approx(max(p - 1.959964 * np.sqrt(p * (1 - p) / (n - 1)), 0.0), abs=1e-6)
    with pytest.raises(ValueError, match="wilson"):
        cohen_kappa(a, b, method="wilson")


def test_wilson_is_conservative_for_fractional_unit_agreement():
    # several raters: per-unit agreement is fractional; the score interval stays inside [0, 1]
    res = percent_agreement(FLEISS_1971)
    lo, hi = res.confidence_interval
    assert res.method == "wilson" and 0.0 <= lo < res.statistic < hi <= 1.0


def test_constant_rater_null_se_abstains_with_its_cause():
    """The null-hypothesis SE was a plain 0.0 for a constant rater while the general SE abstained."""
    res = cohen_kappa(["a", "a", "b", "b", "a", "b"], ["a"] * 6)
    assert res.statistic == 0.0
    for v in (res.standard_error, res.standard_error_null, res.confidence_interval):
        assert isinstance(v, Abstention) and v.cause.value == "missing_evidence"
    assert "single category" in res.standard_error_null.reason
    f = res.to_frame()
    assert pd.isna(f.loc[0, "standard_error_null"])


def test_cli_agreement_shows_and_takes_the_interval_distribution(long_csv, capsys):
    import json

    from evaltk.cli._main import main
    assert main(["agreement", str(long_csv), "--coefficient", "cohen_kappa", "--abstain", "Unsure"]) == 0
    assert "(analytic, t on 3 df)" in capsys.readouterr().out
    assert main(["agreement", str(long_csv), "--coefficient", "cohen_kappa", "--abstain", "Unsure",
                 "--distribution", "normal", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["result"]
    assert out["distribution"] == "normal"
    assert main(["agreement", str(long_csv), "--coefficient", "percent_agreement", "--abstain", "Unsure"]) == 0
    assert "(wilson)" in capsys.readouterr().out
    assert main(["agreement", str(long_csv), "--coefficient", "cohen_kappa", "--method", "wilson"]) == 64


def test_percent_agreement_wald_interval_never_leaves_zero_one():
    a = [0, 1, 0, 1, 0]
    b = [1, 0, 1, 0, 0]  # 1 agreement in 5: Wald's lower limit is below 0 before clipping
    res = percent_agreement(a, b, method="analytic", distribution="normal")
    assert res.statistic == 0.2 and res.confidence_interval.low == 0.0
