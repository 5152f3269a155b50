"""Labels needed to reach a target interval half-width on a judge's accuracy: active vs random.

On the demo data (planted truth), the estimate is one judge's x_task accuracy on the runs
it answered.  Both strategies label in batches of 20 until the 95% interval's half-width
is at most the target, and the number of labels is recorded; the simulation repeats with
different seeds and prints medians and the ratio, measured in the same run.

* random: simple random sampling, Wilson interval;
* active (evaltk.judges): strata by panel uncertainty (does the judge contradict the rest of
  the panel; the others' disagreement; the judge's confidence), labels allocated by expected variance reduction, uniform
  within strata, stratified estimate and interval.

Usage::

    python benchmarks/labeling.py [--judge judge-optimist] [--target 0.03] [--reps 30]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from evaltk.data import make_demo
from evaltk.judges import (
    expansion_gate,
    fold_panel,
    propose_batch,
    stratified_accuracy,
    uncertainty_strata,
)
from evaltk.stats import wilson_interval


def build_pool(judge: str, n_traces: int, seed: int) -> pd.DataFrame:
    d = make_demo(n_traces=n_traces, rng=seed)
    a = d.answers[d.answers["measure"] == "x_task"]
    truth = d.truth.set_index("trace_id")["x_task"]
    mine = a[(a["rater"] == judge) & a["answer"].isin(["yes", "no"])]
    others = a[a["rater"] != judge][["trace_id", "measure", "rater", "answer", "confidence"]]
    panel = fold_panel(others, confidence="confidence").verdicts.set_index("trace_id")
    pool = pd.DataFrame({"item": mine["trace_id"].to_numpy(),
                         "judge_answer": mine["answer"].to_numpy(),
                         "confidence": mine["confidence"].to_numpy(float)})
    pool["disagreement"] = pool["item"].map(panel["disagreement"]).to_numpy(float)
    t = pool["item"].map(truth)
    pool = pool[t.notna().to_numpy()].reset_index(drop=True)
    pool["correct"] = (pool["judge_answer"] == np.where(pool["item"].map(truth) == 1.0, "yes", "no"))
    pool["conflict"] = (pool["item"].map(panel["verdict"]) != pool["judge_answer"]).to_numpy()
    pool["stratum"] = uncertainty_strata(pool, conflict="conflict", n_strata=8)
    return pool


def labels_needed_random(pool: pd.DataFrame, target: float, batch: int, rng: np.random.Generator) -> int:
    order = rng.permutation(len(pool))
    c = pool["correct"].to_numpy()[order]
    for n in range(batch, len(pool) + 1, batch):
        ci = wilson_interval(int(c[:n].sum()), n).confidence_interval
        if (ci[1] - ci[0]) / 2 <= target:
            return n
    return len(pool)


def overlap_gate(rng: np.random.Generator, n: int = 200, p_agree: float = 0.95):
    """The expansion gate (seed 002: expansion is gated on inter-annotator agreement) on a
    simulated double-labelled overlap: two annotators agreeing on ``p_agree`` of ``n`` items."""
    a = rng.choice(["yes", "no"], n)
    b = np.where(rng.random(n) < p_agree, a, np.where(a == "yes", "no", "yes"))
    return expansion_gate(a, b, threshold=0.6)


def labels_needed_active(pool: pd.DataFrame, target: float, batch: int, rng: np.random.Generator) -> int:
    labeled = pd.DataFrame(columns=["item", "correct"])
    truth = pool.set_index("item")["correct"]
    gate = overlap_gate(rng)
    while len(labeled) < len(pool):
        b = propose_batch(pool, labeled, gate=gate, batch_size=batch, rng=rng)
        new = pd.DataFrame({"item": b["item"].to_numpy(), "correct": truth.loc[b["item"]].to_numpy()})
        labeled = new if labeled.empty else pd.concat([labeled, new], ignore_index=True)
        est = stratified_accuracy(pool, labeled)
        if est.half_width <= target:
            return len(labeled)
    return len(pool)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judge", default="judge-optimist")
    ap.add_argument("--target", type=float, default=0.03)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--n-traces", type=int, default=3000)
    a = ap.parse_args()
    pool = build_pool(a.judge, a.n_traces, 0)
    print(f"pool: {len(pool)} runs answered by {a.judge}; true accuracy {pool['correct'].mean():.3f}; "
          f"strata sizes {pool.groupby('stratum').size().tolist()}, accuracy by stratum "
          f"{pool.groupby('stratum')['correct'].mean().round(3).tolist()}")
    t0 = time.perf_counter()
    rnd = [labels_needed_random(pool, a.target, a.batch, np.random.default_rng(s)) for s in range(a.reps)]
    act = [labels_needed_active(pool, a.target, a.batch, np.random.default_rng(s)) for s in range(a.reps)]
    print(f"target half-width {a.target}: labels needed over {a.reps} runs (median [p10, p90])")
    print(f"  random: {np.median(rnd):.0f} [{np.percentile(rnd, 10):.0f}, {np.percentile(rnd, 90):.0f}]")
    print(f"  active: {np.median(act):.0f} [{np.percentile(act, 10):.0f}, {np.percentile(act, 90):.0f}]")
    print(f"  ratio active / random: {np.median(act) / np.median(rnd):.2f} (goal: at most 0.5)")
    print(f"({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
