"""Active labeling (seed 002, 'Active labeling'): stratified by uncertainty, allocated by influence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evaltk.judges import expansion_gate, propose_batch, stratified_accuracy, uncertainty_strata
from evaltk.values import Abstention


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


def test_every_stratum_is_seeded_then_labels_go_where_variance_is():
    p = _pool()
    p["stratum"] = uncertainty_strata(p, n_strata=3)
    first = propose_batch(p, batch_size=6, rng=0)
    assert first.groupby("stratum").size().min() >= 2  # no weight left without evidence
    labeled = p.set_index("item").loc[first["item"], ["correct"]].reset_index()
    for _ in range(10):
        b = propose_batch(p, labeled, batch_size=20, rng=1)
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
    e = stratified_accuracy(p, p[p["stratum"] == 0].head(5)[["item", "correct"]])
    assert isinstance(e.statistic, Abstention) and e.statistic.cause.value == "missing_evidence"


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
    lenient = expansion_gate(a, b, threshold=0.6, one_sided="drop")
    assert lenient.release and lenient.estimate == 1.0 and "left out" in lenient.message
    assert strict.estimate < lenient.estimate
    with pytest.raises(ValueError, match="one_sided"):
        expansion_gate(a, b, one_sided="ignore")
