"""Active labeling (seed 002, 'Active labeling'): stratified by uncertainty, allocated by influence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evaltk.errors import InputError
from evaltk.judges import expansion_gate, propose_batch, stratified_accuracy, uncertainty_strata
from evaltk.stats import ConfidenceInterval
from evaltk.values import Abstention, UndefinedWarning


def _pool(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    dis = rng.choice([0.0, 0.0, 0.0, 0.5], n)
    conf = np.where(dis > 0, rng.uniform(0.4, 0.7, n), rng.uniform(0.8, 1.0, n))
    correct = np.where(dis > 0, rng.random(n) < 0.5, rng.random(n) < 0.97)
    return pd.DataFrame({"item": np.arange(n), "disagreement": dis, "confidence": conf, "correct": correct})


def test_strata_order_by_uncertainty():
    p = _pool()
    s = uncertainty_strata(p)
    assert p.loc[s == s.max(), "disagreement"].mean() > p.loc[s == 0, "disagreement"].mean()


def _release(p_agree=0.95, n=200, seed=0):
    """The expansion gate on a simulated double-labelled overlap (two annotators agreeing at p_agree)."""
    rng = np.random.default_rng(seed)
    a = rng.choice(["yes", "no"], n)
    b = np.where(rng.random(n) < p_agree, a, np.where(a == "yes", "no", "yes"))
    return expansion_gate(a, b, threshold=0.6)


def test_every_stratum_is_seeded_then_labels_go_where_variance_is():
    p = _pool()
    p["stratum"] = uncertainty_strata(p, n_strata=3)
    first = propose_batch(p, batch_size=6, rng=0)
    assert first.groupby("stratum").size().min() >= 2  # no weight left without evidence
    labeled = p.set_index("item").loc[first["item"], ["correct"]].reset_index()
    release = _release()
    for _ in range(10):
        b = propose_batch(p, labeled, gate=release, batch_size=20, rng=1)
        assert not set(b["item"]) & set(labeled["item"])  # never asks twice
        labeled = pd.concat([labeled, p.set_index("item").loc[b["item"], ["correct"]].reset_index()])
    n = labeled.merge(p[["item", "stratum"]], on="item").groupby("stratum").size()
    share = p.groupby("stratum").size() / len(p)
    # the uncertain stratum gets more labels than its pool share would give it
    top = share.index.max()
    assert n[top] / n.sum() > share[top]


def test_stratified_estimate_is_unbiased_and_abstains_without_evidence():
    p = _pool()
    p["stratum"] = uncertainty_strata(p, n_strata=3)
    truth = p["correct"].mean()
    ests = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        lab = p.groupby("stratum", group_keys=False).apply(lambda g, r=rng: g.sample(30, random_state=r))
        ests.append(stratified_accuracy(p, lab[["item", "correct"]]).statistic)
    assert abs(np.mean(ests) - truth) < 0.01
    with pytest.warns(UndefinedWarning, match="no label yet"):
        e = stratified_accuracy(p, p[p["stratum"] == 0].head(5)[["item", "correct"]])
    assert isinstance(e.statistic, Abstention) and e.statistic.cause.value == "missing_evidence"
    assert not e.defined and isinstance(e.confidence_interval, Abstention)
    f = e.to_frame()
    assert f.loc[0, "cause"] == "missing_evidence" and f.loc[0, "ci_cause"] == "missing_evidence"


def test_expansion_gated_on_inter_annotator_agreement():
    rng = np.random.default_rng(0)
    a = rng.choice(["yes", "no"], 200)
    good = np.where(rng.random(200) < 0.95, a, np.where(a == "yes", "no", "yes"))
    bad = np.where(rng.random(200) < 0.6, a, np.where(a == "yes", "no", "yes"))
    ok = expansion_gate(a, good, threshold=0.6)
    assert ok.release and ok.message.startswith("release")
    no = expansion_gate(a, bad, threshold=0.6)
    assert not no.release and no.message.startswith("fix the guidelines first")
    assert no.confidence_interval[0] < 0.6
    with pytest.raises(ValueError, match="same items"):
        expansion_gate(a, bad[:10])


def test_conflict_with_the_panel_gets_its_own_strata():
    p = _pool()
    p["conflict"] = p["disagreement"] > 0
    s = uncertainty_strata(p, conflict="conflict", n_strata=4)
    assert s[p["conflict"]].min() > s[~p["conflict"]].max()


def test_labels_that_could_not_decide_and_duplicates_are_not_draws():
    p = _pool()
    p["stratum"] = uncertainty_strata(p, n_strata=2)
    lab = p.groupby("stratum").head(10)[["item", "correct"]].astype({"correct": "object"})
    lab.iloc[0, 1] = None
    e = stratified_accuracy(p, lab)
    assert e.n_labels == 19 and e.per_stratum.attrs["n_unanswered_labels"] == 1
    with pytest.raises(ValueError, match="twice"):
        stratified_accuracy(p, pd.concat([lab, lab.head(1)]))
    with pytest.raises(ValueError, match="n_strata"):
        uncertainty_strata(p.assign(conflict=False), conflict="conflict", n_strata=1)


def test_expansion_needs_enough_items_answered_by_both():
    a = ["yes", "no"] * 10
    d = expansion_gate(a, a, threshold=0.6)
    assert not d.release and "only 20 items could be compared" in d.message


def test_one_sided_abstentions_count_as_disagreement_unless_told_to_drop():
    """A guideline that lets one annotator answer where the other cannot is not consistent:
    dropping those items would inflate agreement (here perfect on what is left)."""
    a = ["yes", "no"] * 40
    b = list(a)
    for i in range(0, 80, 5):  # 16 items the second annotator could not decide
        b[i] = "cannot_tell"
    b[1] = a[1] = "cannot_tell"  # both abstained: no comparison either way
    strict = expansion_gate(a, b, threshold=0.6)
    assert strict.n_one_sided == 16 and not strict.release
    assert "16 one-sided abstention(s) counted as disagreement" in strict.message
    lenient = expansion_gate(a, b, threshold=0.6, one_sided="drop", statistic="percent_agreement")
    assert lenient.release and lenient.statistic == 1.0 and "left out" in lenient.message
    strict_pa = expansion_gate(a, b, threshold=0.6, statistic="percent_agreement")
    assert strict_pa.statistic < lenient.statistic
    with pytest.raises(ValueError, match="one_sided"):
        expansion_gate(a, b, one_sided="ignore")


def test_stratified_estimate_has_the_one_result_shape():
    p = _pool()
    p["stratum"] = uncertainty_strata(p, n_strata=2)
    e = stratified_accuracy(p, p.groupby("stratum").head(20)[["item", "correct"]])
    assert e.defined and isinstance(e.confidence_interval, ConfidenceInterval)
    assert e.confidence_interval.low <= e.statistic <= e.confidence_interval.high
    f = e.to_frame()
    assert list(f.columns[:7]) == ["statistic", "cause", "reason", "ci_low", "ci_high", "ci_cause", "ci_reason"]
    assert f.loc[0, "statistic"] == e.statistic and f.loc[0, "n_labels"] == 40
    assert f.loc[0, "standard_error"] == e.standard_error and pd.isna(f.loc[0, "cause"])


def test_stratified_accuracy_refuses_empty_input_and_stray_labels():
    p = _pool()
    p["stratum"] = uncertainty_strata(p, n_strata=2)
    with pytest.raises(InputError, match="`pool` has no rows"):
        stratified_accuracy(p.head(0), p.head(3)[["item", "correct"]])
    with pytest.raises(InputError, match="`labeled` has no rows"):
        stratified_accuracy(p, p.head(0)[["item", "correct"]])
    stray = pd.DataFrame({"item": [0, 99999], "correct": [True, False]})
    with pytest.raises(InputError, match="not in `pool`, the first 99999") as err:
        stratified_accuracy(p, stray)
    assert err.value.field == "item"
    with pytest.raises(InputError, match="twice") as err:
        stratified_accuracy(p, pd.concat([stray.head(1), stray.head(1)]))
    assert err.value.field == "item"


def test_expansion_decision_holds_the_value_and_names_the_statistic():
    a = ["yes", "no", "no", "yes"] * 10
    b = ["yes", "no", "yes", "yes"] * 10
    d = expansion_gate(a, b, statistic="percent_agreement", threshold=0.5)
    assert d.statistic == pytest.approx(0.75) and d.statistic_name == "percent_agreement"
    assert d.defined and isinstance(d.confidence_interval, ConfidenceInterval)
    f = d.to_frame()
    assert list(f.columns[:7]) == ["statistic", "cause", "reason", "ci_low", "ci_high", "ci_cause", "ci_reason"]
    assert f.loc[0, "statistic"] == pytest.approx(0.75) and f.loc[0, "statistic_name"] == "percent_agreement"
    assert bool(f.loc[0, "release"]) == d.release


def test_expansion_gate_refuses_empty_input():
    with pytest.raises(InputError, match="`first` has no rows"):
        expansion_gate([], [])
    with pytest.raises(InputError, match="same items"):
        expansion_gate(["yes"], [])


def test_expansion_beyond_the_first_batch_needs_the_agreement_gate():
    # seed 002, "Active labeling": "Expansion is gated on inter-annotator agreement"
    from evaltk.judges import ExpansionRefused

    p = _pool()
    p["stratum"] = uncertainty_strata(p, n_strata=3)
    first = propose_batch(p, batch_size=6, rng=0)  # the overlap sample: no gate yet
    labeled = p.set_index("item").loc[first["item"], ["correct"]].reset_index()
    with pytest.raises(ExpansionRefused, match="gated on inter-annotator agreement") as e:
        propose_batch(p, labeled, batch_size=20, rng=1)
    assert e.value.decision is None
    refused = _release(p_agree=0.6)
    assert not refused.release
    with pytest.raises(ExpansionRefused, match="no new batch: fix the guidelines first") as e:
        propose_batch(p, labeled, gate=refused, batch_size=20, rng=1)
    assert e.value.decision is refused
    assert len(propose_batch(p, labeled, gate=_release(), batch_size=20, rng=1)) == 20
    with pytest.raises(TypeError, match="ExpansionDecision"):
        propose_batch(p, labeled, gate=True, batch_size=20, rng=1)


def test_undecided_labels_do_not_count_toward_a_stratum():
    # the stratum whose only labels are undecided keeps the estimate undefined: it needs the next labels
    p = _pool()
    p["stratum"] = uncertainty_strata(p, n_strata=2)
    lab = p.groupby("stratum").head(10)[["item", "correct", "stratum"]].astype({"correct": "object"})
    lab.loc[lab["stratum"] == 1, "correct"] = None
    lab.loc[lab["stratum"] == 0, "correct"] = [True, False] * 5  # the decided stratum at its most uncertain
    lab = lab.drop(columns="stratum")
    with pytest.warns(UndefinedWarning, match="strata \\[1\\] have no label yet"):
        assert not stratified_accuracy(p, lab).defined
    b = propose_batch(p, lab, gate=_release(), batch_size=4, rng=0)
    assert (b["stratum"] == 1).sum() >= 2
    assert not set(b["item"]) & set(lab["item"])  # an undecided item is not asked again


# --------------------------------------------------------------------------- no false precision (issue #16)


def test_expansion_gate_never_releases_on_a_zero_width_interval():
    """30 perfectly agreeing items released labeling on kappa 1.000 [1.000, 1.000]."""
    a = ["yes", "no", "no"] * 10
    with pytest.warns(UndefinedWarning):
        d = expansion_gate(a, a, threshold=0.6)
    assert d.statistic == 1.0 and not d.release
    assert isinstance(d.confidence_interval, Abstention) and "boundary" in d.confidence_interval.reason
    assert d.message.startswith("hold: cohen_kappa 1.000 on 30") and "percent_agreement" in d.message
    # the score interval is defined at perfect agreement and reflects the 30 items
    pa = expansion_gate(a, a, threshold=0.6, statistic="percent_agreement")
    assert pa.release and 0.88 < pa.confidence_interval.low < 0.89 and pa.confidence_interval.high == 1.0
    assert not expansion_gate(a, a, threshold=0.9, statistic="percent_agreement").release


def _census(n=40, seed=2):
    rng = np.random.default_rng(seed)
    pool = pd.DataFrame({"item": np.arange(n), "stratum": np.repeat([0, 1], n // 2)})
    lab = pd.DataFrame({"item": pool["item"], "correct": rng.random(n) < 0.7})
    return pool, lab


def test_a_full_census_has_no_sampling_error():
    """No finite-population correction made a census report SE 0.087 (issue #16)."""
    pool, lab = _census()
    e = stratified_accuracy(pool, lab)
    assert e.statistic == pytest.approx(lab["correct"].mean())
    assert e.standard_error == 0.0
    assert e.confidence_interval.low == e.confidence_interval.high == e.statistic
    half = stratified_accuracy(pool, lab.groupby(pool["stratum"]).head(10))
    assert half.standard_error > 0
    # FPC 1 - n_h / N_h on the Jeffreys-smoothed variance: half of each stratum labelled
    per = half.per_stratum
    p_s = (per["p"] * per["n"] + 0.5) / (per["n"] + 1)
    want = np.sqrt((per["weight"] ** 2 * 0.5 * p_s * (1 - p_s) / per["n"]).sum())
    assert half.standard_error == pytest.approx(want)


@pytest.mark.parametrize("bad", [2, 0.5, "yes", -1])
def test_stratified_accuracy_refuses_a_non_binary_outcome(bad):
    pool, lab = _census()
    lab["correct"] = lab["correct"].astype(object)
    lab.loc[7, "correct"] = bad
    with pytest.raises(InputError, match="binary") as e:
        stratified_accuracy(pool, lab)
    assert e.value.field == "correct" and e.value.record == 7
    ok = lab.copy()
    ok.loc[7, "correct"] = 1  # 0/1 is a binary outcome
    assert stratified_accuracy(pool, ok).defined


def test_each_batch_reports_the_width_it_expects_and_labelling_stops_at_the_target():
    # issue #20: labeling reports the interval width it expects after the next batch, so
    # labeling stops when the width is reached
    p = _pool()
    p["stratum"] = uncertainty_strata(p, n_strata=3)
    first = propose_batch(p, batch_size=6, rng=0)
    labeled = p.set_index("item").loc[first["item"], ["correct"]].reset_index()
    release = _release()
    b = propose_batch(p, labeled, gate=release, batch_size=40, rng=1)
    w = b["expected_half_width"].to_numpy()
    assert np.all(np.diff(w) <= 1e-12) and b.attrs["expected_half_width"] == pytest.approx(w[-1])
    assert b.attrs["half_width_now"] > w[0] and b.attrs["stopped"] is None
    # the planned width matches what stratified_accuracy reports once those labels are in
    # (the plan assumes each new label at its stratum's rate, so allow a little)
    got = pd.concat([labeled, p.set_index("item").loc[b["item"], ["correct"]].reset_index()])
    assert stratified_accuracy(p, got).half_width == pytest.approx(w[-1], rel=0.35)
    # with a target the batch ends at the first label that reaches it
    target = float(w[15])
    t = propose_batch(p, labeled, gate=release, batch_size=40, rng=1, target_half_width=target)
    assert len(t) <= 16 and t["expected_half_width"].iloc[-1] <= target
    assert (t["expected_half_width"].iloc[:-1] > target).all() and "reached" in t.attrs["stopped"]
    # and nothing is proposed once the interval is within the target
    done = propose_batch(p, got, gate=release, batch_size=40, rng=1, target_half_width=1.0)
    assert done.empty and "labelling can stop" in done.attrs["stopped"]


def test_a_level_estimate_plans_the_batch_with_its_own_variance():
    from evaltk import expected_half_width, level_estimate

    p = _pool()
    p["stratum"] = 0
    rng = np.random.default_rng(3)
    judge = pd.Series(np.where(rng.random(len(p)) < 0.9, p["correct"], ~p["correct"]).astype(float),
                      index=p["item"])
    lab = p.sample(60, random_state=1)
    level = level_estimate(judge, pd.Series(lab["correct"].astype(float).to_numpy(), index=lab["item"]))
    b = propose_batch(p, lab[["item", "correct"]], gate=_release(), batch_size=10, rng=0, level=level)
    assert b["expected_half_width"].tolist() == pytest.approx([expected_half_width(level, k) for k in range(1, 11)])
    with pytest.raises(TypeError, match="LevelEstimate"):
        propose_batch(p, lab[["item", "correct"]], gate=_release(), level=0.1)
