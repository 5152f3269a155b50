"""Out-of-core and distributed scoring: DuckDB and a 2-worker LocalCluster against in-memory pandas.

Generates a synthetic trace store (about 10 steps per trace) as hive-partitioned
Parquet (``traces/week=.../part-N.parquet`` with co-partitioned ``answers/`` and
``labels/``), then scores *and* summarises it

(a) with ``engine="duckdb"`` under a memory limit (default 4GB; DuckDB does the id
    check, the shuffle of shared answers and every summary in SQL; partitions are scored in
    ``--workers`` worker processes),
(b) with ``engine=Client`` on a ``LocalCluster`` of 2 single-threaded worker processes,
(c) in memory: ``score_traces`` on the whole store at the largest size asked for
    (``--pandas-max``), then ``ScoreMatrix.summary`` and the calibration tables.

Every measurement runs in a fresh subprocess; a sampler thread records the peak RSS
of that process *and all its children* (the DuckDB engine's worker processes, the Dask
workers), every 0.1 s.  Printed per run: wall and CPU seconds of the process tree,
CPU / (cores x wall) (1.00 = every core busy the whole time), traces per second, per
core used and per CPU-second (and per CPU-second of the child's whole process tree as the
kernel reaped it, ``RUSAGE_CHILDREN``: a check on the sampled figure, with its system time,
which on a VM that backs memory lazily is mostly first touches of memory: docs/traces.md), peak tree RSS, the largest process's VmHWM, the RSS
slope per partition (least squares over the tree's RSS sampled each time a partition is
logged as scored: over the whole run after the first partition, and after warm-up, over the
last three quarters of the partitions, with the driver process's own slope), on the DuckDB
engine each worker's own slopes (``ScoredDataset.memory["kept"]``: its resident size right
after it last handed freed memory back, the memory it carries from one partition to the next,
and its resident size once each partition is done) and the load average before
and after the run; then
the ratios measured in this run.  The out-of-core
runs also write the score matrix (Parquet); the in-memory run does not.

The engines are run at every size in ``--sizes`` so the peak-memory trend is
measured; the issue's size is 10 million traces (``--sizes 1000000,10000000``).

Usage::

    python benchmarks/scale.py                          # sizes 100000,1000000 (default)
    python benchmarks/scale.py --sizes 20000,200000     # quick
    python benchmarks/scale.py --sizes 1000000,10000000 --pandas-max 1000000
    python benchmarks/scale.py --sizes 10000000 --workdir /tmp/w --generate-only   # write the store once
    python benchmarks/scale.py --sizes 10000000 --workdir /tmp/w --pandas-max 0 --no-sql-alone  # reuse it
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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
    """Write the store (reused when ``root/_generated.json`` says it holds the same size)."""
    done = root / "_generated.json"
    want = {"n": n, "partition_size": partition_size}
    if done.exists() and json.loads(done.read_text()) == want:
        return 0.0
    shutil.rmtree(root, ignore_errors=True)
    t0 = time.perf_counter()
    for i, lo in enumerate(range(0, n, partition_size)):
        hi = min(n, lo + partition_size)
        tr, an, lb = make_partition(lo, hi, seed=i)
        week = f"week=2026-W{40 + i % 4:02d}"
        for name, t in (("traces", tr), ("answers", an), ("labels", lb)):
            p = root / name / week / f"part-{i:05d}.parquet"
            p.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(t, p)
    # the same answers, not co-partitioned: one folder of files in another order (a warehouse export)
    files = sorted((root / "answers").rglob("*.parquet"))
    shared = root / "answers_shared"
    shared.mkdir()
    for j in range(max(1, len(files) // 2)):
        t = pa.concat_tables([pq.read_table(f) for f in files[j::max(1, len(files) // 2)]])
        pq.write_table(t.take(pa.array(np.random.default_rng(j).permutation(len(t)))), shared / f"export-{j}.parquet")
    done.write_text(json.dumps(want))
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
        self.hwm_children: dict[int, int] = {}
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
                    self.hwm_children[p.pid] = vm_hwm(p.pid)
            except (psutil.Error, OSError):
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


def vm_hwm(pid: int | str = "self") -> int:
    """Peak resident set of one process (VmHWM in /proc/<pid>/status), bytes."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _worker_hwm(dask_worker: object = None) -> int:  # runs on each Dask worker
    return vm_hwm()


class Timeline:
    """RSS of the process tree each time ``evaltk.scale`` logs a partition scored: the RSS timeline
    (the tree's, and this process's own: the driver, with the Dask scheduler and nannies)."""

    def __init__(self, peak: Peak) -> None:
        import logging

        self.peak = peak
        self.points: list[tuple[int, float]] = []
        self.driver: list[float] = []
        outer = self

        class H(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                if "scored" in record.getMessage():
                    outer.points.append((len(outer.points) + 1, outer.tree_rss() / 2**20))
                    outer.driver.append(outer.peak.proc.memory_info().rss / 2**20)

        self.handler = H()
        lg = logging.getLogger("evaltk.scale")
        lg.setLevel(logging.INFO)
        lg.addHandler(self.handler)

    def tree_rss(self) -> int:
        import psutil

        total = 0
        for p in [self.peak.proc, *self.peak.proc.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        return total

    def slopes(self) -> dict[str, float | int]:
        """MiB per partition, least squares: ``whole`` over partitions 2..N (the first is the
        warm-up of every run), ``warm`` over the last three quarters (partitions N/4+1..N: after the
        workers' first partitions, imports, allocator growth), ``driver`` this process's own over
        the last three quarters."""
        k = _warm_start(len(self.points))
        return {"whole": _fit(self.points[1:]), "warm": _fit(self.points[k:]), "warm_from": k + 1,
                "driver": _fit([(i + 1, m) for i, m in enumerate(self.driver)][k:])}


def _warm_start(n: int) -> int:
    """Where warm-up ends among ``n`` partitions: the slopes after it are over the last three quarters."""
    return n // 4


def _fit(pts: list[tuple[float, float]]) -> float:
    """Least-squares slope of ``(x, MiB)`` points; NaN for fewer than two."""
    if len(pts) < 2:
        return float("nan")
    x = np.array([p[0] for p in pts], float)
    return float(np.polyfit(x, np.array([p[1] for p in pts], float), 1)[0])


def child(args: argparse.Namespace) -> None:
    store = Path(args.store)
    out = Path(args.out)
    answers = store / args.answers_dir
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
    elif args.engine == "serial":  # score_dataset's own pandas engine: the partitions one after another here
        from evaltk.scale import score_dataset

        with Peak() as pk:
            tl = Timeline(pk)
            t0 = time.perf_counter()
            r = score_dataset(store / "traces", answers, store / "labels", out=out, engine="pandas")
            wall = time.perf_counter() - t0
            pk._sample()
            hwm = vm_hwm()
        result.update(wall=wall, peak=pk.peak, cpu=pk.cpu_seconds(), cores=1, runs=r.summary.n_runs,
                      hwm=hwm, **_slopes(tl))
    elif args.engine == "duckdb":
        from evaltk.scale import score_dataset

        with Peak() as pk:
            tl = Timeline(pk)
            t0 = time.perf_counter()
            r = score_dataset(store / "traces", answers, store / "labels", out=out, engine="duckdb",
                              memory_limit=args.memory_limit, threads=1, temp_directory=out.parent / "spill",
                              n_workers=args.workers)
            wall = time.perf_counter() - t0
            pk._sample()
            hwm = max([vm_hwm(), *pk.hwm_children.values()])
        result.update(wall=wall, peak=pk.peak, cpu=pk.cpu_seconds(), cores=args.workers, runs=r.summary.n_runs,
                      hwm=hwm, **_slopes(tl), **_kept_slopes(r.memory.get("kept", ())))
    else:
        from distributed import Client, LocalCluster

        from evaltk.scale import score_dataset

        with Peak() as pk:
            t_start = time.perf_counter()
            # as evaltk's own LocalCluster (evaltk.scale.WORKER_CONFIG, through the nannies: a restarted
            # worker keeps it): the workers' profiler off
            # and, unless --dask-malloc-trim, without Dask's MALLOC_TRIM_THRESHOLD_ (evaltk.scale.nanny_config)
            import dask

            from evaltk.scale import nanny_config

            with dask.config.set({} if args.dask_malloc_trim else nanny_config()):
                cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                       memory_limit=args.worker_memory, dashboard_address=None,
                                       config={"distributed.worker.profile.enabled": bool(args.dask_profile)})
            client = Client(cluster)
            startup = time.perf_counter() - t_start
            tl = Timeline(pk)
            t0 = time.perf_counter()
            r = score_dataset(store / "traces", answers, store / "labels", out=out, engine=client)
            wall = time.perf_counter() - t0
            pk._sample()
            cpu = pk.cpu_seconds()
            hwm = max(client.run(_worker_hwm).values())
            client.close()
            cluster.close()
        result.update(wall=wall, startup=startup, peak=pk.peak, cpu=cpu, cores=args.workers,
                      runs=r.summary.n_runs, hwm=hwm, **_slopes(tl))
    print(json.dumps(result))


def _kept_slopes(kept: object) -> dict[str, object]:
    """Each worker's own slopes, MiB per partition it scored, least squares over the last three
    quarters of its partitions (after warm-up, as :meth:`Timeline.slopes`), for the workers that
    scored at least 8 (a companion process scores one or two), from ``ScoredDataset.memory
    ["kept"]``: ``floor``, its resident size right after it last handed freed memory back (what it
    carries from one partition to the next: this grows when scoring leaks), and ``rss``, its
    resident size once each partition is done (a sawtooth above the floor: the release runs once
    the process has grown by a quarter, at least 256 MiB).  The tree's sampled RSS also counts
    each worker's working set wherever in its partition the sample falls."""
    by_pid: dict[int, list[tuple[float, float]]] = {}
    for k in kept:  # type: ignore[attr-defined]
        by_pid.setdefault(k.pid, []).append((k.floor / 2**20, k.rss / 2**20))
    out = {}
    for pid, pts in by_pid.items():
        if len(pts) >= 8:
            q = _warm_start(len(pts))
            floor, rss = (np.array([p[i] for p in pts]) for i in (0, 1))
            out[pid] = {"n": len(pts), "floor_slope": _fit(list(enumerate(floor.tolist()))[q:]),
                        "rss_slope": _fit(list(enumerate(rss.tolist()))[q:]), "floor_first": floor[q],
                        "floor_last": floor[-1], "releases": int((np.diff(floor[q:]) != 0).sum()),
                        "rss_max": float(rss.max())}
    return {"kept": out} if out else {}


def _slopes(tl: Timeline) -> dict[str, object]:
    sl = tl.slopes()
    return {"slope": sl["whole"], "slope_warm": sl["warm"], "warm_from": sl["warm_from"],
            "slope_driver": sl["driver"], "timeline": tl.points, "driver": tl.driver}


def run_child(engine: str, n: int, store: Path, out: Path, args: argparse.Namespace) -> dict[str, object]:
    cmd = [sys.executable, __file__, "--child", engine, "--n", str(n), "--store", str(store), "--out", str(out),
           "--memory-limit", args.memory_limit, "--workers", str(args.workers), "--worker-memory",
           args.worker_memory, "--answers-dir", getattr(args, "answers_dir", "answers"),
           *(["--dask-profile"] if args.dask_profile else []),
           *(["--dask-malloc-trim"] if args.dask_malloc_trim else [])]
    load0 = os.getloadavg()[0]
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    if args.release_always:  # every worker hands freed memory back after every partition
        from evaltk._io import RELEASE_ENV

        env[RELEASE_ENV] = "always"
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-4000:])
        raise SystemExit(f"{engine} at {n} traces failed (exit {p.returncode})")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    # the whole child process tree as the kernel reaped it (every process waited for by its parent):
    # a check on the sampled CPU, which misses what a process spends after its last 0.1 s sample
    r.update(load0=load0, load1=os.getloadavg()[0],
             cpu_reaped=(ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime),
             sys_reaped=ru1.ru_stime - ru0.ru_stime)
    return r


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg()) + " (1/5/15 min)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,1000000", help="comma-separated store sizes (traces)")
    ap.add_argument("--partition-size", type=int, default=100_000, help="traces per Parquet file")
    ap.add_argument("--pandas-max", type=int, default=1_000_000,
                    help="largest size scored in memory (the in-memory path must fit in RAM)")
    ap.add_argument("--memory-limit", default="4GB", help="DuckDB memory limit")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--worker-memory", default="4GB", help="memory limit of each Dask worker")
    ap.add_argument("--engines", default="pandas,duckdb,dask",
                    help="engines to run (pandas only up to --pandas-max; also `serial`: score_dataset's pandas "
                         "engine, one process, so its CPU is exactly this process's)")
    ap.add_argument("--workdir", default=None, help="where the stores go (default: a temporary folder)")
    ap.add_argument("--layouts", default="co,shared",
                    help="answer layouts: co (a file beside each trace file), shared (one folder of other files)")
    ap.add_argument("--answers-dir", default="answers", help=argparse.SUPPRESS)
    ap.add_argument("--sql-alone", action=argparse.BooleanOptionalAction, default=True,
                    help="also time DuckDB's SQL summary alone on the written dataset")
    ap.add_argument("--dask-profile", action="store_true",
                    help="keep the Dask workers' statistical profiler on (Dask's default; evaltk's own "
                         "LocalCluster and docs/scale.md's `dask worker` turn it off)")
    ap.add_argument("--dask-malloc-trim", action="store_true",
                    help="let the Dask nannies set MALLOC_TRIM_THRESHOLD_=65536 in the workers (Dask's default; "
                         "evaltk's own LocalCluster does not: evaltk.scale.NANNY_ENVIRON)")
    ap.add_argument("--release-always", action="store_true",
                    help="workers hand freed memory back after every partition (EVALTK_RELEASE_MEMORY=always): "
                         "their resident size between partitions is then what they keep, so its slope is the "
                         "leak, without the sawtooth of the release that runs once a process has grown by 256 MiB; "
                         "costs CPU, so time such a run apart")
    ap.add_argument("--generate-only", action="store_true",
                    help="write the stores into --workdir and stop (a later run with that --workdir reuses them)")
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
          f"{os.cpu_count()} CPUs, Dask workers' profiler {'on' if args.dask_profile else 'off'}, "
          f"load average {_load()}", flush=True)
    rows = []
    try:
        for n in sizes:
            store = work / f"store-{n}"
            g = generate(store, n, args.partition_size)
            print(f"\n{n:,} traces: {len(list((store / 'traces').rglob('*.parquet')))} partitions "
                  + (f"generated in {g:.1f} s" if g else "(store reused)") + f", load average {_load()}", flush=True)
            if args.generate_only:
                continue
            wanted = args.engines.split(",")
            engines = [e for e in ("serial", "duckdb", "dask") if e in wanted]
            if n <= args.pandas_max and "pandas" in wanted:
                concat_store(store, work / f"single-{n}")
                engines.insert(0, "pandas")
            layouts = args.layouts.split(",")
            for e in engines:
                for layout in (["co"] if e == "pandas" else layouts):
                    args.answers_dir = "answers" if layout == "co" else "answers_shared"
                    src = work / f"single-{n}" if e == "pandas" else store
                    out = work / f"out-{n}-{e}-{layout}"
                    r = run_child(e, n, src, out, args)
                    q = (run_child("duckdb-sql", n, src, out, args)
                         if e == "duckdb" and layout == "co" and args.sql_alone else None)
                    assert r["runs"] == n, r
                    r["layout"] = layout
                    r["rate"] = n / r["wall"]
                    r["rate_core"] = r["rate"] / r["cores"]
                    r["rate_cpu"] = n / r["cpu"]
                    rows.append(r)
                    extra = f", cluster start {r['startup']:.1f} s" if "startup" in r else ""
                    hwm = f", VmHWM {r['hwm'] / 2**30:.2f} GiB" if "hwm" in r else ""
                    slope = (f", RSS slope {r['slope']:+.2f} MiB/partition (whole run, partitions 2-{len(r['timeline'])}), "
                             f"{r['slope_warm']:+.2f} after warm-up (partitions {r['warm_from']}-{len(r['timeline'])}; "
                             f"driver process alone {r['slope_driver']:+.2f})" if "slope" in r else "")
                    if e == "duckdb":  # the whole run's bound: peak tree RSS against it
                        from evaltk.scale._scale import _size_bytes

                        extra += f", {r['peak'] / _size_bytes(args.memory_limit):.2f} x memory_limit={args.memory_limit}"
                    print(f"  {e:<7} {layout:<6} {r['wall']:8.1f} s  CPU {r['cpu']:7.1f} s "
                          f"(CPU / (cores x wall) {r['cpu'] / (r['cores'] * r['wall']):.2f})  "
                          f"{r['rate']:9,.0f} traces/s  {r['rate_core']:9,.0f} traces/s/core ({r['cores']} cores)  "
                          f"{r['rate_cpu']:9,.0f} traces/CPU-s (reaped tree: CPU {r['cpu_reaped']:.1f} s, "
                          f"of it system {r['sys_reaped']:.1f} s, "
                          f"{n / r['cpu_reaped']:,.0f} traces/CPU-s)  "
                          f"peak tree RSS {r['peak'] / 2**30:5.2f} GiB{hwm}{slope}{extra}  "
                          f"[load {r['load0']:.1f} -> {r['load1']:.1f}]", flush=True)
                    if r.get("timeline"):
                        tl = r["timeline"]
                        step = max(1, len(tl) // 10)
                        print("          RSS timeline (partition: MiB): " + ", ".join(
                            f"{i}: {m:.0f}" for i, m in tl[::step]), flush=True)
                        print("          of which the driver process: " + ", ".join(
                            f"{i}: {m:.0f}" for (i, _), m in zip(tl[::step], r["driver"][::step], strict=True)), flush=True)
                    if r.get("kept"):
                        # the floor moves only at a release: with few after warm-up its slope says nothing
                        print("          each worker after warm-up, MiB per partition it scored: " + "; ".join(
                            f"{k['n']} partitions, RSS once done slope {k['rss_slope']:+.2f} (max {k['rss_max']:.0f}), "
                            f"floor after a release {k['floor_first']:.0f} -> {k['floor_last']:.0f} "
                            + (f"slope {k['floor_slope']:+.2f} ({k['releases']} releases)" if k["releases"] >= 3 else
                               f"({k['releases']} releases: its RSS stayed within the release threshold)")
                            for k in r["kept"].values()), flush=True)
                    if q is not None:  # the SQL summary phase alone, in a fresh process, on the written dataset
                        print(f"          of which the SQL summary over the written dataset, run alone: "
                              f"{q['wall']:.1f} s, peak {q['peak'] / 2**30:.2f} GiB")
                    shutil.rmtree(out, ignore_errors=True)
                    shutil.rmtree(out.parent / "spill", ignore_errors=True)
            for e in ("duckdb", "dask"):
                co = next((r for r in rows if r["n"] == n and r["engine"] == e and r["layout"] == "co"), None)
                sh = next((r for r in rows if r["n"] == n and r["engine"] == e and r["layout"] == "shared"), None)
                if co and sh:
                    print(f"  {e:<7} shared answers / co-partitioned: wall x{sh['wall'] / co['wall']:.2f}")
            shutil.rmtree(work / f"single-{n}", ignore_errors=True)
            if not args.workdir:
                shutil.rmtree(store, ignore_errors=True)
        print("\nratios measured in this run (in-memory pandas = 1):")
        for n in sizes:
            base = next((r for r in rows if r["n"] == n and r["engine"] == "pandas"), None)
            if base is None:
                continue
            for r in rows:
                if r["n"] == n and r["engine"] != "pandas" and r["layout"] == "co":
                    print(f"  {n:>10,} {r['engine']:<7} per-core throughput x{r['rate_core'] / base['rate_core']:.2f}, "
                          f"per-CPU-second x{r['rate_cpu'] / base['rate_cpu']:.2f}, "
                          f"peak memory x{r['peak'] / base['peak']:.2f}")
        print(f"load average at the end: {_load()}")
        for e in ("duckdb", "dask"):
            pk = [(r["n"], r["peak"]) for r in rows if r["engine"] == e and r["layout"] == "co"]
            if len(pk) > 1:
                print(f"  {e:<7} peak memory {pk[0][0]:,} -> {pk[-1][0]:,} traces: "
                      f"{pk[0][1] / 2**30:.2f} -> {pk[-1][1] / 2**30:.2f} GiB (x{pk[-1][1] / pk[0][1]:.2f})")
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
