"""Human ceiling, degenerate baseline, promotion rule, alt-test, sample-size planning (issue 3 sections 4-5).

Published values:

* Calderon, Reichart and Dror (2025), "The Alternative Annotator Test for
  LLM-as-a-Judge", ACL 2025: the authors' notebook ``alt_test_example.ipynb``
  (github.com/nitaytech/AltTest, commit 13eada2) prints the winning rate and the
  advantage probability, to 2 decimals, of every judge on nine of the ten
  datasets in ``../shared/data/alttest`` (kilogram uses a text-similarity
  metric and is not in it).  All 52 are reproduced below.
* Seed 002, "Status vocabulary": calibrated implies all five of a human ceiling,
  a degenerate baseline, a held-out set, a threshold set by decision cost and a
  stated interval.
"""

from __future__ import annotations

import json
import math
import warnings

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.inter_rater import cohens_kappa
from statsmodels.stats.multitest import multipletests

from evaltk.cli._main import main
from evaltk.data import AGENTREWARDBENCH_QUESTIONS, load_agentrewardbench, load_alt_test_annotations
from evaltk.errors import InputError, SchemaViolation, UnreadableInput
from evaltk.judges import PROMOTION_CONDITIONS
from evaltk.judges._calibration import (
    AltTestResult,
    CalibrationNumbers,
    CeilingResult,
    _by_reject,
    agentrewardbench_ceiling,
    alt_test,
    calibration_numbers,
    calibration_record,
    human_ceiling,
    kappa_sample_size,
    population_table,
    promotion_check,
)
from evaltk.scoring import CalibrationRecord, promotion_conditions
from evaltk.stats import DISTRIBUTION, cohen_kappa, kappa_from_tables, wilson_interval, z_value
from evaltk.values import Abstention, Threshold, UndefinedWarning

# --------------------------------------------------------------------------- helpers


def _long(matrix, raters=None):
    """units x raters (None = not rated) -> long frame."""
    raters = raters or [f"r{j}" for j in range(len(matrix[0]))]
    rows = [{"item_id": i, "rater": raters[j], "rating": v}
            for i, row in enumerate(matrix) for j, v in enumerate(row) if v is not None]
    return pd.DataFrame(rows)


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedWarning)
        return fn(*a, **k)


# --------------------------------------------------------------------------- human ceiling


def test_ceiling_two_ratings_wilson_and_alpha_cross_check():
    rng = np.random.default_rng(11)
    truth = rng.integers(0, 3, 80)
    m = [[int(t), int(t if rng.random() < 0.8 else rng.integers(0, 3))] for t in truth]
    # raters differ per item (as in AgentRewardBench): any two of four people
    names = ["a", "b", "c", "d"]
    rows = []
    for i, (x, y) in enumerate(m):
        p, q = rng.choice(4, 2, replace=False)
        rows += [{"item_id": i, "rater": names[p], "rating": x}, {"item_id": i, "rater": names[q], "rating": y}]
    df = pd.DataFrame(rows)
    r = human_ceiling(df, level="nominal", rng=0, n_resamples=500)
    assert isinstance(r, CeilingResult)
    agree = sum(x == y for x, y in m)
    assert r.statistic == pytest.approx(agree / 80)
    assert r.interval_method == "wilson"
    assert r.confidence_interval == pytest.approx(wilson_interval(agree, 80).confidence_interval)
    ref = krippendorff.alpha(reliability_data=np.array(m, float).T, level_of_measurement="nominal")
    assert r.alpha.statistic == pytest.approx(ref)
    lo, hi = r.alpha.confidence_interval
    assert lo <= r.alpha.statistic <= hi
    assert r.n_pairable == 80 and r.n_items == 80 and r.coverage == 1.0


def test_ceiling_abstentions_excluded_and_counted():
    m = [["Yes", "Yes"], ["No", "Unsure"], ["Yes", "No"], ["No", "No"], ["Unsure", "Unsure"], ["Yes", None]]
    r = _quiet(human_ceiling, _long(m), level="nominal", rng=0, n_resamples=200)
    assert r.n_items == 6  # every item given
    assert r.n_multiply_labelled == 5  # the last has one rating
    assert r.n_ratings_abstained == 3
    assert r.n_items_lost_to_abstention == 2
    assert r.n_pairable == 3 and r.statistic == pytest.approx(2 / 3)
    assert r.coverage == pytest.approx(3 / 5)
    assert r.items == (0, 2, 3)
    f = r.to_frame()
    assert f["statistic_name"].tolist() == ["percent_agreement", "krippendorff_alpha_nominal"]


def test_ceiling_more_than_two_raters_uses_bootstrap_and_fleiss_pbar():
    m = [["a", "a", "a"], ["a", "b", "a"], ["b", "b", None], ["a", "b", "c"], ["c", "c", "c"]]
    r = human_ceiling(_long(m), level="nominal", rng=1, n_resamples=300)
    # Fleiss' P-bar: (1 + 1/3 + 1 + 0 + 1) / 5
    assert r.statistic == pytest.approx((1 + 1 / 3 + 1 + 0 + 1) / 5)
    assert r.interval_method.startswith("bootstrap_percentile")
    mat = np.array([[0, 0, 0], [0, 1, 0], [1, 1, np.nan], [0, 1, 2], [2, 2, 2]], float).T
    assert r.alpha.statistic == pytest.approx(krippendorff.alpha(reliability_data=mat, level_of_measurement="nominal"))


def test_ceiling_ordinal_needs_scale_and_matches_krippendorff():
    scale = ["low", "mid", "high"]
    m = [["low", "mid"], ["mid", "mid"], ["high", "high"], ["low", "low"], ["high", "mid"], ["mid", "low"]]
    with pytest.raises(ValueError, match="ordinal `level` needs the ordered scale"):
        human_ceiling(_long(m), level="ordinal")
    r = _quiet(human_ceiling, _long(m), level="ordinal", categories=scale, rng=0, n_resamples=200)
    codes = np.array([[scale.index(x) for x in row] for row in m], float).T
    assert r.alpha.statistic == pytest.approx(
        krippendorff.alpha(reliability_data=codes, level_of_measurement="ordinal"))


def test_ceiling_errors_and_undefined():
    with pytest.raises(ValueError, match="must have a column `rating`"):
        human_ceiling(pd.DataFrame({"item_id": [1], "rater": ["a"]}), level="nominal")
    dup = pd.DataFrame({"item_id": [1, 1], "rater": ["a", "a"], "rating": ["x", "y"]})
    with pytest.raises(ValueError, match="rater 'a' rated item 1 more than once"):
        human_ceiling(dup, level="nominal")
    with pytest.raises(ValueError, match="`level` must be one of nominal, ordinal"):
        human_ceiling(_long([["a", "a"]]), level="interval")
    with pytest.raises(ValueError, match="label 'z' is not among `categories`"):
        human_ceiling(_long([["a", "z"]]), level="nominal", categories=["a", "b"])
    with pytest.warns(UndefinedWarning):
        c = human_ceiling(_long([["a", None], ["b", "Unsure"]]), level="nominal", abstain=["Unsure"])
    assert isinstance(c, CeilingResult) and not c.defined and isinstance(c.statistic, Abstention)
    f = c.to_frame()
    assert f["cause"].eq("missing_evidence").all() and f["statistic"].isna().all()
    with pytest.raises(InputError, match="no rows"):
        human_ceiling(_long([["a", "a"]]).iloc[:0], level="nominal")


# --------------------------------------------------------------------------- the three numbers


def _three_numbers_data():
    # 8 items x 2 humans; judge right on 6 of 8 items against both humans
    h = [["Y", "Y"], ["N", "N"], ["N", "N"], ["N", "Y"], ["N", "N"], ["Y", "Y"], ["N", "N"], ["Y", "N"]]
    judge = {0: "Y", 1: "N", 2: "Y", 3: "N", 4: "N", 5: "N", 6: "N", 7: "Y"}
    return _long(h, ["a", "b"]), judge, h


def test_calibration_numbers_hand_computed():
    df, judge, h = _three_numbers_data()
    nums = _quiet(calibration_numbers, df, judge, level="nominal", rng=0, n_resamples=300)
    assert isinstance(nums, CalibrationNumbers)
    assert nums.ceiling.statistic == pytest.approx(6 / 8)
    pairs = [(judge[i], x) for i, row in enumerate(h) for x in row]
    assert nums.judge.statistic == pytest.approx(np.mean([a == b for a, b in pairs]))
    assert nums.judge.n_pairs == 16 and nums.judge.n_items == 8
    # the judge's kappa is Cohen's kappa of the stacked (judge, human) pairs
    ref = cohen_kappa([a for a, _ in pairs], [b for _, b in pairs])
    assert nums.judge.kappa.statistic == pytest.approx(ref.statistic)
    # majority: "N" is 10 of 16 human ratings
    assert nums.baseline.label == "N" and nums.baseline.statistic == pytest.approx(10 / 16)
    assert nums.baseline.kappa.statistic == pytest.approx(0.0, abs=1e-12)
    f = nums.to_frame()
    assert set(f["comparison"]) == {"human-human", "judge-human", "majority baseline-human"}
    assert (f["n_items"] == 8).all()
    for _, row in f.iterrows():
        if row["comparison"] == "majority baseline-human" and row["statistic_name"] == "cohen_kappa":
            # a constant rater: kappa is 0 in every resample, so no interval (not a falsely precise [0, 0])
            assert math.isnan(row["ci_low"]) and row["ci_cause"] == "missing_evidence"
            assert "single category" in row["ci_reason"]
            continue
        assert pd.isna(row["ci_cause"])
        assert row["ci_low"] <= row["statistic"] + 1e-12 and row["statistic"] <= row["ci_high"] + 1e-12


def test_calibration_numbers_judge_abstentions_leave_all_three():
    df, judge, _ = _three_numbers_data()
    judge = dict(judge)
    judge[0] = "Cannot tell"
    del judge[1]
    nums = _quiet(calibration_numbers, df, judge, level="nominal", rng=0, n_resamples=200)
    assert nums.n_judge_abstained == 1 and nums.n_judge_missing == 1
    assert nums.items == (2, 3, 4, 5, 6, 7)
    assert nums.ceiling.n_pairable == 6 and nums.baseline.n_items == 6
    assert nums.judge_coverage == pytest.approx(6 / 8)
    forced = _quiet(calibration_numbers, df, judge, level="nominal", majority="Y", rng=0, n_resamples=200)
    assert forced.baseline.label == "Y"
    with pytest.raises(ValueError, match="`majority` 'Q'"):
        _quiet(calibration_numbers, df, judge, level="nominal", majority="Q")
    with pytest.warns(UndefinedWarning):
        nums = calibration_numbers(df, {}, level="nominal")
    assert not nums.defined and isinstance(nums.judge.statistic, Abstention) and nums.ceiling.defined
    f = nums.to_frame().set_index(["comparison", "statistic_name"])
    assert f.loc[("judge-human", "percent_agreement"), "cause"] == "missing_evidence"
    assert nums.n_judge_missing == 8


# --------------------------------------------------------------------------- promotion rule


def test_promotion_check_nothing_measured():
    pc = promotion_check(None)
    assert list(pc.conditions["condition"]) == list(PROMOTION_CONDITIONS)
    assert pc.status == "provisional" and not pc.met
    assert pc.missing == list(PROMOTION_CONDITIONS)


def test_promotion_check_all_five_and_each_missing():
    df, judge, _ = _three_numbers_data()
    nums = _quiet(calibration_numbers, df, judge, level="nominal", rng=0, n_resamples=200)
    th = Threshold(0.8, validated=True, source="decision-cost record 2026-W40")
    full = promotion_check(nums, label_set="demo-W40", tuning_items=[100, 101], threshold=th)
    assert full.met and full.status == "calibrated" and full.missing == []
    # fitted, not held out: an evaluation item also tuned the scorer
    fitted = promotion_check(nums, label_set="demo-W40", tuning_items=[3, 100], threshold=th)
    assert fitted.missing == ["held_out_label_set"]
    assert "1 evaluation item(s)" in fitted.conditions.iloc[2]["evidence"]
    undeclared = promotion_check(nums, label_set="demo-W40", threshold=th)
    assert undeclared.missing == ["held_out_label_set"]
    unnamed = promotion_check(nums, tuning_items=[100], threshold=th)
    assert unnamed.missing == ["held_out_label_set"]
    unvalidated = promotion_check(nums, label_set="demo-W40", tuning_items=[], threshold=Threshold(0.8, source="guess"))
    assert unvalidated.missing == ["threshold_by_decision_cost"]
    no_source = promotion_check(nums, label_set="demo-W40", tuning_items=[], threshold=Threshold(0.8, validated=True))
    assert no_source.missing == ["threshold_by_decision_cost"]
    # the judge here is not shown to beat the baseline: said in the notes, not hidden
    assert any("baseline" in n for n in full.notes)


def test_calibration_record_feeds_the_manifest_rule():
    df, judge, _ = _three_numbers_data()
    nums = _quiet(calibration_numbers, df, judge, level="nominal", rng=0, n_resamples=200)
    th = Threshold(0.8, validated=True, source="decision-cost record")
    rec = calibration_record(nums, label_set="demo-2026-W40", tuning_items=[99], threshold=th)
    assert rec.unmet() == [] and rec.held_out
    assert rec.estimate == nums.judge.statistic and rec.interval == nums.judge.confidence_interval
    assert rec.human_ceiling[0] == nums.ceiling.statistic and rec.baseline == nums.baseline.statistic
    fitted = calibration_record(nums, label_set="demo", tuning_items=[0, 99], threshold=th)
    assert fitted.unmet() == ["held_out_label_set"]
    assert calibration_record(nums, label_set="demo", tuning_items=None, threshold=th).held_out is False


def test_a_record_of_undefined_numbers_keeps_each_cause_and_round_trips_as_json():
    # A judge that answered no item: its agreement and the baseline abstain.  The record keeps
    # each Abstention (no NaN without a cause), names the cause in the unmet conditions, and
    # survives to_dict -> JSON -> from_dict (to_dict raised on it before).
    items = [f"i{k}" for k in range(12)]
    lab = ["yes", "no"] * 6
    data = pd.DataFrame({"item_id": items * 2, "rater": ["h1"] * 12 + ["h2"] * 12, "rating": lab + lab[::-1]})
    nums = _quiet(calibration_numbers, data, dict.fromkeys(items, "cannot tell"), level="nominal", rng=0,
                  categories=["yes", "no"])
    rec = calibration_record(nums, label_set="W40", tuning_items=[])
    assert isinstance(rec.estimate, Abstention) and isinstance(rec.interval, Abstention)
    assert isinstance(rec.baseline, Abstention)
    back = CalibrationRecord.from_dict(json.loads(json.dumps(rec.to_dict())))
    assert back == rec
    evidence = dict(zip(promotion_conditions(rec)["condition"], promotion_conditions(rec)["evidence"], strict=True))
    assert "missing_evidence: no pairable item has a judge label" in evidence["stated_interval"]
    assert "missing_evidence" in evidence["degenerate_baseline"]
    nothing = promotion_check(None)
    assert "no calibration numbers were computed" in nothing.conditions.iloc[-1]["evidence"]


# --------------------------------------------------------------------------- alt-test

ALT_PUBLISHED = """wax gemini_flash 0.38 0.69|wax gemini_pro 0.50 0.74|wax gpt-4o 0.50 0.73|wax llama-31 0.00 0.57
wax gpt-4o-mini 0.00 0.59|wax mistral-v03 0.00 0.50|lgbteen gemini_flash 0.25 0.71|lgbteen gemini_pro 0.00 0.67
lgbteen gpt-4o 0.75 0.77|lgbteen llama-31 0.00 0.72|lgbteen gpt-4o-mini 0.75 0.76|lgbteen mistral-v03 0.25 0.75
mtbench gemini_flash 0.00 0.72|mtbench gemini_pro 0.00 0.76|mtbench gpt-4o 0.00 0.77|mtbench llama-31 0.00 0.69
mtbench gpt-4o-mini 0.00 0.74|mtbench mistral-v03 0.00 0.68|framing gemini_flash 1.00 0.83
framing gemini_pro 1.00 0.91|framing gpt-4o 1.00 0.92|framing llama-31 0.50 0.80|framing gpt-4o-mini 1.00 0.87
framing mistral-v03 0.25 0.80|cebab_aspects gemini_flash 0.70 0.91|cebab_aspects gemini_pro 0.90 0.94
cebab_aspects gpt-4o 0.90 0.93|cebab_aspects llama-31 0.60 0.89|cebab_aspects gpt-4o-mini 0.50 0.90
cebab_aspects mistral-v03 0.10 0.81|summeval gemini_flash 0.00 0.46|summeval gemini_pro 0.00 0.44
summeval gpt-4o 0.00 0.48|summeval llama-31 0.00 0.58|summeval gpt-4o-mini 0.00 0.54|summeval mistral-v03 0.00 0.62
10k_prompts gemini_flash 0.31 0.67|10k_prompts gemini_pro 0.08 0.63|10k_prompts gpt-4o 0.69 0.76
10k_prompts llama-31 0.15 0.67|10k_prompts gpt-4o-mini 0.92 0.80|10k_prompts mistral-v03 0.15 0.67
cebab_stars gemini_flash 0.60 0.82|cebab_stars gemini_pro 0.80 0.87|cebab_stars gpt-4o 0.90 0.90
cebab_stars llama-31 0.60 0.85|cebab_stars gpt-4o-mini 0.90 0.89|cebab_stars mistral-v03 0.50 0.83
lesion gemini_flash 0.17 0.71|lesion gemini_pro 1.00 0.81|lesion gpt-4o 0.00 0.62|lesion gpt-4o-mini 0.67 0.73"""
ALT_METRIC = {"wax": "accuracy", "lgbteen": "accuracy", "mtbench": "accuracy", "framing": "accuracy",
              "cebab_aspects": "accuracy", "summeval": "neg_rmse", "10k_prompts": "neg_rmse",
              "cebab_stars": "neg_rmse", "lesion": "neg_rmse"}
ALT_EPSILON = {"wax": 0.1, "lgbteen": 0.2, "mtbench": 0.2, "framing": 0.15, "cebab_aspects": 0.1,
               "summeval": 0.2, "10k_prompts": 0.15, "cebab_stars": 0.1, "lesion": 0.15}


def test_alt_test_reproduces_the_published_outputs(shared_data):
    cases = [c.split() for c in ALT_PUBLISHED.replace("\n", "|").split("|")]
    assert len(cases) == 52
    cache = {}
    mismatches = []
    for ds, judge, wr, ap in cases:
        if ds not in cache:
            base = shared_data / "alttest" / ds
            cache[ds] = (load_alt_test_annotations(base / "human_annotations.json"),
                         load_alt_test_annotations(base / "llm_annotations.json"))
        humans, llms = cache[ds]
        r = alt_test(humans, llms[judge], metric=ALT_METRIC[ds], epsilon=ALT_EPSILON[ds])
        if (f"{r.winning_rate:.2f}", f"{r.advantage_probability:.2f}") != (wr, ap):
            mismatches.append((ds, judge, wr, ap, r.winning_rate, r.advantage_probability))
        assert r.passed == (float(wr) >= 0.5)
    assert mismatches == []


def test_alt_test_tie_counts_for_both_and_hand_computed_rho():
    # three annotators, 30 items.  h2 and h3 always agree; the judge copies h2.
    items = [f"i{k}" for k in range(30)]
    h1 = {i: ("A" if k % 3 else "B") for k, i in enumerate(items)}
    h2 = {i: "A" for i in items}
    h3 = {i: "A" for i in items}
    judge = {i: "A" for i in items}
    r = alt_test({"h1": h1, "h2": h2, "h3": h3}, judge, epsilon=0.2)
    per = r.per_annotator.set_index("annotator")
    # leaving h2 out: judge and h2 both match h3 and h1 equally on every item: ties, rho = 1 both ways
    assert per.loc["h2", "rho_judge"] == 1.0 and per.loc["h2", "rho_human"] == 1.0
    # leaving h1 out: on the 10 items where h1 says B, the judge ("A") matches the rest better
    assert per.loc["h1", "rho_judge"] == 1.0
    assert per.loc["h1", "rho_human"] == pytest.approx(20 / 30)
    assert r.advantage_probability == pytest.approx(1.0)
    # zero-variance differences make the t-test undefined: no p-value, not rejected
    assert np.isnan(per.loc["h2", "pvalue"]) and not per.loc["h2", "rejected"]


def test_alt_test_skips_small_annotators_and_errors():
    rng = np.random.default_rng(0)
    items = [f"i{k}" for k in range(40)]
    humans = {f"h{j}": {i: int(rng.integers(0, 2)) for i in items} for j in range(3)}
    humans["tiny"] = {i: 0 for i in items[:10]}
    judge = {i: int(rng.integers(0, 2)) for i in items}
    r = alt_test(humans, judge)
    assert isinstance(r, AltTestResult)
    assert r.skipped["annotator"].tolist() == ["tiny"] and r.skipped["n_items"].tolist() == [10]
    assert len(r.per_annotator) == 3
    with pytest.raises(ValueError, match="`metric` must be"):
        alt_test(humans, judge, metric="f1")
    with pytest.raises(ValueError, match="`q` must be in"):
        alt_test(humans, judge, q=1.5)
    with pytest.raises(ValueError, match="no annotator has at least `min_items`"):
        alt_test(humans, judge, min_items=1000)
    long = pd.DataFrame([(a, i, v) for a, d in humans.items() for i, v in d.items()],
                        columns=["annotator", "item", "label"])
    assert alt_test(long, pd.Series(judge)).winning_rate == r.winning_rate


def test_alt_test_epsilon_monotone():
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 3, 80)

    def noisy(p):
        return {k: int(t if rng.random() > p else rng.integers(0, 3)) for k, t in enumerate(truth)}

    humans = {f"h{j}": noisy(0.3) for j in range(4)}
    judge = noisy(0.3)
    rates = [alt_test(humans, judge, epsilon=e).winning_rate for e in (0.0, 0.1, 0.2, 0.3, 0.5)]
    assert rates == sorted(rates)


def test_by_procedure_matches_statsmodels():
    rng = np.random.default_rng(2)
    for _ in range(20):
        p = rng.random(int(rng.integers(1, 30))) ** 3
        ref = multipletests(p, alpha=0.05, method="fdr_by")[0]
        assert (_by_reject(p, 0.05) == ref).all()
    assert _by_reject(np.array([np.nan, 1e-9]), 0.05).tolist() == [False, True]


def test_load_alt_test_annotations_errors(tmp_path):
    with pytest.raises(UnreadableInput, match="no such file"):
        load_alt_test_annotations(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(UnreadableInput, match="not JSON"):
        load_alt_test_annotations(bad)
    shape = tmp_path / "shape.json"
    shape.write_text(json.dumps({"h1": ["a", "b"]}), encoding="utf-8")
    with pytest.raises(SchemaViolation, match="record h1"):
        load_alt_test_annotations(shape)
    # a repeated rater or item is refused (plain json.loads keeps the last silently)
    twice = tmp_path / "twice.json"
    twice.write_text('{"h1": {"i1": 1, "i1": 0}}', encoding="utf-8")
    with pytest.raises(SchemaViolation, match="twice.json: field `i1`: duplicate object key 'i1'"):
        load_alt_test_annotations(twice)


# --------------------------------------------------------------------------- precision planning


@pytest.mark.parametrize("table", [[[20, 5], [10, 65]], [[40, 9, 1], [6, 30, 4], [2, 3, 25]], [[3, 0], [1, 9]]])
def test_vectorised_kappa_matches_statsmodels_and_agreement(table):
    t = np.asarray(table)
    k, se = kappa_from_tables(t[None])
    ref = cohens_kappa(t)
    assert k[0] == pytest.approx(ref.kappa) and se[0] == pytest.approx(ref.std_kappa)
    j = [i for i in range(len(t)) for jj in range(len(t)) for _ in range(t[i, jj])]
    h = [jj for i in range(len(t)) for jj in range(len(t)) for _ in range(t[i, jj])]
    ours = cohen_kappa(j, h)
    assert k[0] == pytest.approx(ours.statistic) and se[0] == pytest.approx(ours.standard_error)


def test_population_table_has_the_declared_kappa():
    for kappa, pi in [(0.6, 0.5), (0.4, 0.1), (0.0, 0.3), (0.9, 0.05)]:
        p = population_table(kappa, pi)
        assert p.sum() == pytest.approx(1.0) and p.sum(axis=0) == pytest.approx([pi, 1 - pi])
        assert kappa_from_tables(p[None] * 1000)[0][0] == pytest.approx(kappa)
    with pytest.raises(ValueError, match="`prevalence` must be in"):
        population_table(0.5, 1.0)
    with pytest.raises(ValueError, match="`kappa` must be in"):
        population_table(-0.9, 0.1)


def test_kappa_sample_size_agrees_with_the_large_sample_formula():
    # Var(kappa_hat) ~ V1 / n, so the median half-width reaches h near n = (z sqrt(V1) / h)^2.
    for kappa, pi, h in [(0.6, 0.5, 0.1), (0.7, 0.2, 0.1)]:
        se1 = kappa_from_tables(population_table(kappa, pi)[None] * 1.0)[1][0]  # n = 1
        n_formula = (z_value(0.95) * se1 / h) ** 2
        grid = list(range(20, 2001, 5))
        plan = kappa_sample_size(h, kappa=kappa, prevalence=pi, rng=0, n_simulations=400, n_grid=grid,
                                 distribution="normal")
        assert plan.distribution == "normal"
        assert abs(plan.n_required - n_formula) / n_formula < 0.1
        t = plan.to_frame()
        assert t["median_half_width"].is_monotonic_decreasing or (t["median_half_width"].diff().dropna() < 0.01).all()


def test_kappa_sample_size_plans_the_interval_cohen_kappa_reports():
    # The default plans the default interval (t on n - 1 df): on the same simulated samples each
    # half-width is the z one times t_{n-1} / z, so small studies need more items than z says.
    grid = [20, 40, 80, 160]
    t = kappa_sample_size(0.25, kappa=0.6, n_grid=grid, rng=3, n_simulations=200)
    z = kappa_sample_size(0.25, kappa=0.6, n_grid=grid, rng=3, n_simulations=200, distribution="normal")
    assert t.distribution == DISTRIBUTION == "t"
    ratio = t.table["median_half_width"] / z.table["median_half_width"]
    expected = [stats.t.ppf(0.975, n - 1) / stats.norm.ppf(0.975) for n in grid]
    np.testing.assert_allclose(ratio, expected, rtol=1e-12)
    assert t.n_required >= z.n_required
    # the planned interval is the one cohen_kappa reports at that n
    y1, y2 = np.repeat([0, 0, 1, 1], [8, 2, 2, 8]), np.repeat([0, 1, 0, 1], [8, 2, 2, 8])
    res = cohen_kappa(y1, y2)
    lo, hi = res.confidence_interval
    assert (hi - lo) / 2 == pytest.approx(stats.t.ppf(0.975, 19) * res.standard_error, rel=1e-12)
    with pytest.raises(ValueError, match="distribution"):
        kappa_sample_size(0.25, kappa=0.6, n_grid=grid, rng=3, n_simulations=20, distribution="z")


def test_kappa_sample_size_rare_positives_need_more_labels_and_assurance():
    common = kappa_sample_size(0.1, kappa=0.6, prevalence=0.5, rng=1, n_simulations=300)
    rare = kappa_sample_size(0.1, kappa=0.6, prevalence=0.1, rng=1, n_simulations=300)
    sure = kappa_sample_size(0.1, kappa=0.6, prevalence=0.5, assurance=0.9, rng=1, n_simulations=300)
    assert rare.n_required > common.n_required and sure.n_required >= common.n_required
    out = kappa_sample_size(0.01, kappa=0.6, n_grid=[20, 40], rng=0, n_simulations=50)
    assert isinstance(out.n_required, Abstention)
    with pytest.raises(ValueError, match="`assurance`"):
        kappa_sample_size(0.1, kappa=0.6, assurance=1.0)


# --------------------------------------------------------------------------- AgentRewardBench (real data)


def test_agentrewardbench_human_ceiling(shared_data):
    path = shared_data / "agentrewardbench" / "annotations.csv"
    long = load_agentrewardbench(path)
    assert long["rater"].str.startswith(" ").sum() == 0  # " H" normalised
    f = agentrewardbench_ceiling(path, rng=0)
    assert set(f["question"]) == set(AGENTREWARDBENCH_QUESTIONS)
    raw = pd.read_csv(path)
    key = ["benchmark", "task_id", "model_name"]
    double = raw.groupby(key).filter(lambda g: len(g) == 2)
    assert double.groupby(key).ngroups == 106
    assert (double.groupby(key)["annotator_name"].nunique() == 2).all()
    for q, spec in AGENTREWARDBENCH_QUESTIONS.items():
        col = spec["column"]
        pairs = double.groupby(key)[col].agg(list)
        kept = [p for p in pairs if "Unsure" not in p]
        pa = np.mean([p[0] == p[1] for p in kept])
        rows = f[f["question"] == q].set_index("statistic_name")
        row = rows.loc["percent_agreement"]
        assert row["n_multiply_labelled"] == 106
        assert row["n_pairable"] == len(kept)
        assert row["n_ratings_abstained"] == sum(p.count("Unsure") for p in pairs)
        assert row["statistic"] == pytest.approx(pa)
        assert row["ci_low"] < pa < row["ci_high"]
        # alpha against the krippendorff package on the same pairs (order within a pair is arbitrary)
        cats = list(spec["categories"])
        mat = np.array([[cats.index(p[0]) for p in kept], [cats.index(p[1]) for p in kept]], float)
        a = rows.filter(like="krippendorff", axis=0).iloc[0]
        assert a["statistic"] == pytest.approx(krippendorff.alpha(reliability_data=mat,
                                                                  level_of_measurement=spec["level"]))
        assert a["ci_low"] < a["statistic"] < a["ci_high"]
    # 'Unsure' appears once each for success and optimality among the 106: counted, not a class
    ab = f[f["statistic_name"] == "percent_agreement"].set_index("question")["n_ratings_abstained"]
    assert ab.sum() >= 1


# --------------------------------------------------------------------------- CLI


def test_cli_alt_test_exit_codes(tmp_path, capsys):
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, 60)
    humans = {f"h{k}": {str(i): int(t if rng.random() > 0.25 else 1 - t) for i, t in enumerate(truth)}
              for k in range(3)}
    good = {str(i): int(t) for i, t in enumerate(truth)}
    bad = {str(i): int(1 - t) for i, t in enumerate(truth)}
    hp, jp = tmp_path / "h.json", tmp_path / "j.json"
    hp.write_text(json.dumps(humans))
    jp.write_text(json.dumps({"good": good, "bad": bad}))
    assert main(["calibration", "alt-test", str(hp), str(jp), "--judge", "good", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["results"][0]["passed"] is True
    assert main(["calibration", "alt-test", str(hp), str(jp), "--judge", "bad"]) == 1
    assert main(["calibration", "alt-test", str(hp), str(jp), "--judge", "nobody"]) == 64
    assert main(["calibration", "alt-test", str(tmp_path / "x.json"), str(jp)]) == 66
    assert main(["calibration", "alt-test", str(hp), str(jp), "--epsilon"]) == 64
    assert main(["calibration"]) == 64
    one = tmp_path / "one.json"
    one.write_text(json.dumps(good))
    assert main(["calibration", "alt-test", str(hp), str(one), "--single"]) == 0
    one.write_text('{"0": 1, "0": 0}')  # a repeated item in one judge's {item: label}
    capsys.readouterr()
    assert main(["calibration", "alt-test", str(hp), str(one), "--single"]) == 65
    assert "duplicate object key '0'" in capsys.readouterr().err


def test_cli_ceiling(tmp_path, capsys):
    df = _long([["Y", "Y"], ["N", "N"], ["Y", "N"], ["N", "Unsure"], ["Y", "Y"]], ["a", "b"])
    p = tmp_path / "labels.csv"
    df.to_csv(p, index=False)
    for abstain in (["--abstain", "Unsure"], []):  # "Unsure" is one of the default abstain words
        assert main(["calibration", "ceiling", str(p), "--level", "nominal", *abstain, "--json"]) == 0
        rows = json.loads(capsys.readouterr().out)
        assert rows[0]["statistic_name"] == "percent_agreement" and rows[0]["statistic"] == pytest.approx(3 / 4)
        assert rows[0]["n_ratings_abstained"] == 1
    assert main(["calibration", "ceiling", str(p), "--level", "nominal", "--abstain", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)  # no abstain words: "Unsure" is a category
    assert rows[0]["statistic"] == pytest.approx(3 / 5) and rows[0]["n_ratings_abstained"] == 0
    assert main(["calibration", "ceiling", str(p)]) == 64  # no silent level of measurement
    assert "--level --measure is required" in capsys.readouterr().err
    assert main(["calibration", "ceiling", str(p), "--level", "nominal", "--rating", "nope"]) == 65
    assert main(["calibration", "ceiling", str(tmp_path / "none.csv"), "--level", "nominal"]) == 66


# --------------------------------------------------------------------------- docs worked example


def _arb_markdown_rows(frame):
    return [
        (r["question"], r["statistic_name"], r["statistic"], r["ci_low"], r["ci_high"], r["interval_method"],
         f"{r['n_pairable']} / {r['n_multiply_labelled']}", r["n_ratings_abstained"])
        for _, r in frame.iterrows()
    ]


def test_docs_agentrewardbench_table(shared_data):
    """docs/calibration.md's AgentRewardBench table is what the code computes."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent.parent / "docs" / "calibration.md").read_text(encoding="utf-8")
    block = doc.split("<!-- arb-ceiling:begin -->")[1].split("<!-- arb-ceiling:end -->")[0]
    lines = [ln for ln in block.strip().splitlines()[2:] if ln.startswith("|")]
    frame = agentrewardbench_ceiling(shared_data / "agentrewardbench" / "annotations.csv", rng=0)
    computed = _arb_markdown_rows(frame)
    assert len(lines) == len(computed) == 8
    for line, (q, name, stat, lo, hi, meth, items, unsure) in zip(lines, computed, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[0] == q and cells[1] == name and cells[4] == meth
        assert cells[5] == items and int(cells[6]) == unsure
        assert float(cells[2]) == pytest.approx(stat, abs=5e-4)
        dlo, dhi = (float(v) for v in cells[3].strip("[]").split(","))
        tol = 5e-4 if meth == "wilson" else 0.03  # bootstrap limits may move if the engine's draws change
        assert dlo == pytest.approx(lo, abs=tol) and dhi == pytest.approx(hi, abs=tol)


def test_ordinal_domain_subset_warns():
    from evaltk.stats import CategoryDomainWarning

    m = [["low", "mid"], ["mid", "mid"], ["low", "low"]]
    with pytest.warns(CategoryDomainWarning):
        _quiet(human_ceiling, _long(m), level="ordinal", categories=["low", "mid", "high"], rng=0,
               n_resamples=100)


def test_cli_agentrewardbench(shared_data, capsys, tmp_path):
    path = shared_data / "agentrewardbench" / "annotations.csv"
    assert main(["calibration", "agentrewardbench", str(path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 8 and {r["question"] for r in rows} == set(AGENTREWARDBENCH_QUESTIONS)
    bad = tmp_path / "a.csv"
    bad.write_text("annotator_name,benchmark\nA,x\n", encoding="utf-8")
    assert main(["calibration", "agentrewardbench", str(bad)]) == 65


# --------------------------------------------------------------------------- one abstain default (issue 13)


def _unsure_frame():
    """Four items, two raters each; item 3 has one "Unsure" rating (issue 13's example)."""
    return pd.DataFrame({"item_id": [0, 0, 1, 1, 2, 2, 3, 3, 4, 4],
                         "rater": ["a", "b"] * 5,
                         "rating": ["Yes", "Yes", "No", "No", "Yes", "Yes", "Yes", "No", "No", "Unsure"]})


def test_ceiling_and_percent_agreement_agree_on_an_unsure_rating():
    from evaltk.stats import percent_agreement

    d = _unsure_frame()
    pa = percent_agreement(data=d)
    r = human_ceiling(d, level="nominal", rng=0, n_resamples=200)
    assert pa.statistic == pytest.approx(0.75)
    assert r.statistic == pytest.approx(pa.statistic)
    assert r.n_ratings_abstained == 1
    # opting out makes "Unsure" a category in both doors, and they still agree
    pa0 = percent_agreement(data=d, abstain=())
    r0 = human_ceiling(d, level="nominal", abstain=(), rng=0, n_resamples=200)
    assert r0.statistic == pytest.approx(pa0.statistic) == pytest.approx(3 / 5)


def test_level_is_declared_or_taken_from_the_measure():
    d = _long([["yes", "yes"], ["no", "no"], ["yes", "no"], ["no", "cannot_tell"]])
    with pytest.raises(TypeError, match="`level` is required"):
        human_ceiling(d)
    with pytest.raises(TypeError, match="`level` is required"):
        calibration_numbers(d, {0: "yes", 1: "no", 2: "yes"})
    r = human_ceiling(d, measure="x_task", rng=0, n_resamples=200)
    assert r.level == "nominal" and r.categories == ("no", "yes") and r.n_ratings_abstained == 1
    e = _long([["none", "a_few"], ["lots", "lots"], ["none", "none"], ["a_few", "a_few"]])
    r = human_ceiling(e, measure="x_eff", rng=0, n_resamples=200)
    assert r.level == "ordinal" and r.categories == ("lots", "a_few", "none")
    assert r.to_frame()["statistic_name"].tolist()[1] == "krippendorff_alpha_ordinal"
    with pytest.raises(ValueError, match="contradicts the vocabulary"):
        human_ceiling(e, measure="x_eff", level="nominal")
    with pytest.raises(ValueError, match="`measure` must be one of"):
        human_ceiling(e, measure="x_nope")


# --------------------------------------------------------------------------- no false precision (issue #16)


def test_twelve_perfect_items_state_an_interval_that_reflects_the_sample_size():
    """12 items where judge and both humans always agree used to give "1 [1, 1]" and `calibrated`."""
    labels = ["Yes", "No", "Yes", "Yes", "No", "Yes"] * 2
    df = _long([[v, v] for v in labels])
    nums = _quiet(calibration_numbers, df, dict(enumerate(labels)), level="nominal", rng=0, n_resamples=200)
    assert nums.judge.statistic == 1.0
    lo, hi = nums.judge.confidence_interval
    assert (round(lo, 3), hi) == (0.758, 1.0)  # Wilson on the 12 items, as the issue computes it
    assert lo == wilson_interval(12, 12).confidence_interval.low
    assert nums.judge.interval_method.startswith("wilson_items")
    assert nums.ceiling.confidence_interval.low < 1.0
    th = Threshold(0.8, validated=True, source="decision-cost record")
    pc = promotion_check(nums, label_set="W40", tuning_items=[], threshold=th)
    ev = pc.conditions.set_index("condition").loc["stated_interval", "evidence"]
    assert "[0.758, 1.000]" in ev and "12 items" in ev


def test_promotion_refuses_a_zero_width_interval():
    from evaltk.scoring import CalibrationRecord, promotion_conditions
    th = Threshold(0.8, validated=True, source="decision-cost record")
    rec = CalibrationRecord(label_set="W40", statistic="percent_agreement", estimate=1.0, interval=(1.0, 1.0),
                            confidence_level=0.95, held_out=True, human_ceiling=(1.0, 0.8, 1.0), baseline=0.5,
                            threshold=th, n_items=12, evaluation_items=tuple(range(12)), tuning_items=())
    t = promotion_conditions(rec).set_index("condition")
    assert not t.loc["stated_interval", "met"] and "zero width" in t.loc["stated_interval", "evidence"]
    flat_ceiling = CalibrationRecord(**{**rec.__dict__, "interval": (0.75, 1.0), "human_ceiling": (1.0, 1.0, 1.0)})
    t = promotion_conditions(flat_ceiling).set_index("condition")
    assert not t.loc["human_ceiling", "met"] and t.loc["stated_interval", "met"]
