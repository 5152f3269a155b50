"""CPU and peak memory of the shuffle of a shared answers export, per format, against the
previous path (issue 19, "nothing lost"), and of reading every partition's share back.

The shuffle reads a CSV or JSONL export with :func:`evaltk.ingest.answer_rows` (ingest's own
reader: every line kept, a line that is no record too, numbered as ingest numbers it) and hands
the rows to DuckDB: a clean file as typed fields (Arrow's reader, the route ``read_answers``
takes for it), any other row by row as JSON text.  Before, DuckDB's own CSV/JSON readers read
the file and a private scan numbered its records (a line they could not parse failed the run
or was lost).  Parquet is read by DuckDB either way (the control).  The peer is the code of
``--baseline`` (a git revision, extracted with ``git archive`` into a temporary folder: the
repository is not changed), measured in the same run, on the same files, each run in a fresh
process, the two interleaved.

Printed per format: wall and CPU seconds of the shuffle (``time.process_time``: every thread of
the process), its peak resident size (VmHWM), the CPU seconds of then reading every partition's
staged share as its worker does (``_staged_answers``: the checks, the ledger), the peak after
it and how many rows those ledgers hold (every row of the export, kept or dropped, when nothing
is lost), and the ratios new / previous.  The machine is shared: read the ratios with the load
printed beside them.

Usage::

    python benchmarks/shuffle_formats.py --rows 1000000 --traces 100000 --reps 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The last revision whose shuffle read CSV and JSONL with DuckDB's readers.
BASELINE = "52f2c9b"
FORMATS = ("parquet", "csv", "jsonl")


def generate(folder: Path, n_rows: int, n_traces: int, n_parts: int) -> None:
    """Trace files holding only trace ids (all the shuffle reads of them) and one shared export
    per format: ``n_rows`` answers in no order, a tenth of them of no trace in the store."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    (folder / "traces").mkdir(parents=True)
    ids = np.array([f"run-{i:08d}" for i in range(n_traces)], dtype=object)
    for k, chunk in enumerate(np.array_split(ids, n_parts)):
        with open(folder / "traces" / f"part-{k}.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps({"trace_id": t}) + "\n" for t in chunk)
    tid = ids[rng.integers(0, n_traces, n_rows)]
    orphan = rng.random(n_rows) < 0.1
    tid[orphan] = [f"gone-{i:08d}" for i in range(int(orphan.sum()))]
    frame = pd.DataFrame({"trace_id": tid, "measure": "x_task", "step": pd.array([pd.NA] * n_rows, "Int64"),
                          "rater": rng.choice(["judge-a", "judge-b", "judge-c"], n_rows),
                          "answer": rng.choice(["yes", "no", "cannot_tell"], n_rows),
                          "confidence": rng.random(n_rows).round(3)})
    frame.to_parquet(folder / "answers.parquet", index=False)
    frame.to_csv(folder / "answers.csv", index=False)
    frame.to_json(folder / "answers.jsonl", orient="records", lines=True)


def child(code: Path, folder: Path, fmt: str, out: Path) -> dict[str, float]:
    """One shuffle with the package at ``code``, in this (fresh) process."""
    sys.path.insert(0, str(code))
    from evaltk.scale import discover_partitions
    from evaltk.scale._remote import Root
    from evaltk.scale._scale import _shuffle_shared, _staged_answers

    assert Path(sys.modules["evaltk"].__file__).resolve().is_relative_to(code.resolve())
    parts, shared = discover_partitions(folder / "traces", folder / f"answers.{fmt}", None)
    t0, c0 = time.perf_counter(), time.process_time()
    staged, _ = _shuffle_shared(parts, shared, Root(out), memory_limit=None, temp_directory=None,
                                storage_options=None)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    hwm = _hwm_mib()
    c1 = time.process_time()
    n = 0
    import inspect

    import evaltk.scale._scale as S

    before = len(inspect.signature(_staged_answers).parameters) == 4  # the baseline: (path, meta, kind, strict)
    for p in staged:  # each partition's share, read as its worker reads it
        if p.answers is not None:
            args = (p.answers, S._staged_sources(p.answers)) if before else (p.answers,)
            n += len(_staged_answers(*args, "answer", False).ledger)
    return {"wall": wall, "cpu": cpu, "hwm_mib": hwm, "read_cpu": time.process_time() - c1, "hwm_all": _hwm_mib(),
            "ledgered": n}


def _hwm_mib() -> float:
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) / 1024


def _run(code: Path, folder: Path, fmt: str, work: Path) -> dict[str, float]:
    out = Path(tempfile.mkdtemp(dir=work))
    env = {**os.environ, "PYTHONPATH": str(code)}
    res = subprocess.run([sys.executable, __file__, "--child", str(code), str(folder), fmt, str(out)],
                         env=env, capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"the {fmt} run of {code} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--traces", type=int, default=100_000)
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--baseline", default=BASELINE, help=f"git revision of the previous path (default {BASELINE})")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        code, folder, fmt, out = args.child
        print(json.dumps(child(Path(code), Path(folder), fmt, Path(out))))
        return
    with tempfile.TemporaryDirectory(prefix="evaltk-shuffle-formats-") as tmp:
        work = Path(tmp)
        old = work / "baseline"
        old.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline, "evaltk"],
                                 capture_output=True, check=True).stdout
        (work / "baseline.tar").write_bytes(archive)
        with tarfile.open(work / "baseline.tar") as tf:
            tf.extractall(old, filter="data")
        folder = work / "store"
        generate(folder, args.rows, args.traces, args.parts)
        sizes = {f: (folder / f"answers.{f}").stat().st_size / 2**20 for f in FORMATS}
        print(f"{args.rows:,} answer rows, {args.traces:,} traces in {args.parts} partitions; previous path: "
              f"{args.baseline}; load before: {open('/proc/loadavg').read().strip()}")
        print(f"{'format':8} {'MiB':>6} {'code':9} {'wall s':>7} {'CPU s':>7} {'VmHWM MiB':>10} "
              f"{'read CPU s':>10} {'VmHWM after':>11} {'rows ledgered':>13}")
        rows = {}
        for fmt in FORMATS:
            got: dict[str, list[dict[str, float]]] = {"previous": [], "new": []}
            for _ in range(args.reps):
                for name, code in (("previous", old), ("new", ROOT)):
                    got[name].append(_run(code, folder, fmt, work))
            for name in ("previous", "new"):
                for r in got[name]:
                    print(f"{fmt:8} {sizes[fmt]:6.0f} {name:9} {r['wall']:7.2f} {r['cpu']:7.2f} {r['hwm_mib']:10.0f} "
                          f"{r['read_cpu']:10.2f} {r['hwm_all']:11.0f} {r['ledgered']:13,d}")
            rows[fmt] = got
        print(f"load after: {open('/proc/loadavg').read().strip()}")
        print("ratios new / previous (best of each): ")
        for fmt, got in rows.items():
            best = {k: {m: min(r[m] for r in v) for m in ("wall", "cpu", "hwm_mib", "read_cpu", "hwm_all")}
                    for k, v in got.items()}
            b, n = best["previous"], best["new"]
            print(f"  {fmt:8} shuffle CPU x{n['cpu'] / b['cpu']:.2f}  wall x{n['wall'] / b['wall']:.2f}  "
                  f"VmHWM x{n['hwm_mib'] / b['hwm_mib']:.2f} ({n['hwm_mib'] - b['hwm_mib']:+.0f} MiB)  "
                  f"read CPU x{n['read_cpu'] / b['read_cpu']:.2f}  VmHWM after x{n['hwm_all'] / b['hwm_all']:.2f}")


if __name__ == "__main__":
    main()
