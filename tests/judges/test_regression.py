"""Gates and regression (seed 002, 'Gates and regression')."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from evaltk.cli._main import main
from evaltk.cli.gate import GATE_EXIT_CODES
from evaltk.judges import GateRefused, gate
from evaltk.scoring import CalibrationRecord, score_tables
from evaltk.values import Threshold, UndefinedWarning

#: The instrument columns of the one judge (evaltk.ingest.INSTRUMENT_COLUMNS).
PINNED = {"judge_model": "m", "judge_model_version": "2026-01", "rubric_id": "r-v1", "rubric_digest": "sha256:" + "a" * 64,
          "template_digest": "sha256:" + "b" * 64, "decoding": '{"temperature":0}'}


def _matrix(p_task: float, *, n: int = 200, seed: int = 0, p_ground: float = 0.8, eff: float = 0.6):
    rng = np.random.default_rng(seed)
    runs, steps, ans = [], [], []
    for i in range(n):
        tid = f"{seed}-r{i}"
        runs.append({"trace_id": tid, "task": f"task {i}", "domain": "shopping", "status": "complete",
                     "n_steps": 3, "guide": None})
        for j in range(3):
            steps.append({"trace_id": tid, "index": j, "run_pos": i, "action": "tap", "target": "t",
                          "screen": "s", "consequential": j == 2, "needs_confirmation": j == 1})
            ans.append((tid, "x_ctx", j, "j1", "yes" if rng.random() < p_ground else "no"))
        ans.append((tid, "x_task", None, "j1", "yes" if rng.random() < p_task else "no"))
        ans.append((tid, "x_eff", None, "j1", "none" if rng.random() < eff else "lots"))
    a = pd.DataFrame(ans, columns=["trace_id", "measure", "step", "rater", "answer"])
    a["step"] = a["step"].astype("Int64")
    a = a.assign(**PINNED)  # one pinned judge on both sides: an unpinned one only ever reaches review
    ledger = pd.DataFrame({"status": ["kept"] * n, "reason": [None] * n})
    return score_tables(pd.DataFrame(runs), pd.DataFrame(steps), a, ledger=ledger, population="tasks:demo")


def _calibrated(m, measure="x_task"):
    rec = CalibrationRecord(label_set="held-out", statistic="kappa", estimate=0.7, interval=(0.6, 0.8),
                            confidence_level=0.95, held_out=True, human_ceiling=(0.8, 0.7, 0.9), baseline=0.0,
                            threshold=Threshold(0.5, validated=True, source="cost"), n_items=300,
                            evaluation_items=tuple(range(300)), tuning_items=())
    return m.with_manifest(m.manifest.calibrate(measure, rec))


def test_regression_on_uncalibrated_dimension_routes_to_review():
    base, cand = _matrix(0.85, seed=1), _matrix(0.45, seed=2)
    res = gate(base, cand)
    d = res.dimensions.set_index("measure")
    assert d.loc["x_task", "decision"] == "review" and "uncalibrated" in d.loc["x_task", "reason"]
    assert d.loc["x_task", "test"].startswith("McNemar")
    assert res.decision == "review" and GATE_EXIT_CODES[res.decision] == 3


def test_regression_on_calibrated_dimension_is_a_hard_regress():
    base, cand = _calibrated(_matrix(0.85, seed=1)), _calibrated(_matrix(0.45, seed=2))
    res = gate(base, cand)
    assert res.dimensions.set_index("measure").loc["x_task", "decision"] == "regress"
    assert res.decision == "regress" and GATE_EXIT_CODES[res.decision] == 1


def test_no_change_promotes_and_tests_match_dimension_types():
    base, cand = _matrix(0.8, n=800, seed=1), _matrix(0.8, n=800, seed=2)
    res = gate(base, cand, min_effect=0.1)
    d = res.dimensions.set_index("measure")
    assert res.decision == "promote"
    assert "Wilcoxon" in d.loc["x_eff", "test"] and "cluster bootstrap" in d.loc["x_ctx", "test"]
    assert d["pvalue_adjusted"].ge(d["pvalue"]).all()  # Holm never lowers a p-value


def test_a_self_comparison_is_review_not_promote(tmp_path, capsys):
    """Two identical score folders resample to a zero-width interval ([+0.000, +0.000]): no
    evidence of non-regression at a boundary (issue #16's rule, the promotion rule's one
    home), so review with the cause named, exit 3 (GATE_EXIT_CODES)."""
    m = _matrix(0.8, n=200, seed=1)
    res = gate(m, m, min_effect=0.1)
    d = res.dimensions.set_index("measure")
    assert res.decision == "review"
    zero = d[d["ci_low"] == d["ci_high"]]  # the bootstrapped dimensions (x_eff, x_ctx)
    assert set(zero.index) == {"x_eff", "x_ctx"} and (zero["decision"] == "review").all()
    assert zero["reason"].str.contains("has zero width").all(), d["reason"].tolist()
    # a binary dimension's Newcombe interval has the width n allows: it may still promote
    assert (d.loc[d["decision"] == "promote", "ci_low"] < d.loc[d["decision"] == "promote", "ci_high"]).all()
    assert zero["reason"].str.contains("at a boundary").all()
    m.save(tmp_path / "a")
    m.save(tmp_path / "b")
    assert main(["gate", "--baseline", str(tmp_path / "a"), "--candidate", str(tmp_path / "b")]) == 3
    assert "has zero width" in capsys.readouterr().out
    assert main(["gate", "--baseline", str(tmp_path / "a"), "--candidate", str(tmp_path / "a")]) == 3


def test_gate_refuses_different_scorer_versions():
    base, cand = _matrix(0.8, seed=1), _matrix(0.8, seed=2)
    st = cand.manifest.status("x_task")
    cand = cand.with_manifest(replace(cand.manifest, measures={**cand.manifest.measures,
                                                               "x_task": replace(st, scorer_version="2.0")}))
    with pytest.raises(GateRefused, match="another instrument") as e:
        gate(base, cand)
    assert e.value.gate == "scoring consistency"


def test_gate_refuses_invalid_data():
    base = _matrix(0.8, seed=1)
    bad = replace(base, ledger=pd.DataFrame({"status": ["dropped"], "reason": [None]}))
    with pytest.raises(GateRefused, match="without a reason"):
        gate(bad, _matrix(0.8, seed=2))


def test_too_few_pairs_is_not_interpretable():
    res = gate(_matrix(0.9, n=10, seed=1), _matrix(0.1, n=10, seed=2))
    assert (res.dimensions["decision"] == "review").all()
    assert res.dimensions["reason"].str.startswith("not interpretable").all()


def test_abstentions_fail_closed_in_the_gate_not_in_the_score():
    base = _matrix(0.9, seed=1)
    cand = _matrix(0.9, seed=2)
    f = cand.frame.copy()
    sel = (f["measure"] == "x_task") & (f["trace_id"].astype(str).str.endswith(("1", "2", "3", "4", "5")))
    f.loc[sel, "value"] = np.nan
    f.loc[sel, "cause"] = "abstained"
    cand2 = replace(cand, frame=f)
    d = gate(base, cand2).dimensions.set_index("measure")
    assert d.loc["x_task", "n_fail_closed_candidate"] == int(sel.sum())
    assert d.loc["x_task", "candidate"] < 0.6  # counted as failures in the gate
    assert cand2.frame.loc[sel, "value"].isna().all()  # the scores are untouched


def test_cli_gate_exit_codes(tmp_path, capsys):
    _matrix(0.85, seed=1).save(tmp_path / "a")
    _matrix(0.45, seed=2).save(tmp_path / "b")
    assert main(["gate", "--baseline", str(tmp_path / "a"), "--candidate", str(tmp_path / "b"), "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["decision"] == "review"
    _matrix(0.8, n=800, seed=3).save(tmp_path / "c")
    _matrix(0.8, n=800, seed=4).save(tmp_path / "d")
    assert main(["gate", "--baseline", str(tmp_path / "c"), "--candidate", str(tmp_path / "d"),
                 "--min-effect", "0.1"]) == 0
    assert main(["gate", "--baseline", str(tmp_path / "nope"), "--candidate", str(tmp_path / "a")]) == 66


def test_a_dimension_that_measured_nothing_cannot_promote():
    base = _matrix(0.8, seed=1)
    cand = _matrix(0.8, seed=2)
    f = cand.frame.copy()
    sel = f["measure"].isin(["x_task", "x_eff", "x_ctx"])
    f.loc[sel, "value"] = np.nan
    f.loc[sel, "cause"] = "abstained"
    res = gate(base, replace(cand, frame=f))
    d = res.dimensions.set_index("measure")
    assert (d.loc[["x_task", "x_eff", "x_ctx"], "decision"] == "review").all()
    assert d.loc["x_task", "reason"].startswith("not interpretable")
    assert res.decision == "review"


def test_inconclusive_results_route_to_review():
    res = gate(_matrix(0.8, n=60, seed=1), _matrix(0.8, n=60, seed=2), min_pairs=30)
    d = res.dimensions.set_index("measure")
    assert d.loc["x_eff", "decision"] == "review" and d.loc["x_eff", "reason"].startswith("inconclusive")
    assert res.decision == "review"


def test_x_ctx_abstentions_fail_closed_in_the_gate():
    base = _matrix(0.9, seed=1, p_ground=1.0)
    cand = _matrix(0.9, seed=2, p_ground=1.0)
    f = cand.frame.copy()
    tids = cand.runs["trace_id"].astype(str).iloc[:100]
    sel = (f["measure"] == "x_ctx") & f["trace_id"].astype(str).isin(set(tids))
    f.loc[sel, "value"] = np.nan
    f.loc[sel, "cause"] = "abstained"
    d = gate(base, replace(cand, frame=f)).dimensions.set_index("measure")
    assert d.loc["x_ctx", "n_fail_closed_candidate"] == 100
    assert d.loc["x_ctx", "candidate"] == pytest.approx(0.5)  # 100 runs count as ungrounded
    assert d.loc["x_ctx", "decision"] == "review"


def test_calibration_of_a_shared_instrument_applies_to_both_sides():
    # seed 002: "A regression on a calibrated dimension is a hard regress"; the calibration record
    # is evidence about the instrument, so a candidate scored with a fresh default manifest by the
    # same scorer, version and fold rule is on the calibrated instrument too
    base, cand = _calibrated(_matrix(0.85, seed=1)), _matrix(0.45, seed=2)
    d = gate(base, cand).dimensions.set_index("measure")
    assert d.loc["x_task", "calibrated"] and d.loc["x_task", "decision"] == "regress"
    d = gate(_matrix(0.85, seed=1), _calibrated(_matrix(0.45, seed=2))).dimensions.set_index("measure")
    assert d.loc["x_task", "decision"] == "regress"
    # another fold rule is another instrument: the record does not carry over, and the two
    # numbers are not on one scale at all, so the gate refuses the comparison
    st = cand.manifest.status("x_task")
    unanimity = replace(st.instrument, fold_rule={**st.instrument.fold_rule, "name": "unanimity"})
    other = cand.with_manifest(replace(cand.manifest, measures={**cand.manifest.measures,
                                                                "x_task": replace(st, instrument=unanimity)}))
    with pytest.raises(GateRefused, match="fold_rule"):
        gate(base, other)


def test_undefined_bootstrap_replicates_are_counted_reported_and_warned():
    # Issue 13: the gate dropped undefined replicates with nanquantile, uncounted.  Here only
    # two of 200 baseline tasks have an answered step, so every resample of tasks that draws
    # neither has no baseline rate (0 / 0): such replicates must be counted on the result.
    base = _matrix(0.9, seed=1)
    cand = _matrix(0.9, seed=2)
    diag = base.diagnostics.copy()
    empty = np.ones(len(diag), dtype=bool)
    empty[:2] = False
    diag.loc[empty, ["x_ctx_n_grounded", "x_ctx_n_answered"]] = 0.0
    base = replace(base, diagnostics=diag)
    with pytest.warns(UndefinedWarning, match=r"of 2000 bootstrap replicates are undefined"):
        d = gate(base, cand, measures=["x_ctx"], rng=0).dimensions.set_index("measure")
    # the same draws, by hand: task counts Multinomial(K, 1/K) per replicate (rng=0, first draw)
    order = sorted(base.runs["task"])
    answered = np.isin(order, base.runs["task"].to_numpy()[:2])
    W = np.random.default_rng(0).multinomial(len(order), np.full(len(order), 1 / len(order)), size=2000)
    expected = int((W[:, answered].sum(axis=1) == 0).sum())
    assert expected > 100  # the constructed case really has many undefined replicates
    assert d.loc["x_ctx", "n_undefined_resamples"] == expected
    assert d.loc["x_ctx", "n_resamples"] == 2000
    assert np.isfinite(d.loc["x_ctx", "ci_low"])
