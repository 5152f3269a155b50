"""Benchmark: summarising suite runs (RFC 0246) at 10k-100k tasks x 5 trials.

Peer: a naive per-task Python implementation of the same rules (the way a host grader
is usually written: loop over tasks, loop over trials, ``statistics``-free sums,
``math.comb`` per task), measured in the same process on the same documents.

For each size it prints, for evaltk's loader (parse + validate + trajectory match),
evaltk's summary (vectorised), the columnar path (a tidy trial table through
``suite_run_from_frame`` and ``summarize_suite``) and the peer (everything from the
parsed document):
seconds, tasks per second, peak traced memory (``tracemalloc``), and microseconds per
task, so linear growth shows as a flat us/task column.  Ratios are peer / evaltk.

Usage::

    .venv/bin/python benchmarks/suite.py                 # 10k, 25k, 50k, 100k tasks
    .venv/bin/python benchmarks/suite.py --repeat 3      # best of 3 (a busy machine is noisy)
    .venv/bin/python benchmarks/suite.py --sizes 1000 5000 --trials 3
"""

from __future__ import annotations

import argparse
import gc
import math
import time
import tracemalloc
from collections import Counter

import numpy as np

from evaltk.suite import load_suite_run, suite_run_from_frame, summarize_suite

TOOLS = ["lookup_order", "refund", "search_faq", "update_address", "cancel_order"]


def make_run(n_tasks: int, n_trials: int, *, seed: int = 0) -> dict:
    """A synthetic run: half the tasks with a trajectory, some forbidden calls and misses."""
    rng = np.random.default_rng(seed)
    scores = np.round(rng.beta(6, 2, size=(n_tasks, n_trials)), 2).tolist()
    has_traj = (rng.random(n_tasks) < 0.5).tolist()
    wrong = (rng.random((n_tasks, n_trials)) < 0.1).tolist()
    miss = (rng.random((n_tasks, n_trials)) < 0.02).tolist()
    modes = ["strict", "unordered", "subset", "superset"]
    tasks = []
    for i in range(n_tasks):
        t: dict = {"id": f"task-{i}", "type": "golden"}
        if has_traj[i]:
            t["expected"] = {"trajectory": {"match": modes[i % 4], "tools": ["lookup_order", "refund"],
                                            "forbidden": ["delete_account"]}}
        trials = []
        for j in range(n_trials):
            tr: dict = {"score": 0.0 if miss[i][j] else scores[i][j], "cost": 0.01, "latencyMs": 1000 + j}
            if miss[i][j]:
                tr["fixtureMiss"] = True
            if has_traj[i]:
                tr["toolCalls"] = (["lookup_order", "delete_account", "refund"] if wrong[i][j]
                                   else ["lookup_order", "refund"])
            trials.append(tr)
        t["trials"] = trials
        tasks.append(t)
    return {"suite": "bench", "thresholds": {"passScore": 0.7, "maxCost": 1e9, "maxLatencyMs": 1e9},
            "trials": {"count": n_trials, "passRule": "mean"}, "tasks": tasks}


# --------------------------------------------------------------------------- the peer


def _naive_match(spec: dict, calls: list[str]) -> bool:
    if any(c in spec.get("forbidden", []) for c in calls):
        return False
    tools = spec.get("tools")
    if tools is None:
        return True
    mode = spec.get("match", "strict")
    if mode == "strict":
        return calls == tools
    a, e = Counter(calls), Counter(tools)
    if mode == "unordered":
        return a == e
    if mode == "subset":
        return not (e - a)
    return not (a - e)


def naive_summary(doc: dict) -> dict:
    """Per-task Python loop over the parsed document (the peer)."""
    ps = doc["thresholds"]["passScore"]
    n = doc.get("trials", {}).get("count", 1)
    k = n
    task_scores, task_gated, out_tasks = [], [], []
    total_cost = 0.0
    latencies = []
    for t in doc["tasks"]:
        spec = (t.get("expected") or {}).get("trajectory")
        s_sum = g_sum = 0.0
        c = 0
        scores = []
        for tr in t["trials"]:
            s = tr["score"]
            if not (0.0 <= s <= 1.0):
                raise ValueError(t["id"])
            miss = tr.get("fixtureMiss", False)
            ok = True if spec is None else _naive_match(spec, tr["toolCalls"])
            g = 0.0 if (miss or not ok) else s
            s_sum += s
            g_sum += g
            scores.append(s)
            if s >= ps and ok and not miss:
                c += 1
            total_cost += tr.get("cost", 0.0)
            latencies.append(tr.get("latencyMs", 0.0))
        ms, gs = s_sum / n, g_sum / n
        mean = ms
        sd = math.sqrt(sum((x - mean) ** 2 for x in scores) / (n - 1)) if n > 1 else None
        entry = {"taskId": t["id"], "score": ms, "passed": gs >= ps,
                 "passAtK": 1 - math.comb(n - c, k) / math.comb(n, k),
                 "passHatK": math.comb(c, k) / math.comb(n, k),
                 "trialStats": {"min": min(scores), "max": max(scores), "stdDev": sd}}
        if spec is not None or gs != ms:
            entry["gatedScore"] = gs
        out_tasks.append(entry)
        task_scores.append(ms)
        task_gated.append(gs)
    agg = sum(task_scores) / len(task_scores)
    gagg = sum(task_gated) / len(task_gated)
    latencies.sort()
    p95 = latencies[max(math.ceil(0.95 * len(latencies)), 1) - 1]
    passed = (gagg >= ps and total_cost <= doc["thresholds"]["maxCost"]
              and p95 <= doc["thresholds"]["maxLatencyMs"])
    return {"aggregateScore": agg, "gatedAggregateScore": gagg, "passed": passed, "tasks": out_tasks}


# --------------------------------------------------------------------------- measurement


def measure(fn, *args, repeat: int = 1):
    """Best wall time of ``repeat`` untraced runs, then one run under tracemalloc for the peak."""
    best_t, result = math.inf, None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        result = fn(*args)
        best_t = min(best_t, time.perf_counter() - t0)
    gc.collect()
    tracemalloc.start()
    fn(*args)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return best_t, peak, result


def table_path(table):
    """The columnar path: a tidy trial table in, the summary out."""
    return summarize_suite(suite_run_from_frame(table, suite="bench", pass_score=0.7, max_cost=1e9,
                                                max_latency_ms=1e9))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 25_000, 50_000, 100_000])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    print(f"suite summarize benchmark: {a.trials} trials per task; time = best of {a.repeat}; "
          "peak = tracemalloc peak of one more traced run")
    hdr = (f"{'tasks':>8} {'step':<22} {'seconds':>8} {'tasks/s':>11} {'us/task':>8} {'peak MB':>8} "
           f"{'peer/evaltk':>11}")
    print(hdr)
    print("-" * len(hdr))
    per_task: dict[str, list[float]] = {}
    for size in a.sizes:
        doc = make_run(size, a.trials)
        t_load, m_load, run = measure(load_suite_run, doc, repeat=a.repeat)
        t_sum, m_sum, summary = measure(summarize_suite, run, repeat=a.repeat)
        t_dict, m_dict, _ = measure(summary.to_dict, repeat=a.repeat)
        t_peer, m_peer, peer = measure(naive_summary, doc, repeat=a.repeat)
        table = run.to_frame()
        t_frame, m_frame, _ = measure(table_path, table, repeat=a.repeat)
        per_task.setdefault("summarize", []).append(t_sum / size)
        per_task.setdefault("from_frame", []).append(t_frame / size)
        # same answers
        assert abs(peer["aggregateScore"] - summary.aggregate_score) < 1e-9
        assert abs(peer["gatedAggregateScore"] - summary.gated_aggregate_score) < 1e-9
        agree = np.mean([p["passed"] == bool(x) for p, x in zip(peer["tasks"], summary.task_passed,
                                                                  strict=True)])
        rows = [("evaltk load+validate", t_load, m_load, None),
                ("evaltk summarize", t_sum, m_sum, t_peer / t_sum),
                ("evaltk to_dict (JSON)", t_dict, m_dict, None),
                ("evaltk end-to-end", t_load + t_sum + t_dict, max(m_load, m_sum, m_dict),
                 t_peer / (t_load + t_sum + t_dict)),
                ("evaltk table+summarize", t_frame, m_frame, t_peer / t_frame),
                ("peer naive per-task", t_peer, m_peer, 1.0)]
        for name, t, m, ratio in rows:
            r = "" if ratio is None else f"{ratio:10.1f}x"
            print(f"{size:>8} {name:<22} {t:8.3f} {size / t:11,.0f} {1e6 * t / size:8.2f} "
                  f"{m / 2**20:8.1f} {r:>11}")
        print(f"{'':>8} task verdicts agreeing with the peer: {agree:.4%} (the peer compares floats "
              "without exact decimals)")
    if len(a.sizes) > 1:
        for step, v in per_task.items():
            print(f"linearity, {step}: time per task at {a.sizes[-1]:,} tasks / at {a.sizes[0]:,} tasks = "
                  f"{v[-1] / v[0]:.2f} (1.0 = linear)")


if __name__ == "__main__":
    main()
