"""How the shuffle of shared answers stages its rows (issue 19, "within 1.5x of the
co-partitioned time for shared answers").

``score_dataset`` joins a shared answer source with the store's trace ids in DuckDB and stages
each partition's rows before any worker starts, so this phase is time the workers wait.  It
now streams the join's rows in batches that ``evaltk.scale._scale._split_staged`` appends to one
Arrow IPC file per partition (zstd buffers).  The peer is the code before (commit ae02e16): the
same join written by DuckDB's ``COPY ... PARTITION_BY (evaltk_part)`` as Parquet, under the same
``memory_limit`` (the same ``_bounded`` share and watchdog).  Each round runs both, each in a
fresh process, in alternating order; the script prints each run's wall, CPU, peak resident
size (VmHWM) and staged bytes, and the median of the paired ratios.

Usage::

    python benchmarks/scale.py --sizes 10000000 --workdir /tmp/w --generate-only --layouts shared
    python benchmarks/shuffle_stage.py --store /tmp/w/store-10000000 --limit 4GB --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from _child import ROOT, fresh_child, parse_or_run_child, store_line


def _copy_partition_by(S, parts, shared, out: Path, limit: str) -> None:
    """The peer: the shuffle's join written by DuckDB's partitioned COPY (the code of ae02e16)."""
    import duckdb

    files = [p.traces for p in parts]
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = false")
    ids = " UNION ALL ".join(  # as ae02e16 read them: one read_parquet per trace file
        f"SELECT CAST(trace_id AS VARCHAR) AS evaltk_tid, {i} AS evaltk_part FROM read_parquet('{f}', "
        "hive_partitioning = false) WHERE trace_id IS NOT NULL" for i, f in enumerate(files))
    dest = out / "_shuffle" / "answers"
    dest.parent.mkdir(parents=True, exist_ok=True)
    with S._bounded(con, limit, "the shuffle (peer)", None):
        src, described = S._numbered_sql(shared["answers"], con, None)
        meta = json.dumps(described).replace("'", "''")
        con.execute(f"COPY (SELECT a.*, coalesce(i.evaltk_part, 0) AS evaltk_part FROM {src} a "
                    f"LEFT JOIN ({ids}) i ON CAST(a.trace_id AS VARCHAR) = i.evaltk_tid) TO '{dest}' "
                    f"(FORMAT parquet, PARTITION_BY (evaltk_part), KV_METADATA {{'{S._SOURCES_KEY.decode()}': '{meta}'}})")
    con.close()


def child(store: Path, how: str, limit: str, out: Path) -> dict[str, object]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _memory import peak_mib, reset_peak

    import evaltk.scale._scale as S
    from evaltk.scale import discover_partitions
    from evaltk.scale._remote import Root

    parts, shared = discover_partitions(store / "traces", store / "answers_shared", None)
    reset_peak()
    t0, c0 = time.perf_counter(), time.process_time()
    if how == "stream":
        S._shuffle_shared(parts, shared, Root(out), memory_limit=limit, temp_directory=None, storage_options=None)
    else:
        _copy_partition_by(S, parts, shared, out, limit)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    staged = sorted((out / "_shuffle" / "answers").rglob("*.*"))
    return {"wall": wall, "cpu": cpu, "peak": peak_mib(), "files": len(staged),
            "bytes": sum(f.stat().st_size for f in staged), "partitions": len(parts)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", default="4GB", help="memory_limit, as score_dataset is given it")
    ap.add_argument("--rounds", type=int, default=3)
    args = parse_or_run_child(ap, child, 2)
    if args is None:
        return
    print(store_line(args.store, f", limit {args.limit}"), flush=True)
    ratios: list[float] = []
    for r in range(args.rounds):
        walls = {}
        for how in (("stream", "copy") if r % 2 == 0 else ("copy", "stream")):
            load0 = os.getloadavg()[0]
            x, err = fresh_child(__file__, args.store, [how, args.limit], "evaltk-stage-bench-")
            if x is None:
                print(f"  round {r + 1} {how}: failed\n{err}", flush=True)
                continue
            walls[how] = x["wall"]
            label = "IPC stream (evaltk)" if how == "stream" else "COPY PARTITION_BY (peer)"
            print(f"  round {r + 1} {label:<25} wall {x['wall']:.1f} s  CPU {x['cpu']:.1f} s  VmHWM {x['peak']:.0f} MiB"
                  f"  staged {x['files']} files, {x['bytes'] / 2**20:.0f} MiB for {x['partitions']} partitions"
                  f"  [load {load0:.1f} -> {os.getloadavg()[0]:.1f}]", flush=True)
        if len(walls) == 2:
            ratios.append(walls["copy"] / walls["stream"])
    if ratios:
        print(f"peer / evaltk wall: median {statistics.median(ratios):.2f}x over {len(ratios)} rounds "
              f"({', '.join(f'{x:.2f}' for x in ratios)})", flush=True)


if __name__ == "__main__":
    main()
