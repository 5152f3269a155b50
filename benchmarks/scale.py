"""Out-of-core and distributed scoring: DuckDB and a 2-worker LocalCluster against in-memory pandas.

Generates a synthetic trace store (about 10 steps per trace) as hive-partitioned
Parquet (``traces/week=.../part-N.parquet`` with co-partitioned ``answers/`` and
``labels/``), then scores *and* summarises it

(a) with ``engine="duckdb"`` under a memory limit (default 4GB; DuckDB does the id
    check, the writes' read-back and every summary in SQL),
(b) with ``engine=Client`` on a ``LocalCluster`` of 2 single-threaded worker processes,
(c) in memory: ``score_traces`` on the whole store at the largest size asked for
    (``--pandas-max``), then ``ScoreMatrix.summary`` and the calibration tables.

Every measurement runs in a fresh subprocess; a sampler thread records the peak RSS
of that process *and all its children* (the Dask workers), every 0.1 s.  Printed
per run: traces per second, traces per second per core used, CPU seconds of the
process tree, peak memory; then the ratios measured in this run.  The out-of-core
runs also write the score matrix (Parquet); the in-memory run does not.

The engines are run at every size in ``--sizes`` so the peak-memory trend is
measured; the issue's size is 10 million traces (``--sizes 1000000,10000000``).

Usage::

    python benchmarks/scale.py                          # sizes 100000,1000000 (default)
    python benchmarks/scale.py --sizes 20000,200000     # quick
    python benchmarks/scale.py --sizes 1000000,10000000 --pandas-max 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ACTIONS = pa.array(["tap", "type", "scroll", "open", "buy", "send", "confirm", "back"])
TASKS = pa.array([f"Buy item {i} in the shop" for i in range(200)] + [f"Email report {i} to Bob" for i in range(100)])
AGENTS = pa.array(["agent-v1", "agent-v2", "agent-v3"])
TARGETS = pa.array([f"el{j}" for j in range(40)] + [""])
SCREENS = pa.array([f"s{j}" for j in range(40)] + [""])


def _ids(prefix: str, a: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(prefix, pc.cast(pa.array(a), pa.string()), "")


def make_partition(lo: int, hi: int, seed: int) -> tuple[pa.Table, pa.Table, pa.Table]:
    """Traces lo..hi-1 (nested steps), their judge answers and a sparse sample of human labels."""
    rng = np.random.default_rng(seed)
    n = hi - lo
    tid = _ids("t", np.arange(lo, hi) + 10_000_000_000)
    k = rng.integers(6, 15, n)
    offsets = np.r_[0, np.cumsum(k)].astype(np.int32)
    m = int(offsets[-1])
    idx = np.arange(m) - np.repeat(offsets[:-1], k)
    risky = np.repeat(rng.random(n) < 0.5, k)
    cons = risky & (rng.random(m) < 0.15)
    conf = ~cons & (rng.random(m) < 0.2)
    act = np.where(cons, 4 + rng.integers(0, 2, m), rng.integers(0, 4, m))
    act = np.where(conf, 6, act)
    steps = pa.StructArray.from_arrays(
        [pa.array(idx, pa.int64()), ACTIONS.take(pa.array(act)),
         TARGETS.take(pa.array(np.where(rng.random(m) < 0.05, 40, idx % 40))),
         SCREENS.take(pa.array(np.where(rng.random(m) < 0.05, 40, idx % 40))),
         pa.array(cons), pa.array(conf)],
        names=["index", "action", "target", "screen", "consequential", "needs_confirmation"])
    traces = pa.table({
        "trace_id": tid,
        "task": TASKS.take(pa.array(rng.integers(0, len(TASKS), n))),
        "status": pa.array(np.full(n, "complete")),
        "agent": AGENTS.take(pa.array(rng.integers(0, 3, n))),
        "steps": pa.ListArray.from_arrays(pa.array(offsets), steps),
    })
    words3 = pa.array(["yes", "no", "cannot_tell"])
    words4 = pa.array(["none", "a_few", "lots", "cannot_tell"])
    parts = []
    for rater in ("j1", "j2"):
        parts.append(pa.table({"trace_id": tid, "measure": pa.array(np.full(n, "x_task")),
                               "step": pa.nulls(n, pa.int64()), "rater": pa.array(np.full(n, rater)),
                               "answer": words3.take(pa.array(rng.choice(3, n, p=[0.6, 0.3, 0.1])))}))
    parts.append(pa.table({"trace_id": tid, "measure": pa.array(np.full(n, "x_eff")),
                           "step": pa.nulls(n, pa.int64()), "rater": pa.array(np.full(n, "j1")),
                           "answer": words4.take(pa.array(rng.choice(4, n, p=[0.5, 0.3, 0.1, 0.1])))}))
    # x_ctx on the first two steps of each trace
    for s in (0, 1):
        parts.append(pa.table({"trace_id": tid, "measure": pa.array(np.full(n, "x_ctx")),
                               "step": pa.array(np.full(n, s), pa.int64()), "rater": pa.array(np.full(n, "j1")),
                               "answer": words3.take(pa.array(rng.choice(3, n, p=[0.7, 0.2, 0.1])))}))
    answers = pa.concat_tables(parts)
    lab = np.flatnonzero(rng.random(n) < 0.02)
    labels = pa.table({"trace_id": tid.take(pa.array(lab)), "measure": pa.array(np.full(lab.size, "x_task")),
                       "step": pa.nulls(lab.size, pa.int64()), "rater": pa.array(np.full(lab.size, "h1")),
                       "answer": words3.take(pa.array(rng.choice(3, lab.size, p=[0.6, 0.35, 0.05])))})
    return traces, answers, labels


def generate(root: Path, n: int, partition_size: int) -> float:
    t0 = time.perf_counter()
    for i, lo in enumerate(range(0, n, partition_size)):
        hi = min(n, lo + partition_size)
        tr, an, lb = make_partition(lo, hi, seed=i)
        week = f"week=2026-W{40 + i % 4:02d}"
        for name, t in (("traces", tr), ("answers", an), ("labels", lb)):
            p = root / name / week / f"part-{i:05d}.parquet"
            p.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(t, p)
    return time.perf_counter() - t0


def concat_store(root: Path, dest: Path) -> None:
    """One Parquet file per table for the in-memory path (not timed)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("traces", "answers", "labels"):
        files = sorted((root / name).rglob("*.parquet"))
        writer = None
        for f in files:
            t = pq.read_table(f)
            if writer is None:
                writer = pq.ParquetWriter(dest / f"{name}.parquet", t.schema)
            writer.write_table(t)
        writer.close()


# --------------------------------------------------------------------------- measurement (child process)


class Peak:
    """Peak RSS of this process plus all its descendants, sampled every 0.1 s."""

    def __init__(self) -> None:
        import psutil

        self.proc = psutil.Process()
        self.peak = 0
        self.cpu_children: dict[int, float] = {}
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        import psutil

        total = 0
        for p in [self.proc, *self.proc.children(recursive=True)]:
            try:
                total += p.memory_info().rss
                if p.pid != self.proc.pid:
                    c = p.cpu_times()
                    self.cpu_children[p.pid] = c.user + c.system
            except psutil.Error:
                pass
        self.peak = max(self.peak, total)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            time.sleep(0.1)

    def __enter__(self) -> Peak:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._sample()
        self._stop.set()
        self._t.join()

    def cpu_seconds(self) -> float:
        c = self.proc.cpu_times()
        return c.user + c.system + sum(self.cpu_children.values())


def child(args: argparse.Namespace) -> None:
    store = Path(args.store)
    out = Path(args.out)
    result: dict[str, object] = {"engine": args.engine, "n": args.n}
    if args.engine == "pandas":
        from evaltk.scoring import score_traces
        from evaltk.stats import calibration_table

        with Peak() as pk:
            t0 = time.perf_counter()
            m = score_traces(store / "traces.parquet", store / "answers.parquet", store / "labels.parquet")
            m.summary()
            m.summary(tier="human")
            for meas, cats in (("x_task", (0.0, 1.0)), ("x_eff", (0.0, 0.5, 1.0))):
                calibration_table(m.frame, meas, categories=cats)
            wall = time.perf_counter() - t0
        result.update(wall=wall, peak=pk.peak, cpu=pk.cpu_seconds(), cores=1, runs=len(m.runs))
    elif args.engine == "duckdb-sql":
        from evaltk.scale import summarize_dataset

        with Peak() as pk:
            t0 = time.perf_counter()
            s = summarize_dataset(out, engine="duckdb", memory_limit=args.memory_limit, threads=1,
                                  temp_directory=out.parent / "spill")
            wall = time.perf_counter() - t0
        result.update(wall=wall, peak=pk.peak, cpu=pk.cpu_seconds(), cores=1, runs=s.n_runs)
    elif args.engine == "duckdb":
        from evaltk.scale import score_dataset

        with Peak() as pk:
            t0 = time.perf_counter()
            r = score_dataset(store / "traces", store / "answers", store / "labels", out=out, engine="duckdb",
                              memory_limit=args.memory_limit, threads=1, temp_directory=out.parent / "spill")
            wall = time.perf_counter() - t0
        result.update(wall=wall, peak=pk.peak, cpu=pk.cpu_seconds(), cores=1, runs=r.summary.n_runs)
    else:
        from distributed import Client, LocalCluster

        from evaltk.scale import score_dataset

        with Peak() as pk:
            t_start = time.perf_counter()
            cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                   memory_limit=args.worker_memory, dashboard_address=None)
            client = Client(cluster)
            startup = time.perf_counter() - t_start
            t0 = time.perf_counter()
            r = score_dataset(store / "traces", store / "answers", store / "labels", out=out, engine=client)
            wall = time.perf_counter() - t0
            pk._sample()
            cpu = pk.cpu_seconds()
            client.close()
            cluster.close()
        result.update(wall=wall, startup=startup, peak=pk.peak, cpu=cpu, cores=args.workers,
                      runs=r.summary.n_runs)
    print(json.dumps(result))


def run_child(engine: str, n: int, store: Path, out: Path, args: argparse.Namespace) -> dict[str, object]:
    cmd = [sys.executable, __file__, "--child", engine, "--n", str(n), "--store", str(store), "--out", str(out),
           "--memory-limit", args.memory_limit, "--workers", str(args.workers), "--worker-memory",
           args.worker_memory]
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-4000:])
        raise SystemExit(f"{engine} at {n} traces failed (exit {p.returncode})")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,1000000", help="comma-separated store sizes (traces)")
    ap.add_argument("--partition-size", type=int, default=100_000, help="traces per Parquet file")
    ap.add_argument("--pandas-max", type=int, default=1_000_000,
                    help="largest size scored in memory (the in-memory path must fit in RAM)")
    ap.add_argument("--memory-limit", default="4GB", help="DuckDB memory limit")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--worker-memory", default="4GB", help="memory limit of each Dask worker")
    ap.add_argument("--engines", default="pandas,duckdb,dask", help="engines to run (pandas only up to --pandas-max)")
    ap.add_argument("--workdir", default=None, help="where the stores go (default: a temporary folder)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--store", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.engine = args.child
        child(args)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="evaltk-scale-"))
    print(f"evaltk scale benchmark: sizes {sizes}, {args.partition_size} traces per partition, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    rows = []
    try:
        for n in sizes:
            store = work / f"store-{n}"
            g = generate(store, n, args.partition_size)
            print(f"\n{n:,} traces: generated {len(list((store / 'traces').rglob('*.parquet')))} partitions "
                  f"in {g:.1f} s")
            wanted = args.engines.split(",")
            engines = [e for e in ("duckdb", "dask") if e in wanted]
            if n <= args.pandas_max and "pandas" in wanted:
                concat_store(store, work / f"single-{n}")
                engines.insert(0, "pandas")
            for e in engines:
                src = work / f"single-{n}" if e == "pandas" else store
                out = work / f"out-{n}-{e}"
                r = run_child(e, n, src, out, args)
                q = run_child("duckdb-sql", n, src, out, args) if e == "duckdb" else None
                assert r["runs"] == n, r
                r["rate"] = n / r["wall"]
                r["rate_core"] = r["rate"] / r["cores"]
                r["rate_cpu"] = n / r["cpu"]
                rows.append(r)
                extra = f", cluster start {r['startup']:.1f} s" if "startup" in r else ""
                print(f"  {e:<7} {r['wall']:8.1f} s  {r['rate']:10,.0f} traces/s  "
                      f"{r['rate_core']:10,.0f} traces/s/core ({r['cores']} cores)  "
                      f"{r['rate_cpu']:10,.0f} traces/CPU-s  peak {r['peak'] / 2**30:6.2f} GiB{extra}")
                if q is not None:  # the SQL summary phase alone, in a fresh process, on the written dataset
                    print(f"          of which the SQL summary over the written dataset, run alone: "
                          f"{q['wall']:.1f} s, peak {q['peak'] / 2**30:.2f} GiB")
                shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(work / f"single-{n}", ignore_errors=True)
            shutil.rmtree(store, ignore_errors=True)
        print("\nratios measured in this run (in-memory pandas = 1):")
        for n in sizes:
            base = next((r for r in rows if r["n"] == n and r["engine"] == "pandas"), None)
            if base is None:
                continue
            for r in rows:
                if r["n"] == n and r["engine"] != "pandas":
                    print(f"  {n:>10,} {r['engine']:<7} per-core throughput x{r['rate_core'] / base['rate_core']:.2f}, "
                          f"per-CPU-second x{r['rate_cpu'] / base['rate_cpu']:.2f}, "
                          f"peak memory x{r['peak'] / base['peak']:.2f}")
        for e in ("duckdb", "dask"):
            pk = [(r["n"], r["peak"]) for r in rows if r["engine"] == e]
            if len(pk) > 1:
                print(f"  {e:<7} peak memory {pk[0][0]:,} -> {pk[-1][0]:,} traces: "
                      f"{pk[0][1] / 2**30:.2f} -> {pk[-1][1] / 2**30:.2f} GiB (x{pk[-1][1] / pk[0][1]:.2f})")
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
