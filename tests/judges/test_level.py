"""level_estimate: where you are, from a judge on every run and a few held-out human labels."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evaltk import expected_half_width, level_estimate
from evaltk.errors import InputError
from evaltk.values import Abstention, Cause, UndefinedWarning


def _population(rng, N=3000, informative=True):
    """Runs with a human truth, a biased judge that abstains more on successes, and undecidable runs."""
    D = rng.random(N) < 0.85
    Y = (rng.random(N) < np.where(D, 0.55, 0.3)).astype(float)
    f = np.where(Y == 1, rng.random(N) < 0.75, rng.random(N) < 0.15).astype(float)  # understates
    abstain = rng.random(N) < (np.where(Y == 1, 0.25, 0.05) if informative else 0.1)
    judge = pd.Series(np.where(abstain, "cannot tell", np.where(f == 1, "yes", "no")), dtype=object)
    human = pd.Series(np.where(D, np.where(Y == 1, "yes", "no"), "cannot tell"), dtype=object)
    return judge, human, Y[D].mean()


def test_words_map_through_the_measure_and_every_cause_is_counted():
    judge = {"a": "yes", "b": "no", "c": "cannot tell", "d": None, "e": "yes", "f": "no", "g": "yes"}
    human = {"a": "yes", "b": "yes", "c": "no", "d": "cannot tell", "e": None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedWarning)
        r = level_estimate(judge, human, measure="x_task")
    assert r.n_excluded == {"human_cannot_tell": 1, "human_not_applicable": 0, "human_no_label": 1,
                            "judge_abstained": 1, "judge_no_answer": 1}
    assert r.n_labeled == 4 and r.n_unlabeled == 3  # "e" had no label: it joins the unlabelled runs
    assert any("decidable" in n for n in r.notes) and any("imputed" in n for n in r.notes)
    row = r.to_frame().iloc[0]
    assert row["n_excluded_human_cannot_tell"] == 1


def test_informative_judge_abstentions_and_cannot_tell_leave_the_estimate_unbiased():
    rng = np.random.default_rng(0)
    judge, human, truth = _population(rng)
    naive_zero, ests, cover = [], [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedWarning)
        for _ in range(400):
            lab = rng.choice(len(judge), 150, replace=False)
            r = level_estimate(judge, human.iloc[lab], measure="x_task")
            ests.append(r.statistic)
            cover += r.confidence_interval.low <= truth <= r.confidence_interval.high
            h = human.iloc[lab]
            naive_zero.append((h == "yes").mean())  # "cannot tell" read as 0
    assert abs(np.mean(ests) - truth) < 4 * np.std(ests) / math.sqrt(400) + 2e-3
    assert 0.92 <= cover / 400 <= 0.98
    assert abs(np.mean(naive_zero) - truth) > 0.05  # what evaltk refuses to do
    # the judge alone (its rate where it answered) is biased: it understates
    ans = judge[judge != "cannot tell"]
    assert (ans == "yes").mean() < truth - 0.05


def test_the_interval_is_narrower_than_the_labels_alone_with_a_good_judge():
    rng = np.random.default_rng(2)
    N = 4000
    Y = rng.random(N) < 0.4
    judge = pd.Series(np.where(rng.random(N) < 0.95, Y, ~Y).astype(float))
    human = pd.Series(Y.astype(float)).iloc[:200]
    r = level_estimate(judge, human)
    ho = r.human_only_interval
    assert r.half_width < (ho.high - ho.low) / 2 and r.effective_labels > 400


def test_refusals_name_the_run_and_the_field():
    with pytest.raises(InputError, match="run 'z'.*not among"):
        level_estimate({"a": 1.0, "b": 0.0}, {"z": 1.0})
    with pytest.raises(InputError, match="vocabulary"):
        level_estimate({"a": "maybe", "b": "yes"}, {"a": "yes"}, measure="x_task")
    with pytest.raises(InputError, match="outside"):
        level_estimate({"a": 1.5, "b": 0.0}, {"a": 1.0})
    with pytest.raises(InputError, match="inclusion_probability"):
        level_estimate({"a": 1.0, "b": 0.0}, {"a": 1.0}, method="active")
    with pytest.raises(InputError, match="answered no run"):
        level_estimate({"a": None, "b": Abstention(Cause.ABSTAINED, "x")}, {"a": 1.0})


def test_active_design_with_oversampled_uncertain_runs_covers():
    rng = np.random.default_rng(4)
    N = 3000
    hard = rng.random(N) < 0.3
    Y = (rng.random(N) < np.where(hard, 0.35, 0.8)).astype(float)
    judge = pd.Series(np.where(rng.random(N) < np.where(hard, 0.6, 0.95), Y, 1 - Y))
    pi = pd.Series(np.where(hard, 0.12, 0.03))
    cover = 0
    for _ in range(300):
        xi = rng.random(N) < pi.to_numpy()
        r = level_estimate(judge, pd.Series(Y)[xi], method="active", inclusion_probability=pi)
        cover += r.confidence_interval.low <= Y.mean() <= r.confidence_interval.high
    assert 0.92 <= cover / 300 <= 0.985


def test_rogan_gladen_is_offered_as_the_classical_comparison():
    rng = np.random.default_rng(5)
    N = 2000
    Y = rng.random(N) < 0.3
    judge = pd.Series(np.where(Y, rng.random(N) < 0.9, rng.random(N) < 0.1).astype(float))
    r = level_estimate(judge, pd.Series(Y.astype(float)).iloc[:300], method="rogan_gladen")
    assert r.method == "rogan_gladen" and r.confidence_interval.low <= Y.mean() <= r.confidence_interval.high


def test_expected_half_width_predicts_the_next_batch():
    rng = np.random.default_rng(6)
    N = 5000
    Y = (rng.random(N) < 0.5).astype(float)
    judge = pd.Series(np.where(rng.random(N) < 0.85, Y, 1 - Y))
    order = rng.permutation(N)
    now = level_estimate(judge, pd.Series(Y)[order[:100]])
    planned = expected_half_width(now, 300)
    realised = np.mean([level_estimate(judge, pd.Series(Y)[order[:400]]).half_width])
    assert planned < now.half_width
    assert planned == pytest.approx(realised, rel=0.2)
    assert expected_half_width(now, 0) == pytest.approx(now.half_width)
    with pytest.raises(ValueError):
        expected_half_width(now, -1)


def alttest_level_inputs(path: Path, dataset: str, lo: float, hi: float) -> tuple[pd.Series, dict[str, pd.Series]]:
    """Per item: the all-human mean rating scaled to [0, 1], and each LLM judge's rating on that scale."""
    from evaltk.data import load_alttest

    long = load_alttest(path, dataset)
    scaled = (pd.to_numeric(long["rating"], errors="coerce") - lo) / (hi - lo)
    long = long.assign(v=scaled.where(scaled.between(0, 1)))
    human = long[long["rater_kind"] == "human"].groupby("item_id")["v"].mean().dropna()
    llm = long[long["rater_kind"] == "llm"]
    judges = {j: g.set_index("item_id")["v"].reindex(human.index) for j, g in llm.groupby("rater")}
    return human, judges


@pytest.mark.realdata
def test_alttest_summeval_ten_percent_of_labels_cover_the_all_human_mean(shared_data: Path):
    human_mean, judges = alttest_level_inputs(shared_data / "alttest", "summeval", 1.0, 5.0)
    truth = float(human_mean.mean())
    rng = np.random.default_rng(0)
    n = len(human_mean) // 10
    cover = 0
    for _ in range(60):
        lab = rng.choice(human_mean.index.to_numpy(), n, replace=False)
        r = level_estimate(judges["gpt-4o"], human_mean[lab])
        cover += r.confidence_interval.low <= truth <= r.confidence_interval.high
    assert cover / 60 >= 0.9
    assert r.n_excluded["judge_no_answer"] == int(judges["gpt-4o"].isna().sum())


# --------------------------------------------------------------------------- wired into check_use


PINNED = {"judge_model": "m", "judge_model_version": "2026-01", "rubric_id": "r-v1",
          "rubric_digest": "sha256:" + "a" * 64, "template_digest": "sha256:" + "b" * 64,
          "decoding": '{"temperature":0}'}


def _scored(n=400, seed=0, pinned=True):
    """A score matrix whose judge understates x_task, and the human truth per run."""
    from evaltk import score_tables

    rng = np.random.default_rng(seed)
    truth = rng.random(n) < 0.6
    said = np.where(truth, rng.random(n) < 0.7, rng.random(n) < 0.1)
    runs, steps, ans = [], [], []
    for i in range(n):
        tid = f"r{i}"
        runs.append({"trace_id": tid, "task": f"task {i // 4}", "domain": "shopping", "status": "complete",
                     "n_steps": 1, "guide": None})
        steps.append({"trace_id": tid, "index": 0, "run_pos": i, "action": "tap", "target": "t", "screen": "s",
                      "consequential": False, "needs_confirmation": False})
        ans.append((tid, "x_task", None, "j1", "yes" if said[i] else "no"))
    a = pd.DataFrame(ans, columns=["trace_id", "measure", "step", "rater", "answer"])
    a["step"] = a["step"].astype("Int64")
    if pinned:
        a = a.assign(**PINNED)
    m = score_tables(pd.DataFrame(runs), pd.DataFrame(steps), a,
                     ledger=pd.DataFrame({"status": ["kept"] * n, "reason": [None] * n}), population="tasks:t")
    return m, pd.Series(np.where(truth, "yes", "no"), index=[f"r{i}" for i in range(n)])


def _calibrate(m, evaluation, tuning=()):
    from evaltk import CalibrationRecord, Threshold

    rec = CalibrationRecord(label_set="held-out-2026-11", statistic="percent_agreement", estimate=0.8,
                            interval=(0.74, 0.85), confidence_level=0.95, held_out=True,
                            human_ceiling=(0.9, 0.85, 0.94), baseline=0.6,
                            threshold=Threshold(0.5, validated=True, source="decision cost"),
                            n_items=len(evaluation), evaluation_items=tuple(evaluation),
                            tuning_items=tuple(tuning))
    return m.with_manifest(m.manifest.calibrate("x_task", rec))


def test_absolute_level_is_given_on_a_calibrated_pinned_instrument_with_held_out_labels():
    from evaltk import UnsupportedUse, absolute_level, check_use

    m, truth = _scored()
    held = [f"r{i}" for i in range(0, 400, 5)]  # every fifth run labelled, held out
    with pytest.raises(UnsupportedUse, match="provisional"):
        absolute_level(m, "x_task", truth[held])
    cal = _calibrate(m, held, tuning=[f"r{i}" for i in range(1, 400, 5)])
    r = absolute_level(cal, "x_task", truth[held])
    assert r.instrument == cal.manifest.instrument("x_task").digest and r.n_labeled == 80
    assert r.n_clusters == 100  # four runs per task: the variance is summed over tasks
    assert r.confidence_interval.low <= (truth == "yes").mean() <= r.confidence_interval.high
    judge_mean = float(m.frame.query("measure == 'x_task'")["value"].mean())
    assert judge_mean < r.confidence_interval.low  # the judge alone understates; the level corrects it
    assert "held-out" in check_use("absolute_level", cal, measure="x_task", level=r)
    with pytest.raises(UnsupportedUse, match="prediction-powered"):
        check_use("absolute_level", cal, measure="x_task")


def test_absolute_level_refuses_labels_not_held_out_and_another_instrument():
    from dataclasses import replace

    from evaltk import UnsupportedUse, absolute_level, check_use

    m, truth = _scored()
    held = [f"r{i}" for i in range(0, 400, 5)]
    cal = _calibrate(m, held, tuning=["r1", "r2"])
    with pytest.raises(UnsupportedUse, match="not among the held-out evaluation items"):
        absolute_level(cal, "x_task", truth[held + ["r3"]])
    with pytest.raises(UnsupportedUse, match="shaped the scorer"):
        absolute_level(cal, "x_task", truth[held + ["r1"]])  # r1 tuned the scorer
    r = absolute_level(cal, "x_task", truth[held])
    with pytest.raises(UnsupportedUse, match="instrument"):
        check_use("absolute_level", cal, measure="x_task", level=replace(r, instrument="sha256:" + "0" * 64))
    unpinned, _ = _scored(pinned=False)
    with pytest.raises(UnsupportedUse, match="unpinned"):
        absolute_level(_calibrate(unpinned, held), "x_task", truth[held])
