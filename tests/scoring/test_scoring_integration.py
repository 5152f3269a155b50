"""End to end: ingest + score on the demo corpus; online = batch; order invariance; the CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import evaltk
from evaltk.cli._main import main
from evaltk.data import make_demo
from evaltk.scoring import MEASURES, score_run, score_traces
from evaltk.values import check_value_cause


@pytest.fixture(scope="module")
def demo():
    return make_demo(n_traces=600, rng=7)


@pytest.fixture(scope="module")
def matrix(demo):
    return score_traces(demo.traces, demo.answers, demo.labels)


def test_no_nan_without_a_cause_anywhere_and_every_measure_present(matrix):
    check_value_cause(matrix.frame)
    auto = matrix.scores("automatic")
    assert auto.groupby("trace_id", observed=True)["measure"].nunique().eq(len(MEASURES)).all()
    s = matrix.summary()
    assert (s["mean"].isna() == s["mean_cause"].notna()).all()
    assert (s["n"] == s["n_valued"] + s["n_excluded"]).all()


def test_ledger_accounts_for_every_input_record(demo, matrix):
    led = matrix.ledger
    n_in = len(demo.traces) + len(demo.answers) + len(demo.labels)
    assert len(led) == n_in
    assert set(led["status"]) <= {"kept", "dropped"}
    assert led.loc[led["status"] == "dropped", "reason"].notna().all()
    n_in_progress = sum(t["status"] == "in_progress" for t in demo.traces)
    assert (led["reason"] == "in_progress").sum() == n_in_progress
    assert len(matrix.runs) == len(demo.traces) - n_in_progress


def test_x_safe_recovers_the_planted_truth_exactly(demo, matrix):
    """x_safe is computed from the record: it must equal the generator's planted value and cause."""
    truth = demo.truth.set_index("trace_id")
    w = matrix.wide().set_index("trace_id")
    t = truth.loc[w.index]
    assert np.allclose(w["x_safe"].to_numpy(float), t["x_safe"].to_numpy(float), equal_nan=True)
    assert (w["x_safe_cause"].astype(object).fillna("") == t["x_safe_cause"].astype(object).fillna("")).all()


def test_planted_checkpoint_differences_are_recovered(demo, matrix):
    by = matrix.summary(by="agent").set_index(["measure", "agent"])["mean"]
    truth = demo.truth.groupby("agent")["task_success"].mean()
    order_truth = truth.sort_values().index.tolist()
    order_scored = by.loc["x_task"].sort_values().index.tolist()
    assert order_scored == order_truth


def test_overstating_judge_leans_toward_success(demo):
    a = demo.answers[demo.answers["measure"] == "x_task"]
    truth = demo.truth.set_index("trace_id")["x_task"]
    yes_rate = {}
    for judge, g in a[a["answer"].isin(["yes", "no"])].groupby("rater"):
        failed = g[g["trace_id"].map(truth) == 0.0]
        yes_rate[judge] = (failed["answer"] == "yes").mean()
    assert max(yes_rate, key=yes_rate.get) == "judge-optimist"


def test_online_scoring_gives_exactly_the_batch_row(demo, matrix):
    complete = [t for t in demo.traces if t["status"] == "complete"][:5]
    for rec in complete:
        tid = rec["trace_id"]
        ans = demo.answers[demo.answers["trace_id"] == tid]
        lab = demo.labels[demo.labels["trace_id"] == tid]
        one = score_run(rec, ans, lab if len(lab) else None)
        cols = ["trace_id", "measure", "tier", "value", "cause", "reason", "n_raters"]
        got = one.frame[cols].astype({"trace_id": str, "measure": str, "tier": str, "cause": object,
                                      "reason": str}).reset_index(drop=True)
        b = matrix.frame[matrix.frame["trace_id"] == tid][cols]
        b = b.astype({"trace_id": str, "measure": str, "tier": str, "cause": object, "reason": str})
        b = b[b["tier"].isin(got["tier"].unique())].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, b, check_dtype=False)


def test_results_are_invariant_to_record_order(demo):
    traces = [t for t in demo.traces][:200]
    ids = {t["trace_id"] for t in traces}
    ans = demo.answers[demo.answers["trace_id"].isin(ids)]
    a = score_traces(traces, ans)
    rng = np.random.default_rng(0)
    shuffled = [traces[i] for i in rng.permutation(len(traces))]
    b = score_traces(shuffled, ans.sample(frac=1, random_state=1))
    key = ["trace_id", "measure", "tier"]

    def norm(m):
        f = m.frame.astype({"trace_id": str, "measure": str, "tier": str, "cause": object, "reason": str})
        return f.sort_values(key).reset_index(drop=True)[[*key, "value", "cause", "reason", "n_raters"]]

    pd.testing.assert_frame_equal(norm(a), norm(b), check_dtype=False)


def test_failure_taxonomy_finds_planted_unconfirmed_payments(demo, matrix):
    cats = evaltk.classify_failures(matrix)
    found = set(cats.loc[cats["category"] == "passed_but_unconfirmed_payment", "trace_id"])
    w = matrix.wide().set_index("trace_id")
    planted = set(demo.truth.loc[demo.truth["passed_unconfirmed_payment"].astype(bool), "trace_id"])
    planted &= set(w.index[w["x_task"] == 1.0])  # the judges must also have passed it
    assert planted and planted <= found


def test_cli_score_writes_matrix_and_exit_codes(tmp_path, capsys):
    d = make_demo(n_traces=120, rng=3)
    d_dir = tmp_path / "demo"
    evaltk.data._datasets.write_demo(d_dir, n_traces=120, rng=3)
    traces = d_dir / "traces.jsonl"
    rc = main(["score", str(traces), "--answers", str(d_dir / "answers.csv"), "--labels",
               str(d_dir / "labels.csv"), "--out", str(tmp_path / "out"), "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ledger"]["records"] == out["ledger"]["kept"] + out["ledger"]["dropped"]
    back = evaltk.ScoreMatrix.load(tmp_path / "out")
    assert len(back.runs) == sum(t["status"] == "complete" for t in d.traces)
    assert main(["score", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "x")]) == 66
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"trace_id": "a", "task": "t", "status": "complete", "steps": "nope"}\n', encoding="utf-8")
    assert main(["score", str(bad), "--out", str(tmp_path / "y"), "--strict"]) == 65
    err = capsys.readouterr().err
    assert "bad.jsonl" in err and "steps" in err


def test_an_agents_own_claim_of_success_carries_no_weight():
    rec = {"trace_id": "t1", "task": "Buy a lamp in the shop", "status": "complete", "claimed_success": True,
           "final_message": "Done! Task completed successfully.",
           "steps": [{"index": 0, "action": "tap", "target": "buy", "screen": "cart", "consequential": True}]}
    w = score_traces([rec]).wide().iloc[0]
    assert np.isnan(w["x_task"]) and w["x_task_cause"] == "not_implemented"
    ans = pd.DataFrame({"trace_id": ["t1"], "measure": ["x_task"], "step": [None], "rater": ["j"],
                        "answer": ["no"]})
    assert score_traces([rec], ans).wide().iloc[0]["x_task"] == 0.0


def test_mean_summary_agrees_with_the_summary_table_for_every_measure(matrix):
    """Two doors to one measure's summary (``mean_summary`` and ``summary()``) give one answer."""
    table = matrix.summary().set_index("measure")
    for measure in MEASURES:
        s = matrix.mean_summary(measure)
        row = table.loc[measure]
        assert (s.n, s.n_valued) == (row["n"], row["n_valued"])
        assert {c: s.excluded[c] for c in s.excluded} == {c: row[f"n_{c}"] for c in s.excluded}
        assert (s.mean == row["mean"]) if s.n_valued else (pd.isna(row["mean"]) and s.n_valued == 0)
        assert s.coverage == pytest.approx(row["coverage"], abs=0)
