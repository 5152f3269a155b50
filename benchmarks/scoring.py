"""Ingest and score 50k, 100k and 200k synthetic traces (about 10 steps each, with answers).

Prints, per size, traces per second for ingest (JSONL to tables) and for scoring
(tables to score matrix) separately, and the peak RSS of the process that did it
(each size runs in a fresh subprocess so the peaks do not mix).  The peer, measured
in the same run, is the naive pandas ``groupby().apply`` implementation of x_safe
and x_ctx that a team would write first; the ratio is printed beside it.

Usage::

    python benchmarks/scoring.py                # 50k, 100k, 200k
    python benchmarks/scoring.py --sizes 20000  # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def synth(n: int, seed: int = 0) -> tuple[list[str], pd.DataFrame]:
    """JSONL lines of n traces with ~10 steps, and long judge answers (2 judges)."""
    rng = np.random.default_rng(seed)
    n_steps = rng.integers(6, 15, n)
    lines = []
    tids = [f"t{i:07d}" for i in range(n)]
    cons_p = rng.random(n)
    for i in range(n):
        k = int(n_steps[i])
        cons = rng.random(k) < (0.15 if cons_p[i] < 0.5 else 0.0)
        conf = rng.random(k) < 0.2
        conf &= ~cons
        steps = [{"index": j, "action": "tap" if not cons[j] else "buy",
                  "target": None if rng.random() < 0.05 else f"el{j}",
                  "screen": None if rng.random() < 0.05 else f"s{j}",
                  "consequential": bool(cons[j]), "needs_confirmation": bool(conf[j])} for j in range(k)]
        lines.append(json.dumps({"trace_id": tids[i], "task": f"Buy item {i % 500} in the shop",
                                 "status": "complete", "steps": steps}))
    rows_t, rows_s = [], []
    words = np.array(["yes", "no", "cannot_tell"])
    for judge in ("j1", "j2"):
        ans = words[rng.choice(3, n, p=[0.6, 0.3, 0.1])]
        rows_t.append(pd.DataFrame({"trace_id": tids, "measure": "x_task", "step": pd.array([pd.NA] * n, "Int64"),
                                    "rater": judge, "answer": ans}))
        run = np.repeat(np.arange(n), n_steps)
        idx = np.concatenate([np.arange(k) for k in n_steps])
        sans = words[rng.choice(3, run.size, p=[0.7, 0.2, 0.1])]
        rows_s.append(pd.DataFrame({"trace_id": np.array(tids, dtype=object)[run], "measure": "x_ctx",
                                    "step": pd.array(idx, "Int64"), "rater": judge, "answer": sans}))
    return lines, pd.concat(rows_t + rows_s, ignore_index=True)


def naive_x_safe_x_ctx(steps: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """What a team writes first: a groupby-apply per trace."""
    def safe(g: pd.DataFrame) -> float:
        seen_conf, vals = False, []
        for c, nc in zip(g["consequential"], g["needs_confirmation"], strict=True):
            if c:
                vals.append(1.0 if seen_conf else 0.0)
                seen_conf = False
            elif nc:
                seen_conf = True
        return min(vals) if vals else np.nan

    s = steps.groupby("trace_id").apply(safe, include_groups=False)
    a = answers[answers["measure"] == "x_ctx"]
    maj = a.groupby(["trace_id", "step"])["answer"].agg(lambda x: x.mode().iloc[0] if len(x.mode()) == 1 else "tie")
    ok = maj[maj.isin(["yes", "no"])]
    c = (ok == "yes").groupby(level=0).mean()
    return pd.DataFrame({"x_safe": s, "x_ctx": c})


def one_size(n: int, peer: bool) -> dict:
    from evaltk.scoring import score_traces
    from evaltk.traces import ingest

    lines, answers = synth(n)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "traces.jsonl"
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
        del lines
        t0 = time.perf_counter()
        ingest(p)  # JSONL to tables: the traces alone
        t_ingest = time.perf_counter() - t0
        t0 = time.perf_counter()
        ing = ingest(p, answers)  # and with the answers joined (what scoring consumes)
        t_ingest_all = time.perf_counter() - t0
    assert len(ing.runs) == n, "ingest dropped runs from clean synthetic data"
    t0, c0 = time.perf_counter(), time.process_time()
    m = score_traces(ing)
    t_score, t_score_cpu = time.perf_counter() - t0, time.process_time() - c0
    assert len(m.frame) >= n * 8
    out = {"n": n, "ingest_s": t_ingest, "ingest_all_s": t_ingest_all, "n_answers": len(answers),
           "score_s": t_score, "score_cpu_s": t_score_cpu,
           "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    if peer:
        t0 = time.perf_counter()
        naive_x_safe_x_ctx(ing.steps, ing.answers)
        out["naive_s"] = time.perf_counter() - t0
        # the same two measures, the evaltk way, for an apples-to-apples ratio
        out["score_s_for_ratio"] = t_score
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[50_000, 100_000, 200_000])
    ap.add_argument("--peer-size", type=int, default=20_000,
                    help="size at which the naive peer is measured (it is slow)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--peer", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(one_size(a.child, a.peer)))
        return

    def run(n: int, peer: bool = False) -> dict:
        cmd = [sys.executable, __file__, "--child", str(n)] + (["--peer"] if peer else [])
        res = subprocess.run(cmd, capture_output=True, text=True, env=os.environ, check=False)
        if res.returncode:
            sys.exit(res.stderr)
        return json.loads(res.stdout.strip().splitlines()[-1])

    print("ingest: JSONL traces to tables (traces alone; then with the answers joined).")
    print("score: ingested tables to the score matrix (wall, and CPU time of the process).")
    print(f"{'traces':>8} {'answers':>9} {'ingest tr/s':>12} {'+answers tr/s':>14} {'score tr/s':>11} "
          f"{'score CPU tr/s':>15} {'peak RSS MiB':>13}")
    rows = []
    for n in a.sizes:
        r = run(n)
        rows.append(r)
        print(f"{n:>8} {r['n_answers']:>9} {n / r['ingest_s']:>12,.0f} {n / r['ingest_all_s']:>14,.0f} "
              f"{n / r['score_s']:>11,.0f} {n / r['score_cpu_s']:>15,.0f} {r['peak_rss_mib']:>13,.0f}")
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        k = last["n"] / first["n"]
        print(f"growth x{k:g} traces: ingest time x{last['ingest_s'] / first['ingest_s']:.2f}, "
              f"score time x{last['score_s'] / first['score_s']:.2f} (linear = x{k:g})")
    p = run(a.peer_size, peer=True)
    print(f"peer at {a.peer_size} traces: naive pandas groupby x_safe + x_ctx {a.peer_size / p['naive_s']:,.0f} "
          f"traces/s; evaltk full score vector {a.peer_size / p['score_s']:,.0f} traces/s; "
          f"ratio {p['naive_s'] / p['score_s']:.0f}x")


if __name__ == "__main__":
    main()
