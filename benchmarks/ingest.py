"""Ingest benchmark: JSONL traces to tables (issue 2 section 8).

Target: at least 50,000 traces/s with about 10 steps per trace, cost linear in size.

For 50k, 100k and 200k synthetic traces (about 10 steps each, 5 % in progress,
half with a domain, a third with step counts, most of which disagree) this prints, per size
and per reader, the wall time, traces per second and peak resident memory.  Each
measurement runs in a fresh process so peak memory belongs to that one reader.

Readers, all measured in the same run:

``evaltk``
    :func:`evaltk.ingest.ingest_traces` on the file (Arrow parse, column-wise checks,
    runs / steps / disagreements / ledger tables).
``naive``
    a per-record reference: ``json.loads`` per line, every field validated in
    Python, rows collected in lists, then ``pandas.DataFrame`` (what one writes
    first; it checks the same contract).
``pandas``
    the peer library: ``pandas.read_json(lines=True)`` then ``explode`` and
    ``json_normalize`` of the steps.  It validates nothing, so it is a floor for
    "just parse it with pandas", not an equivalent.

``cpu s`` is the process CPU time (all threads): on a shared machine wall time depends
on the load, CPU time much less.  Peak memory is the child's high-water mark (VmHWM), reset
to the resident size after the imports (``+MiB``: above that size).

The last lines time ingest with judge answers (CSV, about 16 rows per trace) at the
smallest size, or at ``--answer-sizes`` (e.g. ``100000 1000000``), on one Arrow thread by
default (``--threads``): wall and CPU traces/s, the CPU rate against the smallest size's
(1.00 is flat) and the peak memory of the fresh child (VmHWM, reset after its imports), with what the returned
tables hold and the resident size at the end beside it.  CPU is split into user time (the
code's own work) and system time (mostly the kernel faulting in and zeroing the memory the
child grows into): on a virtual machine whose host backs guest memory lazily, as here,
system time per GiB of fresh memory varies several-fold with what the host has reclaimed,
so each timing prints that cost as a 1 GiB probe measured right after it
(``_memory.touch_fresh_memory``) and the flatness of user time alone.

Usage::

    .venv/bin/python benchmarks/ingest.py            # 50k, 100k, 200k
    .venv/bin/python benchmarks/ingest.py --sizes 20000 40000 --no-naive
    .venv/bin/python benchmarks/ingest.py --sizes 100000 --no-naive --no-pandas \\
        --answer-sizes 100000 1000000 --repeat 2   # the issue-17 goal, two rounds
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _memory import peak_mib, reset_peak, rss_mib, touch_fresh_memory

ACTIONS = ["tap", "type", "scroll", "open_app", "back", "confirm", "buy", "send"]
TASKS = ["Buy a red mug", "Send an email to Bob about Friday", "Book a flight to Oslo",
         "Schedule a meeting with Ana", "Pay the electricity bill", "Play my running playlist",
         "Turn on Bluetooth", "Delete old_notes.txt from Photos"]


def make_lines(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = rng.randint(6, 14)  # about 10 steps
        steps = []
        for j in range(k):
            a = rng.choice(ACTIONS)
            steps.append({"index": j, "action": a,
                          "target": None if rng.random() < 0.1 else f"el_{rng.randint(0, 40)}",
                          "screen": None if rng.random() < 0.1 else f"screen {j}: list of items",
                          "consequential": a in ("buy", "send"),
                          "needs_confirmation": a == "confirm"})
        rec = {"trace_id": f"run-{i:07d}", "task": rng.choice(TASKS),
               "status": "in_progress" if rng.random() < 0.05 else "complete",
               "agent": rng.choice(["ckpt-a", "ckpt-b", "ckpt-c"]), "steps": steps}
        if rng.random() < 0.5:
            rec["domain"] = "shopping"
        if rng.random() < 0.33:
            rec["step_counts"] = {"recorder": k, "agent": k + rng.choice([0, 1, 2])}
        out.append(json.dumps(rec))
    return out


def make_answers(lines: list[str], path: Path, seed: int = 1) -> int:
    rng = random.Random(seed)
    rows = ["trace_id,measure,step,rater,answer,confidence,cost,latency_ms,rater_version"]
    for ln in lines:
        rec = json.loads(ln)
        tid = rec["trace_id"]
        for j in ("judge-a", "judge-b", "judge-c"):
            rows.append(f"{tid},x_task,,{j},{rng.choice(['yes', 'no', 'cannot tell'])},0.8,0.001,900,v1")
            rows.append(f"{tid},x_eff,,{j},{rng.choice(['none', 'a few', 'lots'])},,,,v1")
        for s in rec["steps"]:
            rows.append(f"{tid},x_ctx,{s['index']},judge-a,{rng.choice(['yes', 'no'])},,,,v1")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return len(rows) - 1


# --------------------------------------------------------------------------- readers


def read_evaltk(path: str, answers: str | None = None) -> int:
    from evaltk.ingest import ingest_traces

    ing = ingest_traces(path, answers=answers)
    _HELD.append(ing)  # the worker weighs the returned tables after the clock stops
    return len(ing.runs) + len(ing.steps) + len(ing.answers)


#: What the measured reader returned, kept alive until the worker has weighed it.
_HELD: list = []


def _tables_mib() -> float | None:
    """Bytes the returned tables hold (``memory_usage(deep=True)``), MiB; None for a reader
    that keeps nothing."""
    if not _HELD:
        return None
    ing = _HELD[-1]
    return sum(getattr(ing, t).memory_usage(deep=True).sum() for t in
               ("runs", "steps", "answers", "labels", "step_count_disagreements", "ledger")) / 2**20


def read_naive(path: str, answers: str | None = None) -> int:
    import pandas as pd

    runs, steps, ledger = [], [], []
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                ledger.append((line_no, None, "malformed", str(e)))
                continue
            try:
                if not isinstance(rec, dict):
                    raise ValueError("not an object")
                tid = rec.get("trace_id")
                if not isinstance(tid, str) or not tid:
                    raise ValueError("trace_id")
                if rec.get("status") not in ("complete", "in_progress"):
                    raise ValueError("status")
                if rec["status"] == "in_progress":
                    ledger.append((line_no, tid, "dropped", "in_progress"))
                    continue
                if not isinstance(rec.get("task"), str):
                    raise ValueError("task")
                st = rec.get("steps")
                if not isinstance(st, list):
                    raise ValueError("steps")
                seen = set()
                rows = []
                for s in st:
                    i = s.get("index")
                    if not isinstance(i, int) or isinstance(i, bool) or i < 0 or i in seen:
                        raise ValueError("index")
                    seen.add(i)
                    if not isinstance(s.get("action"), str):
                        raise ValueError("action")
                    for f in ("target", "screen"):
                        if s.get(f) is not None and not isinstance(s[f], str):
                            raise ValueError(f)
                    for f in ("consequential", "needs_confirmation"):
                        if s.get(f) is not None and not isinstance(s[f], bool):
                            raise ValueError(f)
                    rows.append({"trace_id": tid, "index": i, "action": s["action"],
                                 "target": s.get("target"), "screen": s.get("screen"),
                                 "consequential": bool(s.get("consequential")),
                                 "needs_confirmation": bool(s.get("needs_confirmation"))})
            except (ValueError, AttributeError) as e:
                ledger.append((line_no, None, "malformed", str(e)))
                continue
            rows.sort(key=lambda r: r["index"])
            steps.extend(rows)
            runs.append({"trace_id": tid, "task": rec["task"], "domain": rec.get("domain"),
                         "n_steps": len(rows), "agent": rec.get("agent")})
            ledger.append((line_no, tid, "kept", None))
    r = pd.DataFrame(runs)
    s = pd.DataFrame(steps)
    led = pd.DataFrame(ledger, columns=["record", "trace_id", "status", "reason"])
    return len(r) + len(s) + 0 * len(led)


def read_pandas(path: str, answers: str | None = None) -> int:
    import pandas as pd

    df = pd.read_json(path, lines=True)
    ex = df[["trace_id", "steps"]].explode("steps", ignore_index=True).dropna(subset=["steps"])
    steps = pd.json_normalize(ex["steps"].tolist())
    steps.insert(0, "trace_id", ex["trace_id"].to_numpy())
    return len(df) + len(steps)


READERS = {"evaltk": read_evaltk, "naive": read_naive, "pandas": read_pandas}


def worker(reader: str, path: str, answers: str | None, threads: int | None = None) -> None:
    import pandas  # noqa: F401  - import cost is not ingest cost
    import pyarrow

    if threads is not None:  # one core: Arrow's readers and kernels on one thread
        pyarrow.set_cpu_count(threads)
        pyarrow.set_io_thread_count(threads)

    import evaltk.ingest  # noqa: F401

    # the peak of the measured step alone: VmHWM reset to the resident size after the imports
    if not reset_peak():
        raise SystemExit("cannot reset VmHWM (/proc/self/clear_refs): the peak would include the set-up")
    base = rss_mib()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0, c0 = time.perf_counter(), time.process_time()
    n = READERS[reader](path, answers)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    peak, end = _peak_mib(), rss_mib()
    print(json.dumps({"seconds": dt, "cpu": cpu, "peak_mib": peak, "base_mib": base, "rows": n,
                      "end_mib": end, "tables_mib": _tables_mib(), "user": r1.ru_utime - r0.ru_utime,
                      "sys": r1.ru_stime - r0.ru_stime, "faults": r1.ru_minflt - r0.ru_minflt}))


def _peak_mib() -> float:
    """Peak resident memory of this fresh child (VmHWM, :mod:`_memory`; not ``ru_maxrss``)."""
    got = peak_mib()
    if got is None:
        raise SystemExit("no /proc/self/status here: this benchmark measures memory from VmHWM (Linux)")
    return got


def measure(reader: str, path: Path, answers: Path | None = None, threads: int | None = None) -> dict:
    cmd = [sys.executable, __file__, "--worker", reader, str(path)]
    if answers is not None:
        cmd += ["--answers", str(answers)]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "0"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[50_000, 100_000, 200_000])
    ap.add_argument("--no-naive", action="store_true", help="skip the per-record reference")
    ap.add_argument("--no-pandas", action="store_true", help="skip the pandas peer")
    ap.add_argument("--worker", nargs=2, metavar=("READER", "PATH"), help=argparse.SUPPRESS)
    ap.add_argument("--answers", help=argparse.SUPPRESS)
    ap.add_argument("--answer-sizes", type=int, nargs="+", help="trace counts timed with answers "
                    "(default: the smallest size), e.g. --answer-sizes 100000 1000000")
    ap.add_argument("--threads", type=int, default=1, help="Arrow threads in the measured child (default 1)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of the with-answers timings, sizes "
                    "interleaved within each round; the range over rounds is printed (default 1)")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.answers, args.threads)
        return
    readers = ["evaltk"] + ([] if args.no_naive else ["naive"]) + ([] if args.no_pandas else ["pandas"])
    sizes = sorted(args.sizes)
    print(f"generating {sizes[-1]:,} synthetic traces ...", flush=True)
    lines = make_lines(sizes[-1])
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for n in sizes:
            p = Path(tmp) / f"traces_{n}.jsonl"
            p.write_text("\n".join(lines[:n]) + "\n", encoding="utf-8")
            files[n] = p
        n_steps = sum(ln.count('"index"') for ln in lines[:sizes[0]]) / sizes[0]
        print(f"{n_steps:.1f} steps per trace on average; python {sys.version.split()[0]}, "
              f"{os.cpu_count()} CPUs\n")
        head = (f"{'traces':>8}  {'reader':<7} {'seconds':>8} {'traces/s':>10} {'cpu s':>7} "
                f"{'traces/cpu-s':>12} {'peak MiB':>9} {'+MiB':>6}  time / evaltk's (wall, cpu)")
        print(head)
        print("-" * len(head))
        per_trace, per_trace_cpu = [], []
        for n in sizes:
            res = {r: measure(r, files[n]) for r in readers}
            base, base_cpu = res["evaltk"]["seconds"], res["evaltk"]["cpu"]
            per_trace.append(base / n)
            per_trace_cpu.append(base_cpu / n)
            for r in readers:
                s, c = res[r]["seconds"], res[r]["cpu"]
                ratio = "" if r == "evaltk" else f"{s / base:5.1f}x, {c / base_cpu:5.1f}x"
                grow = res[r]["peak_mib"] - res[r]["base_mib"]
                print(f"{n:>8,}  {r:<7} {s:8.2f} {n / s:10,.0f} {c:7.2f} {n / c:12,.0f} "
                      f"{res[r]['peak_mib']:9.0f} {grow:6.0f}  {ratio}")
        if len(sizes) > 1:
            print(f"\nlinearity, time per trace at {sizes[-1]:,} / at {sizes[0]:,} (1.00 is linear): "
                  f"wall {per_trace[-1] / per_trace[0]:.2f}, cpu {per_trace_cpu[-1] / per_trace_cpu[0]:.2f}")
        answer_sizes = sorted(args.answer_sizes or [sizes[0]])
        print(f"\nwith answers (CSV, about 16 rows per trace), Arrow on {args.threads} thread(s); "
              "goal: >= 80,000 traces/s at 10^6 traces on one core, flat from 10^5, peak < 2 GiB")
        answers: dict[int, tuple[Path, int]] = {}
        for n in answer_sizes:
            if n not in files:
                p = Path(tmp) / f"traces_{n}.jsonl"
                p.write_text("\n".join(make_lines(n)) + "\n", encoding="utf-8")
                files[n] = p
            with open(files[n], encoding="utf-8") as fh:
                ans = Path(tmp) / f"answers_{n}.csv"
                answers[n] = ans, make_answers([ln for ln in fh if ln.strip()], ans)
        rates: dict[int, list[float]] = {n: [] for n in answer_sizes}
        peaks: dict[int, list[float]] = {n: [] for n in answer_sizes}
        user_rates: dict[int, list[float]] = {n: [] for n in answer_sizes}
        for r in range(args.repeat):
            first = None
            print(f"  round {r + 1} (load average {os.getloadavg()[0]:.2f} at its start)")
            for n in answer_sizes:
                ans, n_ans = answers[n]
                with_ans = measure("evaltk", files[n], ans, threads=args.threads)
                # the VM's cost of fresh memory, probed right after the child (a probe before it would
                # warm memory a small child then reuses and a large one mostly does not: _memory.py)
                fresh = touch_fresh_memory(1024)
                rate, cpu_rate = n / with_ans["seconds"], n / with_ans["cpu"]
                first = first or cpu_rate
                rates[n].append(cpu_rate)
                peaks[n].append(with_ans["peak_mib"])
                print(f"  {n:>9,} traces + {n_ans:>11,} answer rows: {with_ans['seconds']:7.2f} s wall "
                      f"({rate:8,.0f} traces/s), {with_ans['cpu']:7.2f} s cpu ({cpu_rate:8,.0f} traces/cpu-s, "
                      f"{cpu_rate / first:4.2f} of the smallest size's rate), peak {with_ans['peak_mib']:,.0f} MiB "
                      f"(VmHWM of a fresh child, reset after imports)")
                print(f"  {'':>9}   user {with_ans['user']:.2f} s ({n / with_ans['user']:,.0f} traces/user-s), "
                      f"system {with_ans['sys']:.2f} s ({with_ans['faults']:,} page faults); a 1 GiB probe of fresh "
                      f"memory right after: {fresh:.2f} s of system CPU per GiB")
                user_rates[n].append(n / with_ans["user"])
                print(f"  {'':>9}   the returned tables hold {with_ans['tables_mib']:,.0f} MiB "
                      f"(memory_usage(deep=True)); resident at the end {with_ans['end_mib']:,.0f} MiB, "
                      f"at the start {with_ans['base_mib']:,.0f} MiB")
        if args.repeat > 1:
            lo = answer_sizes[0]
            for n in answer_sizes:
                flat = [a / b for a, b in zip(rates[n], rates[lo], strict=True)]
                print(f"  {n:>9,} traces over {args.repeat} rounds: {min(rates[n]):,.0f}-{max(rates[n]):,.0f} "
                      f"traces/cpu-s ({min(flat):.2f}-{max(flat):.2f} of the smallest size's, same round), "
                      f"peak {min(peaks[n]):,.0f}-{max(peaks[n]):,.0f} MiB")
                uflat = [a / b for a, b in zip(user_rates[n], user_rates[lo], strict=True)]
                print(f"  {'':>9}   user CPU alone: {min(user_rates[n]):,.0f}-{max(user_rates[n]):,.0f} "
                      f"traces/user-s ({min(uflat):.2f}-{max(uflat):.2f} of the smallest size's)")
        print(f"  load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
