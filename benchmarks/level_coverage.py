"""Coverage and width of "where you are" estimates (issue #20): simulated judges and AltTest.

Part 1, simulation.  A population of ``--runs`` runs with a human truth (a 0/1 label,
rate 0.4) and three judges: one that overstates (false positives 30%, misses 5%),
one that understates (misses 35%, false positives 3%) and a noisy one (25% of
answers flipped either way).  For every judge and every number of labels in
(50, 100, 500), ``--reps`` uniform random label sets; each gives the PPI++ estimate
(``evaltk.level_estimate``), the Rogan-Gladen correction and the human-only Wilson
interval on the same labels.  Printed per cell: empirical coverage of the truth (the
population rate), its Monte Carlo SE, mean width and the width ratio against the
human-only interval, and the peer's (ppi_py) PPI++ coverage on the same draws.
Goal: PPI++ 93-97% at 50, 100 and 500 labels.

Part 2, AltTest (``../shared/data/alttest``, skipped with a reason when absent).  For
each task and each LLM judge: the per-item all-human level (the humans' mean rating
scaled to [0, 1]; for a categorical task, the share of humans choosing the task's
most frequent human label) is the truth; a random 10% of items gets its human level,
every item its judge level, and ``level_estimate`` gives the PPI++ interval.  Printed:
coverage of the all-human mean over ``--alt-reps`` subsamples, the mean width, the
human-only width on the same items, and the judge's own (uncorrected) bias.

Run:  .venv/bin/python benchmarks/level_coverage.py [--reps 1000] [--alt-reps 200]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

# benchmarks/coverage.py would shadow the `coverage` package that numba (under ppi_py) imports
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from evaltk import level_estimate  # noqa: E402
from evaltk.data import load_alttest  # noqa: E402
from evaltk.values import UndefinedWarning  # noqa: E402

JUDGES = {  # P(judge says 1 | human 1), P(judge says 1 | human 0)
    "overstates": (0.95, 0.30),
    "understates": (0.65, 0.03),
    "noisy": (0.75, 0.25),
}
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "alttest"


def simulate(reps: int, runs: int, seed: int, ns=(50, 100, 500)) -> pd.DataFrame:
    try:
        from ppi_py import ppi_mean_ci
    except ImportError:  # the peer is in the dev extra
        ppi_mean_ci = None
    rng = np.random.default_rng(seed)
    Y = (rng.random(runs) < 0.4).astype(float)
    truth = Y.mean()
    rows = []
    for name, (sens, fpr) in JUDGES.items():
        f = np.where(Y == 1, rng.random(runs) < sens, rng.random(runs) < fpr).astype(float)
        judge = pd.Series(f)
        for n in ns:
            hit = {"ppi++": 0, "rogan_gladen": 0, "human_only": 0, "ppi_py": 0}
            width = {k: [] for k in hit}
            t0 = time.perf_counter()
            for _ in range(reps):
                lab = rng.choice(runs, n, replace=False)
                human = pd.Series(Y[lab], index=lab)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UndefinedWarning)
                    r = level_estimate(judge, human)
                    rg = level_estimate(judge, human, method="rogan_gladen")
                for key, ci in (("ppi++", r.confidence_interval), ("rogan_gladen", rg.confidence_interval),
                                ("human_only", r.human_only_interval)):
                    if hasattr(ci, "low"):
                        hit[key] += ci.low <= truth <= ci.high
                        width[key].append(ci.high - ci.low)
                if ppi_mean_ci is not None:
                    mask = np.ones(runs, bool)
                    mask[lab] = False
                    lo, hi = (float(np.ravel(v)[0]) for v in ppi_mean_ci(Y[lab], f[lab], f[mask], alpha=0.05))
                    hit["ppi_py"] += lo <= truth <= hi
                    width["ppi_py"].append(hi - lo)
            secs = time.perf_counter() - t0
            for key in hit:
                if not width[key]:
                    continue
                cov = hit[key] / reps
                rows.append({"judge": name, "labels": n, "method": key, "coverage": round(cov, 3),
                             "mc_se": round(math.sqrt(cov * (1 - cov) / reps), 3),
                             "mean_width": round(float(np.mean(width[key])), 4),
                             "width_vs_human": round(float(np.mean(width[key])) / float(np.mean(width["human_only"])), 3),
                             "ok": (0.93 <= cov <= 0.97) if key == "ppi++" else None})
            rows[-1]["seconds"] = round(secs, 1)
    return pd.DataFrame(rows)


def alttest_levels(path: Path, dataset: str) -> tuple[pd.Series, dict[str, pd.Series], str]:
    """Per item, the all-human level in [0, 1] and each judge's level on the same scale."""
    long = load_alttest(path, dataset)
    num = pd.to_numeric(long["rating"], errors="coerce")
    hum = long["rater_kind"] == "human"
    if num[hum].notna().all():
        lo, hi = float(num[hum].min()), float(num[hum].max())
        v = ((num - lo) / (hi - lo)).where(lambda x: x.between(0, 1))
        scale = f"mean rating, {lo:g}-{hi:g} scaled to [0, 1]"
    else:
        top = long.loc[hum, "rating"].astype(str).value_counts().index[0]
        v = (long["rating"].astype(str) == top).astype(float)
        scale = f"share answering {top!r}"
    long = long.assign(v=v)
    human = long[hum].groupby("item_id")["v"].mean().dropna()
    judges = {j: g.drop_duplicates("item_id").set_index("item_id")["v"].reindex(human.index)
              for j, g in long[~hum].groupby("rater")}
    return human, judges, scale


def alttest(reps: int, seed: int, share: float = 0.10) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for dataset in sorted(p.name for p in SHARED.iterdir() if p.is_dir()):
        human, judges, scale = alttest_levels(SHARED, dataset)
        truth = float(human.mean())
        n = max(10, int(round(share * len(human))))
        items = human.index.to_numpy()
        for jname, judge in judges.items():
            hit = 0
            widths, h_widths = [], []
            for _ in range(reps):
                lab = rng.choice(items, n, replace=False)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UndefinedWarning)
                    r = level_estimate(judge, human[lab])
                ci = r.confidence_interval
                if hasattr(ci, "low"):
                    hit += ci.low <= truth <= ci.high
                    widths.append(ci.high - ci.low)
                h = r.human_only_interval
                if hasattr(h, "low"):
                    h_widths.append(h.high - h.low)
            cov = hit / reps
            rows.append({"task": dataset, "judge": jname, "items": len(human), "labels": n, "scale": scale,
                         "all_human": round(truth, 4), "judge_bias": round(float(judge.mean()) - truth, 4),
                         "judge_missing": int(judge.isna().sum()),
                         "coverage": round(cov, 3), "mc_se": round(math.sqrt(cov * (1 - cov) / reps), 3),
                         "width": round(float(np.mean(widths)), 4) if widths else math.nan,
                         "human_only_width": round(float(np.mean(h_widths)), 4) if h_widths else math.nan})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5000)
    ap.add_argument("--alt-reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-alttest", action="store_true")
    a = ap.parse_args(argv)
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_rows", 200):
        print(f"\n## Simulated judges: {a.runs} runs, truth rate 0.4, {a.reps} label sets per cell\n")
        print(simulate(a.reps, a.runs, a.seed).to_string(index=False))
        if a.skip_alttest:
            pass
        elif not SHARED.exists():
            print(f"\nAltTest skipped: {SHARED} is absent (a fresh clone has no shared data)")
        else:
            print(f"\n## AltTest: 10% of items labelled, {a.alt_reps} subsamples per task and judge\n")
            print(alttest(a.alt_reps, a.seed).to_string(index=False))
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
