"""Benchmark: loading, validating and summarising suite runs (RFC 0246) at 10k-100k tasks x 5 trials.

Peers: a naive per-task Python implementation of the same rules (the way a host grader
is usually written: ``json.load`` the run file, loop over tasks, loop over trials,
``math.comb`` per task), measured in the same process on the same documents.  The minimal
peer validates nothing but the score range, so it does less work than evaltk (which checks
every field of every record and names the file, task and field of a bad one); the checked
peer runs the checks a careful user writes by hand first (field types, unknown keys,
unique ids, trial counts, vocabularies, ranges, toolCalls on trajectory tasks), each error
naming the task and field, so its ratio compares like with like.  Both are printed.

The end-to-end rows are what ``evaltk suite summarize`` and the suite_gating notebook
run: from the run file on disk to the summary document (``load_suite_run(path)``,
``summarize_suite``, ``EvalSummary.to_dict``) against the peer from the same file
(``json.load`` and its loop); the row "file to EvalSummary" stops at the column-wise
summary a notebook reads (``to_frame``, the per-task arrays), without the JSON document.  The rows below them start from the parsed mapping (an
API caller holding a dict) and from a tidy trial table (``suite_run_from_frame``).  The
mapping rows are timed first; the parsed document is then dropped, so the rows from the
file run in a process holding no parsed run, as the CLI's does (a live tree of millions
of objects makes every collection of the cyclic garbage collector walk it, which slows
the peer's ``json.load`` most).

For each size it prints CPU seconds (``time.process_time``: the machine is shared, wall
time is noisy), wall seconds, tasks per CPU-second, microseconds per task, the peak
resident growth of one more run (VmHWM over the resident size before it, MiB:
``benchmarks/_memory.py``; Arrow's buffers count), and the ratio peer / evaltk on CPU
time, with the load average beside them.

Usage::

    .venv/bin/python benchmarks/suite.py                 # 10k, 25k, 50k, 100k tasks
    .venv/bin/python benchmarks/suite.py --repeat 3      # best of 3 (a busy machine is noisy)
    .venv/bin/python benchmarks/suite.py --sizes 1000 5000 --trials 3 --indent 2
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import tempfile
import time
from collections import Counter

import numpy as np
from _memory import peak_mib, reset_peak, rss_mib

from evaltk._io import json_text
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

#: What the peer does not do that ``load_suite_run`` + ``to_dict`` do (printed with the numbers).
PEER_SKIPS = ("the peer checks only that each score is in [0, 1]; it does not check: unknown or misspelt "
              "keys, the type of any field, unique task ids, trials per task = trials.count, trials.k, the "
              "pass-rule / aggregation / match-mode words, costs and latencies finite and >= 0, toolCalls "
              "present on trajectory tasks, duplicate keys, nesting depth, UTF-8; and each of its task "
              "entries has 6 values + 3 trial stats where evaltk's has 10 values + 3 trial fields + 7 trial "
              "stats, with no decision conditions or reasons")


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


#: The checked peer: the same loop after the validation a careful user writes by hand.
CHECKED_DOES = ("the checked peer is the same loop after the checks a careful user writes by hand (each error "
                "naming the task and field): field types, unknown keys, unique task ids, trials per task = "
                "trials.count, the pass-rule and match-mode words, scores in [0, 1] and not NaN, costs and "
                "latencies finite and >= 0, toolCalls on trajectory tasks; it does not check duplicate keys, "
                "nesting depth, UTF-8 or near-miss keys")

_TOP = {"suite", "version", "thresholds", "trials", "tasks", "aggregation", "description", "metadata"}
_TASK = {"id", "type", "expected", "trials", "input", "description", "metadata"}
_TRIAL = {"score", "toolCalls", "trajectoryMatched", "fixtureMiss", "cost", "latencyMs", "trialIndex", "metadata"}
_MODES = {"strict", "unordered", "subset", "superset"}


def _bad(where: str, field: str, why: str) -> ValueError:
    return ValueError(f"{where}: field `{field}`: {why}")


def _number(v, where: str, field: str, *, unit: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
        raise _bad(where, field, f"must be a number; got {v!r}")
    if (unit and not 0.0 <= v <= 1.0) or (not unit and not 0.0 <= v < math.inf):
        raise _bad(where, field, f"out of range: {v!r}")
    return float(v)


def _check_task(t, i: int, count: int, seen: set) -> None:
    if not isinstance(t, dict):
        raise _bad(f"tasks[{i}]", "(task)", "must be an object")
    tid = t.get("id")
    if not isinstance(tid, str) or not tid or tid in seen:
        raise _bad(f"tasks[{i}]", "id", f"must be a unique non-empty string; got {tid!r}")
    seen.add(tid)
    if not t.keys() <= _TASK:
        raise _bad(tid, sorted(t.keys() - _TASK)[0], "unknown field")
    if "type" in t and not isinstance(t["type"], str):
        raise _bad(tid, "type", "must be a string")
    spec = (t.get("expected") or {}).get("trajectory")
    if spec is not None:
        if not isinstance(spec, dict) or spec.get("match", "strict") not in _MODES:
            raise _bad(tid, "expected.trajectory", "bad trajectory spec")
        for key in ("tools", "forbidden"):
            names = spec.get(key, [])
            if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
                raise _bad(tid, f"expected.trajectory.{key}", "must be a list of tool names")
    trials = t.get("trials")
    if not isinstance(trials, list) or len(trials) != count:
        raise _bad(tid, "trials", f"must be a list of {count} trials")
    for j, tr in enumerate(trials):
        if not isinstance(tr, dict) or not tr.keys() <= _TRIAL:
            raise _bad(tid, f"trials[{j}]", "must be an object of known fields")
        _number(tr.get("score"), tid, f"trials[{j}].score", unit=True)
        if not isinstance(tr.get("fixtureMiss", False), bool):
            raise _bad(tid, f"trials[{j}].fixtureMiss", "must be true or false")
        for key in ("cost", "latencyMs"):
            if key in tr:
                _number(tr[key], tid, f"trials[{j}].{key}")
        calls = tr.get("toolCalls")
        if (spec is not None and calls is None) or (calls is not None and not (
                isinstance(calls, list) and all(isinstance(c, str) for c in calls))):
            raise _bad(tid, f"trials[{j}].toolCalls", "must be a list of tool names (required on a trajectory task)")


def checked_summary(doc: dict) -> dict:
    """The checked peer: every record validated by hand, then :func:`naive_summary`."""
    if not isinstance(doc, dict) or not doc.keys() <= _TOP:
        raise _bad("(document)", "(document)", "must be an object of known fields")
    th = doc.get("thresholds")
    if not isinstance(th, dict) or "passScore" not in th:
        raise _bad("(document)", "thresholds.passScore", "is required")
    _number(th["passScore"], "(document)", "thresholds.passScore", unit=True)
    for key in ("maxCost", "maxLatencyMs"):
        if key in th:
            _number(th[key], "(document)", f"thresholds.{key}")
    block = doc.get("trials", {})
    count = block.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise _bad("(document)", "trials.count", "must be an integer >= 1")
    if block.get("passRule", "mean") not in ("mean", "all", "any"):
        raise _bad("(document)", "trials.passRule", "unknown pass rule")
    tasks = doc.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise _bad("(document)", "tasks", "must be a non-empty list")
    seen: set = set()
    for i, t in enumerate(tasks):
        _check_task(t, i, count, seen)
    return naive_summary(doc)


# --------------------------------------------------------------------------- measurement


def peer_from_file(path: str) -> dict:
    """The peer end to end: the file read with ``json.load``, then its loop."""
    with open(path, encoding="utf-8") as fh:
        return naive_summary(json.load(fh))


def checked_from_file(path: str) -> dict:
    """The checked peer end to end: ``json.load``, the checks, then the loop."""
    with open(path, encoding="utf-8") as fh:
        return checked_summary(json.load(fh))


def evaltk_summary_from_file(path: str):
    """evaltk end to end to the column-wise summary (what a notebook holds), without the JSON document."""
    return summarize_suite(load_suite_run(path))


def evaltk_from_file(path: str) -> dict:
    """evaltk end to end, as ``evaltk suite summarize`` runs it."""
    return summarize_suite(load_suite_run(path)).to_dict()


def evaltk_from_mapping(doc: dict) -> dict:
    return summarize_suite(load_suite_run(doc)).to_dict()


def measure(fn, *args, repeat: int = 1, **kwargs):
    """Best CPU and best wall time of ``repeat`` runs, then the peak resident growth of one more."""
    best_cpu = best_wall = math.inf
    result = None
    for _ in range(repeat):
        result = None  # the previous round's result is freed before the clock starts, not inside it
        gc.collect()
        c0, w0 = time.process_time(), time.perf_counter()
        result = fn(*args, **kwargs)
        best_cpu = min(best_cpu, time.process_time() - c0)
        best_wall = min(best_wall, time.perf_counter() - w0)
    result = None
    gc.collect()
    before = rss_mib()
    reset_peak()
    result = fn(*args, **kwargs)
    peak = peak_mib()
    grow = None if before is None or peak is None else max(peak - before, 0.0)
    return best_cpu, best_wall, grow, result


def where_the_time_goes(path: str, *, repeat: int) -> dict[str, float]:
    """CPU seconds of the steps that read the text: evaltk's nesting screen and Arrow's
    parse (as ``load_suite_run`` runs them), and the peer's ``json.load``."""
    import pyarrow as pa
    import pyarrow.json as pj

    from evaltk import _io

    with open(path, "rb") as fh:
        raw = fh.read()

    def arrow() -> None:
        pj.read_json(pa.py_buffer(raw), read_options=pj.ReadOptions(use_threads=False, block_size=len(raw) + 1),
                     parse_options=pj.ParseOptions(newlines_in_values=True))

    return {"screen": measure(_io.json_depth, raw, repeat=repeat)[0], "arrow": measure(arrow, repeat=repeat)[0],
            "json.load": measure(json.loads, raw, repeat=repeat)[0]}


def table_path(table):
    """The columnar path: a tidy trial table in, the summary out."""
    return summarize_suite(suite_run_from_frame(table, suite="bench", pass_score=0.7, max_cost=1e9,
                                                max_latency_ms=1e9))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 25_000, 50_000, 100_000])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--indent", type=int, default=None, help="write the run files indented (default compact)")
    a = ap.parse_args()
    print(f"suite benchmark: {a.trials} trials per task; best of {a.repeat}; ratios peer / evaltk on CPU "
          f"time; run files {'compact' if a.indent is None else f'indented {a.indent}'} JSON; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    print(PEER_SKIPS)
    print(CHECKED_DOES)
    hdr = (f"{'tasks':>8} {'step':<32} {'cpu s':>7} {'wall s':>7} {'tasks/cpu-s':>12} {'us/task':>8} "
           f"{'peak MiB':>8} {'peer/evaltk':>11} {'checked/evaltk':>14}")
    print(hdr)
    print("-" * len(hdr))
    per_task: dict[str, list[float]] = {}
    ratios: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in a.sizes:
            doc = make_run(size, a.trials)
            path = os.path.join(tmp, f"run-{size}.json")
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(doc, fh, indent=a.indent)
            mb = os.path.getsize(path) / 1e6
            # the mapping rows first; then the parsed document is dropped, so that the rows from the
            # file run in a process holding no parsed run (as the CLI does: a live tree of millions of
            # objects makes every collection of the cyclic garbage collector walk it, slowing whatever
            # allocates many objects, the peer's json.load most)
            mapping = measure(evaltk_from_mapping, doc, repeat=a.repeat)
            peer = measure(naive_summary, doc, repeat=a.repeat)
            checked = measure(checked_summary, doc, repeat=a.repeat)
            from_mapping = json.dumps(mapping[3])
            mapping, peer, checked = (*mapping[:3], None), (*peer[:3], None), (*checked[:3], None)
            del doc
            gc.collect()
            load = measure(load_suite_run, path, repeat=a.repeat)
            run = load[3]
            summ = measure(summarize_suite, run, repeat=a.repeat)
            summary = summ[3]
            todict = measure(summary.to_dict, repeat=a.repeat)
            e2e = measure(evaltk_from_file, path, repeat=a.repeat)
            e2e_summary = measure(evaltk_summary_from_file, path, repeat=a.repeat)
            e2e_summary = (*e2e_summary[:3], None)
            peer_file = measure(peer_from_file, path, repeat=a.repeat)
            checked_file = measure(checked_from_file, path, repeat=a.repeat)
            assert checked_file[3] == peer_file[3]
            table = run.to_frame()
            frame = measure(table_path, table, repeat=a.repeat)
            per_task.setdefault("file end-to-end", []).append(e2e[0] / size)
            per_task.setdefault("summarize", []).append(summ[0] / size)
            # same answers
            p = peer_file[3]
            assert abs(p["aggregateScore"] - summary.aggregate_score) < 1e-9
            assert abs(p["gatedAggregateScore"] - summary.gated_aggregate_score) < 1e-9
            assert e2e[3] == summary.to_dict() and json.dumps(e2e[3]) == from_mapping
            agree = np.mean([x["passed"] == bool(y) for x, y in zip(p["tasks"], summary.task_passed, strict=True)])
            pf, cf = peer_file[0], checked_file[0]
            rows = [("evaltk load_suite_run(file)", load, None, None),
                    ("evaltk summarize_suite", summ, peer[0] / summ[0], None),
                    ("evaltk to_dict (JSON doc)", todict, None, None),
                    ("evaltk end-to-end, file", e2e, pf / e2e[0], cf / e2e[0]),
                    ("evaltk file to EvalSummary", e2e_summary, pf / e2e_summary[0], cf / e2e_summary[0]),
                    ("peer end-to-end, file", peer_file, 1.0, cf / pf),
                    ("checked peer end-to-end, file", checked_file, pf / cf, 1.0),
                    ("evaltk end-to-end, mapping", mapping, peer[0] / mapping[0], checked[0] / mapping[0]),
                    ("evaltk table+summarize", frame, peer[0] / frame[0], checked[0] / frame[0]),
                    ("peer loop, mapping", peer, 1.0, checked[0] / peer[0]),
                    ("checked peer loop, mapping", checked, peer[0] / checked[0], 1.0)]
            ratios.setdefault("file to the JSON document, peer", []).append(pf / e2e[0])
            ratios.setdefault("file to the JSON document, checked peer", []).append(cf / e2e[0])
            ratios.setdefault("file to EvalSummary, peer", []).append(pf / e2e_summary[0])
            ratios.setdefault("file to EvalSummary, checked peer", []).append(cf / e2e_summary[0])
            for name, (cpu, wall, grow, _), ratio, ratio_checked in rows:
                r = "" if ratio is None else f"{ratio:10.1f}x"
                rc = "" if ratio_checked is None else f"{ratio_checked:13.1f}x"
                g = "n/a" if grow is None else f"{grow:8.1f}"
                print(f"{size:>8} {name:<32} {cpu:7.3f} {wall:7.3f} {size / cpu:12,.0f} {1e6 * cpu / size:8.2f} "
                      f"{g:>8} {r:>11} {rc:>14}")
            text = measure(json_text, e2e[3], ensure_ascii=False, allow_nan=False, repeat=a.repeat)[0]
            peer = measure(json.dumps, e2e[3], indent=2, ensure_ascii=False, allow_nan=False, repeat=a.repeat)[0]
            print(f"{'':>8} not in any row above: the summary document as indented JSON text, as "
                  f"`evaltk suite summarize --out` writes it (_io.json_text): {text:.3f} s (CPU); "
                  f"json.dumps(indent=2) {peer:.3f} s, {peer / text:.1f}x")
            parts = where_the_time_goes(path, repeat=a.repeat)
            print(f"{'':>8} of which: nesting screen {parts['screen']:.3f} s, Arrow parse {parts['arrow']:.3f} s "
                  f"(CPU); the peer's json.load {parts['json.load']:.3f} s")
            print(f"{'':>8} run file {mb:.1f} MB; task verdicts agreeing with the peer: {agree:.4%} (the peer "
                  "compares floats without exact decimals); load average "
                  f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if len(a.sizes) > 1:
        for step, v in per_task.items():
            print(f"linearity, {step}: CPU time per task at {a.sizes[-1]:,} tasks / at {a.sizes[0]:,} tasks = "
                  f"{v[-1] / v[0]:.2f} (1.0 = linear)")
    for what, v in ratios.items():
        print(f"end to end from the {what} / evaltk: {min(v):.1f}x-{max(v):.1f}x over the sizes")


if __name__ == "__main__":
    main()
