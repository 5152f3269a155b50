"""Coverage of the stratified interval under active labeling with sequential stopping.

Labels are drawn by ``propose_batch`` in batches of 20 until the 95% interval's half-width
is at most 0.03 (as in ``benchmarks/labeling.py``); the run is repeated and the share of
final intervals that contain the true accuracy is printed.  Stopping when the interval is
narrow enough is exactly where an over-smoothed or under-smoothed variance would show.

Usage::

    python benchmarks/labeling_coverage.py
"""

import sys

import numpy as np
import pandas as pd

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from labeling import build_pool

from evaltk.labeling import propose_batch, stratified_accuracy

pool = build_pool("judge-optimist", 3000, 0)
truth = pool["correct"].mean()
tr = pool.set_index("item")["correct"]
hits = 0; R = 200; ns=[]
for r in range(R):
    rng = np.random.default_rng(1000 + r)
    lab = pd.DataFrame(columns=["item", "correct"])
    while True:
        b = propose_batch(pool, lab, batch_size=20, rng=rng)
        new = pd.DataFrame({"item": b["item"].to_numpy(), "correct": tr.loc[b["item"]].to_numpy()})
        lab = new if lab.empty else pd.concat([lab, new], ignore_index=True)
        e = stratified_accuracy(pool, lab)
        if e.half_width <= 0.03: break
    lo, hi = e.confidence_interval
    hits += lo <= truth <= hi; ns.append(len(lab))
print("coverage", hits / R, "median labels", np.median(ns))
