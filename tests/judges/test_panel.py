"""Panel fold and review queue (seed 002, 'Panel fold' and 'Weighting')."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from evaltk.judges import FoldRule, fold_pairwise_trials, fold_panel, review_queue


def A(rows):
    return pd.DataFrame(rows, columns=["trace_id", "measure", "rater", "answer"])


def test_majority_tie_and_cannot_tell():
    r = fold_panel(A([("t1", "x_task", "a", "yes"), ("t1", "x_task", "b", "yes"), ("t1", "x_task", "c", "no"),
                      ("t2", "x_task", "a", "yes"), ("t2", "x_task", "b", "no"),
                      ("t3", "x_task", "a", "cannot_tell"), ("t3", "x_task", "b", "cannot_tell"),
                      ("t3", "x_task", "c", "no")])).verdicts.set_index("trace_id")
    assert r.loc["t1", "verdict"] == "yes" and r.loc["t1", "confidence"] == pytest.approx(2 / 3)
    assert pd.isna(r.loc["t2", "verdict"]) and r.loc["t2", "cause"] == "abstained"
    assert r.loc["t2", "reason"] == "tie between raters"
    assert r.loc["t3", "reason"] == "cannot-tell majority" and r.loc["t3", "n_cannot_tell"] == 2
    assert (r["verdict"].isna() == r["cause"].notna()).all()


def test_missing_cell_is_a_recorded_skip_not_an_agreement():
    res = fold_panel(A([("t1", "x_task", "a", "yes"), ("t1", "x_task", "b", "yes"),
                        ("t2", "x_task", "a", "yes")]), panel=["a", "b", "c"])
    v = res.verdicts.set_index("trace_id")
    assert v.loc["t2", "n_skipped"] == 2 and v.loc["t2", "n_answered"] == 1
    # one answer from a three-judge panel is not a full panel's verdict (issue #14): the shares
    # are of the panel, reported with the number that answered
    assert v.loc["t2", "confidence"] == pytest.approx(1 / 3) and v.loc["t2", "agreement"] == pytest.approx(1 / 3)
    assert v.loc["t1", "confidence"] == pytest.approx(2 / 3) and v.loc["t1", "n_answered"] == 2
    sk = res.skips
    assert sorted(map(tuple, sk[["trace_id", "rater"]].values.tolist())) == [("t1", "c"), ("t2", "b"), ("t2", "c")]
    assert res.rule.to_dict()["name"] == "majority"


def test_weighted_and_unanimity_rules_are_declared():
    df = A([("t1", "x_task", "good", "no"), ("t1", "x_task", "weak1", "yes"), ("t1", "x_task", "weak2", "yes")])
    w = fold_panel(df, rule="weighted", weights={"good": 0.9, "weak1": 0.3, "weak2": 0.3}).verdicts
    assert w["verdict"].iloc[0] == "no" and w["confidence"].iloc[0] == pytest.approx(0.9 / 1.5)
    u = fold_panel(df, rule="unanimity").verdicts
    assert pd.isna(u["verdict"].iloc[0]) and "unanimity" in u["reason"].iloc[0]
    with pytest.raises(ValueError, match="needs `weights`"):
        FoldRule("weighted")
    with pytest.raises(ValueError, match="no weight for raters"):
        fold_panel(df, rule="weighted", weights={"good": 1.0})
    with pytest.raises(ValueError, match="more than once"):
        fold_panel(pd.concat([df, df]))


def test_panel_majority_matches_the_scoring_fold():
    from evaltk.scoring import score_tables
    from tests.scoring.test_scoring import S, answers, tables

    rng = np.random.default_rng(3)
    rows = [(f"t{i}", "x_task", None, f"j{k}", rng.choice(["yes", "no", "cannot_tell"]))
            for i in range(60) for k in range(rng.integers(1, 5))]
    a = answers(rows)
    m = score_tables(*tables({f"t{i}": [S("x")] for i in range(60)}), a)
    p = fold_panel(a.drop(columns="step")).verdicts.set_index("trace_id")
    w = m.wide().set_index("trace_id")
    for t in p.index:
        v = p.loc[t, "verdict"]
        exp = None if pd.isna(v) or v == "cannot_tell" else (1.0 if v == "yes" else 0.0)
        got = w.loc[t, "x_task"]
        assert (pd.isna(got) and exp is None) or got == exp


def test_judgebench_fold_of_two_orderings():
    # trial 1 is reported in the swapped frame; flip it back before comparing with the label
    df = pd.DataFrame({
        "pair_id": ["p1", "p1", "p2", "p2", "p3", "p3"], "judge_name": "j",
        "label": ["A>B", "A>B", "A>B", "A>B", "B>A", "B>A"], "trial": [0, 1, 0, 1, 0, 1],
        "decision": ["A>B", "B>A", "A>B", "A>B", "A=B", None]})
    out = fold_pairwise_trials(df).set_index("pair_id")
    assert out.loc["p1", "score"] == 2 and out.loc["p1", "correct"]
    assert out.loc["p2", "score"] == 0 and not out.loc["p2", "correct"]  # consistent position bias
    assert out.loc["p3", "score"] == 0 and out.loc["p3", "n_unparsable"] == 1


def test_review_queue_hinge_changes_routing_not_scores():
    df = pd.DataFrame({"trace_id": ["t1", "t1", "t2", "t2", "t3"], "measure": "x_task",
                       "rater": ["a", "b", "a", "b", "a"], "answer": ["yes", "no", "yes", "yes", "yes"],
                       "confidence": [0.9, 0.9, 0.95, 0.9, 0.9]})
    res = fold_panel(df, confidence="confidence")
    before = res.verdicts.copy()
    human = pd.DataFrame({"trace_id": ["t3"], "measure": ["x_task"], "answer": ["no"]})
    q = review_queue(res, human=human, confidence_floor=0.8)
    assert q["trace_id"].tolist()[0] in {"t1", "t3"} and q["trace_id"].tolist()[-1] == "t2"
    r = q.set_index("trace_id")
    assert "panel disagreement" in r.loc["t1", "reasons"] and "low confidence" in r.loc["t1", "reasons"]
    assert r.loc["t3", "reasons"] == "conflicts with human vote; panel members skipped"  # b never answered t3
    assert r.loc["t2", "priority"] == 0
    pd.testing.assert_frame_equal(res.verdicts, before)


def test_unanimity_needs_every_panel_member():
    df = A([("t1", "x_task", "j1", "yes")])
    v = fold_panel(df, rule="unanimity", panel=["j1", "j2", "j3"]).verdicts
    assert pd.isna(v["verdict"].iloc[0]) and "not every panel member" in v["reason"].iloc[0]


def test_review_queue_folds_humans_and_falls_back_to_vote_share():
    df = pd.DataFrame({"trace_id": ["t1", "t1", "t2"], "measure": "x_task", "step": [None, None, None],
                       "rater": ["a", "b", "a"], "answer": ["no", "no", "yes"],
                       "confidence": [np.nan, np.nan, 0.9]})
    res = fold_panel(df, confidence="confidence", panel=["a", "b"])
    human = pd.DataFrame({"trace_id": ["t1", "t1"], "measure": "x_task", "step": [None, None],
                          "rater": ["h1", "h2"], "answer": ["yes", "yes"]})
    q = review_queue(res, human=human).set_index("trace_id")
    assert q.loc["t1", "conflict"] == 1.0  # two agreeing humans vote
    assert q.loc["t1", "low_confidence"] == 0.0  # no self-report: the vote share (1.0) stands
    assert q.loc["t2", "skipped"] == 0.5 and "panel members skipped" in q.loc["t2", "reasons"]


_RULES = {
    "majority": FoldRule("majority"),
    "unanimity": FoldRule("unanimity"),
    "weighted": FoldRule("weighted", weights={"j0": 0.0, "j1": 2.0, "j2": 1.0, "j3": 1.0}),
}


@pytest.mark.parametrize("name", list(_RULES))
@pytest.mark.parametrize("measure", ["x_task", "x_eff"])
def test_panel_and_scoring_share_one_fold(name, measure):
    """The fold has one home (evaltk.scoring.fold_votes): same answers, same verdict and reason."""
    from evaltk.scoring import VOCABULARIES, score_tables
    from evaltk.scoring import FoldRule as ScoringFoldRule
    from tests.scoring.test_scoring import S, answers, tables

    assert FoldRule is ScoringFoldRule
    rule = _RULES[name]
    words = list(VOCABULARIES[measure])
    rng = np.random.default_rng(11)
    n = 300
    # unanimity: every panel member answers (a member's skip is the panel's own clause)
    sizes = np.full(n, 4) if name == "unanimity" else rng.integers(1, 5, n)
    rows = [(f"t{i}", measure, None, f"j{k}", str(rng.choice(words))) for i in range(n) for k in range(sizes[i])]
    a = answers(rows)
    m = score_tables(*tables({f"t{i}": [S("x")] for i in range(n)}), a, fold=rule)
    f = m.scores()
    f = f[f["measure"] == measure].set_index("trace_id")
    p = fold_panel(a.drop(columns="step"), rule=rule, panel=["j0", "j1", "j2", "j3"]).verdicts.set_index("trace_id")
    for t in p.index:
        v = p.loc[t, "verdict"]
        exp = np.nan if pd.isna(v) else VOCABULARIES[measure][v]
        exp = np.nan if exp is None else exp
        got = f.loc[t, "value"]
        assert (np.isnan(got) and np.isnan(exp)) or got == exp, (t, v, got)
        if pd.isna(v):  # both abstain, and for the same reason
            assert p.loc[t, "cause"] == f.loc[t, "cause"] == "abstained"
            assert p.loc[t, "reason"] == f.loc[t, "reason"]
    seen = set(p["reason"])
    assert ("raters disagree (unanimity rule)" if name == "unanimity" else "tie between raters") in seen
    assert name == "unanimity" or "cannot-tell majority" in seen
    if name == "weighted":
        assert "no rater with positive weight answered" in seen


def test_unanimity_counts_a_panel_members_skip():
    df = A([("t1", "x_task", "a", "yes"), ("t1", "x_task", "b", "yes")])
    v = fold_panel(df, rule="unanimity", panel=["a", "b", "c"]).verdicts
    assert pd.isna(v["verdict"].iloc[0]) and v["reason"].iloc[0] == "not every panel member answered (unanimity rule)"
    assert fold_panel(df, rule="unanimity").verdicts["verdict"].iloc[0] == "yes"


def _empty_judge_rows():
    """Three judges on two traces; judge c's every cell is empty (a judge that failed)."""
    return pd.DataFrame({"trace_id": ["t1", "t1", "t1", "t2", "t2", "t2"], "measure": "x_task",
                         "rater": ["a", "b", "c"] * 2, "answer": ["yes", "yes", None, "yes", "yes", ""]})


def test_a_judge_with_all_empty_answers_stays_in_the_panel_with_skips():
    # before issue #14: n_panel 2, n_skipped 0, and unanimity made a's and b's "yes" the verdict
    df = _empty_judge_rows()
    res = fold_panel(df, rule="unanimity")
    v = res.verdicts.set_index("trace_id")
    assert res.panel == ("a", "b", "c") and (v["n_panel"] == 3).all() and (v["n_skipped"] == 1).all()
    assert v["verdict"].isna().all() and (v["reason"] == "not every panel member answered (unanimity rule)").all()
    assert sorted(map(tuple, res.skips[["trace_id", "rater"]].values.tolist())) == [("t1", "c"), ("t2", "c")]
    assert res.skips["reason"].str.startswith("empty answer").all()
    m = fold_panel(df).verdicts.set_index("trace_id")  # majority keeps its verdict, at the panel's share
    assert (m["verdict"] == "yes").all() and m["confidence"].tolist() == pytest.approx([2 / 3, 2 / 3])
    assert m["agreement"].tolist() == pytest.approx([2 / 3, 2 / 3]) and (m["disagreement"] == 0).all()


def test_an_item_nobody_answered_abstains_with_every_member_skipped():
    df = pd.DataFrame({"trace_id": ["t1", "t1", "t2"], "measure": "x_task", "rater": ["a", "b", "a"],
                       "answer": [None, None, "no"]})
    v = fold_panel(df).verdicts.set_index("trace_id")
    assert pd.isna(v.loc["t1", "verdict"]) and v.loc["t1", "reason"] == "no answer"
    assert v.loc["t1", "n_skipped"] == 2 and v.loc["t1", "agreement"] == 0
    only_empty = fold_panel(df[df["trace_id"] == "t1"]).verdicts
    assert only_empty["verdict"].isna().all() and only_empty["cause"].eq("abstained").all()


def test_weighted_confidence_is_of_the_whole_panel_weight():
    df = A([("t1", "x_task", "good", "no"), ("t1", "x_task", "weak1", None), ("t1", "x_task", "weak2", None)])
    v = fold_panel(df, rule="weighted", weights={"good": 0.9, "weak1": 0.3, "weak2": 0.3}).verdicts
    assert v["verdict"].iloc[0] == "no" and v["confidence"].iloc[0] == pytest.approx(0.9 / 1.5)


@settings(max_examples=40, deadline=None)
@given(hs.lists(hs.sampled_from(["yes", "no", "cannot_tell", None]), min_size=1, max_size=5))
def test_agreement_disagreement_and_skips_partition_the_panel(cells):
    df = pd.DataFrame({"trace_id": "t", "measure": "x_task", "rater": [f"j{i}" for i in range(len(cells))],
                       "answer": cells})
    for rule in ("majority", "unanimity"):
        v = fold_panel(df, rule=rule).verdicts.iloc[0]
        assert v["n_panel"] == len(cells) and v["n_answered"] == sum(c is not None for c in cells)
        assert v["agreement"] + v["disagreement"] + v["n_skipped"] / v["n_panel"] == pytest.approx(1.0)
        if pd.notna(v["verdict"]):
            assert v["confidence"] <= v["n_answered"] / v["n_panel"] + 1e-12
        if rule == "unanimity" and None in cells:
            assert pd.isna(v["verdict"])  # a missing cell is never an agreement
