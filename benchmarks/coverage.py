"""Empirical coverage of nominal 95% intervals for Cohen's kappa (issue 3, section 6).

Simulates two exchangeable raters with a known population kappa and a shared
prevalence (:func:`evaltk.judges.population_table`), draws ``--reps``
samples of n items for every n in (50, 200, 1000) and prevalence in (0.1, 0.5),
and counts how often each interval method covers the true kappa:

* ``analytic``: kappa +- c * SE of Fleiss, Cohen and Everitt (1969)
  (``evaltk.stats.cohen_kappa(method="analytic")``; ``c`` is Student's t on n - 1 df
  since issue #16, the normal quantile before: ``benchmarks/interval_coverage.py``
  compares the two);
* ``percentile``, ``basic``, ``bca``: the item bootstrap of ``evaltk.stats``
  (2,000 resamples drawn as count tables);
* ``statsmodels``: the peer, ``statsmodels.stats.inter_rater.cohens_kappa``'s
  asymptotic interval, on the same samples.

A sample whose kappa is undefined (one category only) has no interval; it is
counted in ``undefined`` and, in ``coverage_all``, as a miss.  ``mc_se`` is the
Monte Carlo standard error of the coverage.  The goal (issue 3) is 93-97% for
n >= 200; ``ok`` marks the cells that meet it.

Run:  .venv/bin/python benchmarks/coverage.py [--reps 1000] [--kappa 0.6] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings

import numpy as np
import pandas as pd
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

from evaltk.judges import population_table
from evaltk.stats import cohen_kappa
from evaltk.values import Abstention, EvaltkWarning

METHODS = ("analytic", "percentile", "basic", "bca")


def _labels(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    cells = np.repeat(np.arange(4), table)
    return cells // 2, cells % 2


def run(reps: int, kappa: float, seed: int, ns=(50, 200, 1000), prevalences=(0.1, 0.5),
        n_resamples: int = 2000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for prev in prevalences:
        probs = population_table(kappa, prev).ravel()
        for n in ns:
            hits = {m: 0 for m in (*METHODS, "statsmodels")}
            defined = {m: 0 for m in hits}
            widths = {m: [] for m in hits}
            seconds = {m: 0.0 for m in hits}
            for _ in range(reps):
                table = rng.multinomial(n, probs)
                y1, y2 = _labels(table)
                for m in METHODS:
                    t0 = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", EvaltkWarning)
                        r = cohen_kappa(y1, y2, categories=[0, 1], method=m, n_resamples=n_resamples,
                                        rng=rng)
                    seconds[m] += time.perf_counter() - t0
                    ci = r.confidence_interval
                    if isinstance(ci, Abstention) or not all(math.isfinite(v) for v in ci):
                        continue
                    defined[m] += 1
                    widths[m].append(ci[1] - ci[0])
                    hits[m] += ci[0] <= kappa <= ci[1]
                t0 = time.perf_counter()
                tab = table.reshape(2, 2)
                if tab.sum(axis=0).min() > 0 or tab.sum(axis=1).min() > 0:
                    with np.errstate(all="ignore"), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        res = sm_cohens_kappa(tab)
                    lo, hi = float(res.kappa_low), float(res.kappa_upp)
                    if math.isfinite(lo) and math.isfinite(hi) and math.isfinite(float(res.kappa)):
                        defined["statsmodels"] += 1
                        widths["statsmodels"].append(hi - lo)
                        hits["statsmodels"] += lo <= kappa <= hi
                seconds["statsmodels"] += time.perf_counter() - t0
            for m in hits:
                cov = hits[m] / defined[m] if defined[m] else float("nan")
                rows.append({
                    "prevalence": prev, "n": n, "method": m,
                    "coverage": cov,
                    "coverage_all": hits[m] / reps,
                    "mc_se": math.sqrt(cov * (1 - cov) / defined[m]) if defined[m] else float("nan"),
                    "undefined": reps - defined[m],
                    "mean_width": float(np.mean(widths[m])) if widths[m] else float("nan"),
                    "ms_per_interval": 1000 * seconds[m] / reps,
                    "ok": (0.93 <= cov <= 0.97) if n >= 200 else None,
                })
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--kappa", type=float, default=0.6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-resamples", type=int, default=2000)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    df = run(args.reps, args.kappa, args.seed, n_resamples=args.n_resamples)
    pd.set_option("display.width", 160)
    print(f"Coverage of nominal 95% intervals for Cohen's kappa = {args.kappa} "
          f"({args.reps} samples per cell, seed {args.seed}, {args.n_resamples} bootstrap resamples)")
    print(df.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    ev = df[df["method"] == "analytic"].set_index(["prevalence", "n"])["ms_per_interval"]
    sm = df[df["method"] == "statsmodels"].set_index(["prevalence", "n"])["ms_per_interval"]
    print("\nspeed, analytic interval vs statsmodels cohens_kappa (same samples; statsmodels starts from "
          "the table, evaltk from the labels):")
    for key in ev.index:
        print(f"  prevalence {key[0]}, n {key[1]}: evaltk {ev[key]:.3f} ms, statsmodels {sm[key]:.3f} ms, "
              f"ratio statsmodels/evaltk {sm[key] / ev[key]:.2f}x")
    short = df[(df["n"] >= 200) & (df["ok"] == False)]  # noqa: E712 - pandas mask
    print("\ncells with n >= 200 outside 93-97%:" if len(short) else "\nevery cell with n >= 200 is within 93-97%")
    if len(short):
        print(short[["prevalence", "n", "method", "coverage", "mc_se"]].to_string(index=False))
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
