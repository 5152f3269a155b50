"""Ingest and score 50k, 100k and 200k synthetic traces (about 10 steps each, with answers).

Prints, per size, traces per second for ingest (JSONL to tables) and for scoring
(tables to score matrix) separately, wall and CPU time, and the peak RSS of the
process that did it (each size runs in a fresh subprocess so the peaks do not mix).
Scoring is timed as shipped (x_ctx on a second thread when a second core exists)
and on one core.  The peer, measured in the same run, is the naive pandas
``groupby().apply`` implementation of x_safe and x_ctx that a team would write
first; the ratio is printed beside it, and so is the rate from hand-built
object-dtype tables (nothing remembered by ingest).  The machines here are shared:
compare the CPU columns and the same-run ratios, not absolute wall times.

Usage::

    python benchmarks/scoring.py                # 50k, 100k, 200k
    python benchmarks/scoring.py --sizes 20000  # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _memory import peak_mib


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


def _plain(t: pd.DataFrame) -> pd.DataFrame:
    """The same table as a user might build it by hand: object strings, nothing remembered."""
    return pd.DataFrame({c: (t[c].astype(object) if t[c].dtype == "str" else t[c]) for c in t.columns})


def one_size(n: int, peer: bool, reps: int) -> dict:
    import evaltk.scoring._rules as scoring
    from evaltk.ingest import ingest_traces
    from evaltk.scoring import score_tables, score_traces

    lines, answers = synth(n)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "traces.jsonl"
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
        del lines
        t0, c0 = time.perf_counter(), time.process_time()
        ingest_traces(p)  # JSONL to tables: the traces alone
        t_ingest, t_ingest_cpu = time.perf_counter() - t0, time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        ing = ingest_traces(p, answers)  # and with the answers joined (what scoring consumes)
        t_ingest_all, t_ingest_all_cpu = time.perf_counter() - t0, time.process_time() - c0
    assert len(ing.runs) == n, "ingest dropped runs from clean synthetic data"

    def timed(fn) -> tuple[float, float]:
        fn()  # warm-up: lazy imports, the thread pool, first-touch of the allocator's pages
        walls, cpus = [], []
        for _ in range(reps):
            t0, c0 = time.perf_counter(), time.process_time()
            m = fn()
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            assert len(m.frame) >= n * 8
        return float(np.median(walls)), float(np.median(cpus))

    t_score, t_score_cpu = timed(lambda: score_traces(ing))
    saved = scoring.PARALLEL_MIN_WORK
    scoring.PARALLEL_MIN_WORK = None  # one thread: the cost per core
    try:
        t_serial, t_serial_cpu = timed(lambda: score_traces(ing))
    finally:
        scoring.PARALLEL_MIN_WORK = saved
    out = {"n": n, "ingest_s": t_ingest, "ingest_cpu_s": t_ingest_cpu, "ingest_all_s": t_ingest_all,
           "ingest_all_cpu_s": t_ingest_all_cpu, "n_answers": len(answers),
           "score_s": t_score, "score_cpu_s": t_score_cpu, "serial_s": t_serial, "serial_cpu_s": t_serial_cpu,
           "peak_rss_mib": peak_mib()}
    if peer:
        runs, steps, ans = _plain(ing.runs), _plain(ing.steps), _plain(ing.answers)
        out["plain_s"], _ = timed(lambda: score_tables(runs, steps, ans))
        t0 = time.perf_counter()
        naive_x_safe_x_ctx(ing.steps, ing.answers)
        out["naive_s"] = time.perf_counter() - t0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[50_000, 100_000, 200_000])
    ap.add_argument("--peer-size", type=int, default=20_000,
                    help="size at which the naive peer is measured (it is slow)")
    ap.add_argument("--reps", type=int, default=5,
                    help="scoring repetitions per size after one warm-up call (median reported)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--peer", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(one_size(a.child, a.peer, a.reps)))
        return

    def run(n: int, peer: bool = False) -> dict:
        cmd = [sys.executable, __file__, "--child", str(n), "--reps", str(a.reps)] + (["--peer"] if peer else [])
        res = subprocess.run(cmd, capture_output=True, text=True, env=os.environ, check=False)
        if res.returncode:
            sys.exit(res.stderr)
        return json.loads(res.stdout.strip().splitlines()[-1])

    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
    print("ingest: JSONL traces to tables (traces alone; then with the answers joined), wall and CPU.")
    print(f"score: ingested tables to the score matrix, median of {a.reps} calls after a warm-up; 'score' may "
          "use a second core for x_ctx, 'one core' does not.")
    print(f"{'traces':>8} {'answers':>9} {'ingest tr/s':>12} {'(CPU)':>9} {'+answers tr/s':>14} {'(CPU)':>9} "
          f"{'score tr/s':>11} {'(CPU)':>11} {'one core tr/s':>14} {'peak RSS MiB':>13}")
    rows = []
    for n in a.sizes:
        r = run(n)
        rows.append(r)
        print(f"{n:>8} {r['n_answers']:>9} {n / r['ingest_s']:>12,.0f} {n / r['ingest_cpu_s']:>9,.0f} "
              f"{n / r['ingest_all_s']:>14,.0f} {n / r['ingest_all_cpu_s']:>9,.0f} "
              f"{n / r['score_s']:>11,.0f} {n / r['score_cpu_s']:>11,.0f} {n / r['serial_s']:>14,.0f} "
              f"{r['peak_rss_mib']:>13,.0f}")
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        k = last["n"] / first["n"]
        print(f"growth x{k:g} traces: ingest time x{last['ingest_all_s'] / first['ingest_all_s']:.2f}, "
              f"score time x{last['score_s'] / first['score_s']:.2f}, one-core score CPU "
              f"x{last['serial_cpu_s'] / first['serial_cpu_s']:.2f} (linear = x{k:g})")
    p = run(a.peer_size, peer=True)
    print(f"at {a.peer_size} traces: evaltk full score vector {a.peer_size / p['score_s']:,.0f} traces/s; "
          f"from hand-built object-dtype tables (nothing remembered by ingest) "
          f"{a.peer_size / p['plain_s']:,.0f} traces/s")
    print(f"peer at {a.peer_size} traces: naive pandas groupby x_safe + x_ctx {a.peer_size / p['naive_s']:,.0f} "
          f"traces/s; ratio evaltk / peer {p['naive_s'] / p['score_s']:.0f}x "
          f"(hand-built tables {p['naive_s'] / p['plain_s']:.0f}x)")


if __name__ == "__main__":
    main()
