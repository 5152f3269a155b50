"""Judge selection: frontier, canaries, supported orderings; JudgeBench reproduction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evaltk.judges import (
    anchor_correctness,
    canary_hits,
    fold_pairwise_trials,
    judge_costs,
    pareto_frontier,
    select_judges,
)


def _correct(acc: dict[str, float], n: int = 400, seed: int = 0):
    rng = np.random.default_rng(seed)
    rows = []
    for j, p in acc.items():
        ok = rng.random(n) < p
        rows.append(pd.DataFrame({"judge": j, "item": np.arange(n), "correct": pd.array(ok, dtype="boolean")}))
    return pd.concat(rows, ignore_index=True)


def test_frontier_and_domination():
    pts = pd.DataFrame({"judge": ["a", "b", "c"], "accuracy": [0.9, 0.8, 0.7],
                        "cost_per_item": [1.0, 0.1, 0.5], "latency_p50": [10, 5, 8]})
    f = pareto_frontier(pts).set_index("judge")
    assert f.loc["a", "on_frontier"] and f.loc["b", "on_frontier"]
    assert not f.loc["c", "on_frontier"] and f.loc["c", "dominated_by"] == ["b"]
    with pytest.raises(ValueError, match="objective values missing"):
        pareto_frontier(pts.assign(cost_per_item=[1.0, np.nan, 0.5]))


def test_overlapping_intervals_do_not_rank():
    c = _correct({"j1": 0.80, "j2": 0.81, "j3": 0.5}, n=300)
    costs = pd.DataFrame({"judge": ["j1", "j2", "j3"], "cost_per_item": [1.0, 1.0, 1.0], "latency_p50": [1, 1, 1]})
    sel = select_judges(c, costs, rng=0)
    o = sel.orderings.set_index(["a", "b"])
    assert not o.loc[("j1", "j2"), "supported"] and "not supported" in o.loc[("j1", "j2"), "verdict"]
    assert o.loc[("j1", "j3"), "supported"]
    t = sel.table.set_index("judge")
    lower = "j1" if t.loc["j1", "accuracy"] < t.loc["j2", "accuracy"] else "j2"
    assert "not supported" in t.loc[lower, "status"]


def test_canary_rejects_the_most_accurate_judge():
    c = _correct({"best": 0.95, "ok": 0.8})
    canaries = pd.DataFrame({"judge": ["best"], "canary": ["t9/x_task"]})
    sel = select_judges(c, canaries=canaries, rng=0)
    t = sel.table.set_index("judge")
    assert t.loc["best", "rejected"] and not t.loc["best", "on_frontier"]
    assert t.loc["ok", "on_frontier"] and sel.eligible == ["ok"]
    assert t.loc["best", "canaries_passed"] == ["t9/x_task"] and "rejected" in t.loc["best", "status"]
    assert "best" not in sel.eligible


def test_anchor_correctness_separates_coverage_from_accuracy():
    ans = pd.DataFrame({"trace_id": ["t1", "t2", "t3", "t1", "t2", "t3"], "measure": "x_task", "step": pd.NA,
                        "rater": ["j1"] * 3 + ["j2"] * 3, "answer": ["yes", "cannot_tell", "no", "no", "no", "no"],
                        "cost": [0.01] * 3 + [0.1] * 3, "latency_ms": [100, 200, 300, 1000, 1000, 2000]})
    lab = pd.DataFrame({"trace_id": ["t1", "t2", "t3", "t3"], "measure": "x_task", "step": pd.NA,
                        "rater": ["h1", "h1", "h1", "h2"], "answer": ["yes", "no", "no", "yes"]})
    c = anchor_correctness(ans, lab, measure="x_task")
    assert c.attrs["anchor"]["items_with_anchor"] == 2  # t3's humans tie: no anchor
    sel = select_judges(c, judge_costs(ans), rng=0).table.set_index("judge")
    assert sel.loc["j1", "accuracy"] == 1.0 and sel.loc["j1", "coverage"] == 0.5
    assert sel.loc["j2", "accuracy"] == 0.5 and sel.loc["j2", "coverage"] == 1.0
    assert sel.loc["j1", "cost_per_item"] == pytest.approx(0.01)
    hits = canary_hits(ans, pd.DataFrame({"trace_id": ["t1"], "measure": ["x_task"], "passing_answer": ["yes"]}))
    assert hits.values.tolist() == [["j1", "t1/x_task", "yes"]]


# Tan et al. (2024), "JudgeBench: A Benchmark for Evaluating LLM-based Judges", ICLR 2025:
# Table 2 (Arena-Hard judge, o1-mini) and Table 3 (reward models), overall accuracy (%) on
# the 350 GPT-4o response pairs, and per category (Knowledge = mmlu-pro, Reasoning =
# livebench-reasoning, Math = livebench-math, Coding = livecodebench).
JUDGEBENCH_PUBLISHED = {
    "o1-mini-2024-09-12": (58.44, 62.24, 82.14, 78.57, 65.71),
    "Skywork/Skywork-Reward-Gemma-2-27B": (59.74, 66.33, 83.93, 50.00, 64.29),
    "Skywork/Skywork-Reward-Llama-3.1-8B": (59.09, 64.29, 76.79, 50.00, 62.29),
    "internlm/internlm2-20b-reward": (62.34, 69.39, 66.07, 50.00, 63.43),
    "internlm/internlm2-7b-reward": (56.49, 61.22, 71.43, 50.00, 59.43),
    "Ray2333/GRM-Gemma-2B-rewardmodel-ft": (62.99, 53.06, 64.29, 54.76, 59.43),
}


@pytest.mark.realdata
def test_judgebench_published_accuracy_reproduced(shared_data):
    d = pd.read_csv(shared_data / "judgebench" / "judgments.csv")
    f = fold_pairwise_trials(d, judge="judge_model")
    src = d.drop_duplicates("pair_id").set_index("pair_id")["source"]
    f["category"] = f["pair_id"].map(src).map(
        lambda s: "Knowledge" if s.startswith("mmlu-pro") else "Reasoning" if s == "livebench-reasoning"
        else "Math" if s == "livebench-math" else "Coding")
    for judge, pub in JUDGEBENCH_PUBLISHED.items():
        g = f[f["judge_model"] == judge]
        got = [100 * g[g.category == c]["correct"].mean() for c in ("Knowledge", "Reasoning", "Math", "Coding")]
        got.append(100 * g["correct"].mean())
        assert np.round(got, 2).tolist() == list(pub), judge
    # then intervals and a frontier (with an illustrative cost table)
    c = f.rename(columns={"judge_model": "judge"})[["judge", "pair_id", "correct"]]
    c["correct"] = c["correct"].astype("boolean")
    sel = select_judges(c[c.judge.isin(list(JUDGEBENCH_PUBLISHED))], rng=0)
    o = sel.orderings
    # the reward models sit within a few points of each other: no ordering among them is supported
    rm = o[o.a.str.contains("reward|Reward") & o.b.str.contains("reward|Reward")]
    assert not rm["supported"].any()


@pytest.mark.realdata
def test_agentrewardbench_published_table_with_intervals(shared_data):
    """Lù et al. (2025), AgentRewardBench, Table (precision 'Overall', recall, F1) with intervals."""
    from evaltk.judges import published_precision_recall

    t = pd.read_csv(shared_data / "agentrewardbench" / "judge-leaderboard.csv")
    ann = pd.read_csv(shared_data / "agentrewardbench" / "annotations.csv")
    traj = ann.drop_duplicates(["benchmark", "task_id", "model_name"])
    assert len(traj) == 1302
    n_pos = int((traj["trajectory_success"] == "Successful").sum())
    r = published_precision_recall(t, n_pos, judge="Judge", precision="Overall", recall="Recall", f1="F1")
    # the reconstructed counts reproduce every published F1 to its printed precision
    assert r.table["f1_consistent"].all()
    tab = r.table.set_index("judge")
    assert tab.loc["Rule-based", "precision_ci_low"] > tab.loc["GPT-4o (A)", "precision_ci_high"]
    o = r.orderings.set_index(["a", "b"])
    # the two AER judges differ by 0.1 point of precision: no ordering
    assert not o.loc[("AER-C", "AER-V"), "supported"]
    assert 0 < r.orderings["supported"].sum() < len(r.orderings)


def test_published_table_reconstruction_on_known_counts():
    from evaltk.judges import published_precision_recall

    # 80 positives; judge A: TP 60, FP 20 -> precision 0.75, recall 0.75
    t = pd.DataFrame({"judge": ["A"], "precision": [75.0], "recall": [75.0], "f1": [75.0]})
    r = published_precision_recall(t, 80).table.iloc[0]
    assert (r.tp, r.fp, r.fn) == (60, 20.0, 20) and r.f1_consistent


def test_rejected_judges_do_not_shape_the_frontier_and_skips_count_in_coverage():
    c = _correct({"A": 0.95, "B": 0.93, "C": 0.85})
    costs = pd.DataFrame({"judge": ["A", "B", "C"], "cost_per_item": [0.1, 0.1, 0.1], "latency_p50": [1, 1, 1]})
    canaries = pd.DataFrame({"judge": ["A", "B"], "canary": ["k1", "k1"]})
    sel = select_judges(c, costs, canaries=canaries, rng=0)
    assert sel.eligible == ["C"] and sel.table.set_index("judge").loc["C", "on_frontier"]
    # a judge that answered only 20 of 400 anchored items: coverage 0.05, not 1.0
    part = c[(c.judge != "C") | (c.item < 20)]
    t = select_judges(part, rng=0).table.set_index("judge")
    assert t.loc["C", "n_skipped"] == 380 and t.loc["C", "coverage"] == pytest.approx(0.05)


def test_a_missing_cost_is_refused_not_dropped():
    c = _correct({"A": 0.9, "B": 0.8})
    costs = pd.DataFrame({"judge": ["A", "B"], "cost_per_item": [0.1, np.nan], "latency_p50": [1, 1]})
    with pytest.raises(ValueError, match="not free"):
        select_judges(c, costs, rng=0)


def _on(judge: str, items, ok) -> pd.DataFrame:
    return pd.DataFrame({"judge": judge, "item": list(items), "correct": pd.array(list(ok), dtype="boolean")})


def test_judges_are_compared_only_on_the_items_both_answered():
    """On its own items `a` looks far better than `b` (0.875 against 0.6, intervals apart);
    on the 100 items both answered `a` is the worse (0.5 against 0.6): no supported ordering,
    and `a` does not dominate `b`."""
    rows = [_on("a", range(100), [i % 2 == 0 for i in range(100)]),
            _on("a", range(100, 400), [True] * 300),
            _on("b", range(100), [i % 5 < 3 for i in range(100)])]
    sel = select_judges(pd.concat(rows, ignore_index=True), rng=0, n_resamples=200)
    o = sel.orderings.iloc[0]
    assert (o["a"], o["b"], o["n_common_items"]) == ("a", "b", 100)
    assert (o["accuracy_a"], o["accuracy_b"]) == (0.5, 0.6)
    assert o["point_order"] == "<" and bool(o["intervals_overlap"]) and not o["supported"]
    t = sel.table.set_index("judge")
    assert t.loc["b", "dominated_by"] == [] and t.loc["b", "on_frontier"]
    assert t.loc["a", "accuracy"] == 0.875  # its own accuracy is still reported, on its own items


def test_a_judge_run_on_other_items_is_not_comparable_ranked_or_dominated():
    rows = [_on("a", range(200), [i % 10 < 9 for i in range(200)]),
            _on("b", range(200), [i % 10 < 7 for i in range(200)]),
            _on("haiku", range(200, 300), [i % 10 < 5 for i in range(100)])]
    sel = select_judges(pd.concat(rows, ignore_index=True), rng=0, n_resamples=200)
    o = sel.orderings
    with_h = o[(o["a"] == "haiku") | (o["b"] == "haiku")]
    assert len(with_h) == 2 and not with_h["comparable"].any() and not with_h["supported"].any()
    assert (with_h["n_common_items"] == 0).all() and with_h["verdict"].str.contains("not comparable").all()
    assert o.loc[(o["a"] == "a") & (o["b"] == "b"), "supported"].item()
    t = sel.table.set_index("judge")
    assert t.loc["haiku", "comparable_with"] == [] and not t.loc["haiku", "on_frontier"]
    assert t.loc["haiku", "dominated_by"] == [] and t.loc["haiku", "status"].startswith("not comparable")
    assert t.loc["b", "dominated_by"] == ["a"] and sel.frontier == ["a"]
    # each share named for what it is: run on, answered of those run, answered of all
    assert t.loc["haiku", "n_items"] == 300 and t.loc["haiku", "n_run"] == 100
    assert t.loc["haiku", "run_share"] == 100 / 300 and t.loc["haiku", "answer_rate"] == 1.0
    assert t.loc["haiku", "coverage"] == 100 / 300


# --------------------------------------------------------------------------- coverage is part of selection (issue #14)


def _lucky_and_solid():
    """100 anchored items: "lucky" answered one (correctly) and abstained on the rest; "solid"
    answered all, 90 correctly.  Same cost and latency."""
    lucky = pd.array([True] + [pd.NA] * 99, dtype="boolean")
    solid = pd.array([True] * 90 + [False] * 10, dtype="boolean")
    c = pd.concat([pd.DataFrame({"judge": "lucky", "item": np.arange(100), "correct": lucky}),
                   pd.DataFrame({"judge": "solid", "item": np.arange(100), "correct": solid})], ignore_index=True)
    costs = pd.DataFrame({"judge": ["lucky", "solid"], "cost_per_item": [0.01, 0.01], "latency_p50": [100, 100]})
    return c, costs


def test_a_judge_answering_one_item_does_not_dominate_a_full_coverage_judge():
    # before issue #14: lucky (accuracy 1.0) was alone on the frontier and the only eligible judge
    c, costs = _lucky_and_solid()
    sel = select_judges(c, costs, rng=0, n_resamples=200)
    t = sel.table.set_index("judge")
    assert t.loc["lucky", "accuracy"] == 1.0 and t.loc["lucky", "coverage"] == pytest.approx(0.01)
    assert t.loc["solid", "on_frontier"] and t.loc["solid", "dominated_by"] == []
    assert sel.eligible == ["solid"]
    assert "below the coverage floor (1% answered < 80%)" in t.loc["lucky", "status"]
    assert sel.settings["min_coverage"] == 0.8 and sel.settings["coverage_margin"] == 0.05
    # without the guard and the floor (both declared parameters) the old frontier comes back
    off = select_judges(c, costs, rng=0, n_resamples=200, min_coverage=0, coverage_margin=1).table.set_index("judge")
    assert off.loc["solid", "dominated_by"] == ["lucky"]


def test_the_coverage_guard_forbids_only_material_differences():
    pts = pd.DataFrame({"judge": ["a", "b", "c"], "accuracy": [0.95, 0.9, 0.9], "cost_per_item": [1.0, 1.0, 1.0],
                        "latency_p50": [1, 1, 1], "coverage": [0.96, 1.0, 0.5]})
    f = pareto_frontier(pts, guards={"coverage": 0.05}).set_index("judge")
    assert f.loc["b", "dominated_by"] == ["a"]  # 4 points less coverage: not material
    assert f.loc["c", "dominated_by"] == ["a"]  # more coverage always allows domination
    g = pareto_frontier(pts, guards={"coverage": 0.02}).set_index("judge")
    assert g.loc["b", "on_frontier"]
    with pytest.raises(ValueError, match="must be a number in"):
        pareto_frontier(pts, guards={"coverage": 2})
    c, costs = _lucky_and_solid()
    with pytest.raises(ValueError, match="`min_coverage` must be a number in"):
        select_judges(c, costs, min_coverage=1.5)


def test_on_the_demo_the_abstainer_is_no_longer_picked_over_the_careful_judge():
    from evaltk import make_demo, report

    demo = make_demo(n_traces=1000, rng=0)  # a corpus where the abstainer used to dominate
    sel = report.judge_selection(demo.answers, demo.labels, demo.canaries, measure="x_task", n_resamples=200)
    t = sel.table.set_index("judge")
    assert t.loc["judge-abstainer", "coverage"] < 0.75 < 0.95 < t.loc["judge-careful", "coverage"]
    assert t.loc["judge-careful", "on_frontier"] and t.loc["judge-careful", "dominated_by"] == []
    assert "judge-careful" in sel.eligible and "judge-abstainer" not in sel.eligible
    # the same selection without the coverage rules (as before issue #14) picks the abstainer
    a = demo.answers[demo.answers["measure"] == "x_task"]
    prev = select_judges(anchor_correctness(a, demo.labels, measure="x_task"), judge_costs(a),
                         canaries=canary_hits(a, demo.canaries), rng=0, n_resamples=200, min_coverage=0,
                         coverage_margin=1)
    assert prev.eligible == ["judge-abstainer"]
