"""Coverage of the stratified interval under active labeling with sequential stopping.

Labels are drawn by ``propose_batch`` in batches of 20 until the 95% interval's half-width
is at most the target (as in ``benchmarks/labeling.py``); the run is repeated and the
share of final intervals that contain the true accuracy is printed.  Stopping as soon as
the interval is narrow enough is exactly where an under-smoothed variance would show.

Usage::

    python benchmarks/labeling_coverage.py [--reps 200] [--target 0.03]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))

from labeling import build_pool, overlap_gate  # noqa: E402

from evaltk.judges._labeling import propose_batch, stratified_accuracy  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--target", type=float, default=0.03)
    ap.add_argument("--judge", default="judge-optimist")
    a = ap.parse_args()
    pool = build_pool(a.judge, 3000, 0)
    truth = pool["correct"].mean()
    by_item = pool.set_index("item")["correct"]
    hits, used = 0, []
    for r in range(a.reps):
        rng = np.random.default_rng(1000 + r)
        lab = pd.DataFrame(columns=["item", "correct"])
        gate = overlap_gate(rng)
        while True:
            b = propose_batch(pool, lab, gate=gate, batch_size=20, rng=rng)
            new = pd.DataFrame({"item": b["item"].to_numpy(), "correct": by_item.loc[b["item"]].to_numpy()})
            lab = new if lab.empty else pd.concat([lab, new], ignore_index=True)
            est = stratified_accuracy(pool, lab)
            if est.half_width <= a.target or len(lab) >= len(pool):
                break
        lo, hi = est.confidence_interval
        hits += int(lo <= truth <= hi)
        used.append(len(lab))
    print(f"true accuracy {truth:.4f}; {a.reps} runs stopped at half-width <= {a.target}: "
          f"coverage {hits / a.reps:.3f} (nominal 0.95), median labels {np.median(used):.0f}")


if __name__ == "__main__":
    main()
