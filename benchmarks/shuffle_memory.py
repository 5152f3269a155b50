"""Memory of the DuckDB phases the driver runs itself, under ``memory_limit``: the trace-id check
and the shuffle of shared answers (issue 19, "memory limit bounds the whole run").

DuckDB's own ``memory_limit`` bounds its buffer manager, not every allocation of the process
(its readers, the Parquet writer, the allocator's slack).  ``score_dataset`` therefore gives
DuckDB a share of what the limit leaves (``evaltk.scale._scale._DUCKDB_SHARE``) and watches the
process's resident size with the same watchdog as the scoring.  This benchmark runs the two
phases exactly as ``score_dataset`` does (the same functions), each time in a fresh process,
on a store written by ``benchmarks/scale.py --generate-only`` (``answers_shared/``: the answers
in other files and another order), and prints the process's peak resident size (VmHWM) against
the limit, for each share asked for; ``--share none`` is the peer: DuckDB given the whole limit
and no watchdog (the code before this change).

Usage::

    python benchmarks/scale.py --sizes 1000000 --workdir /tmp/w --generate-only --layouts shared
    python benchmarks/shuffle_memory.py --store /tmp/w/store-1000000 --limits 1GB,2GB --shares none,1,0.5
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

from _child import ROOT, fresh_child, parse_or_run_child, store_line


def child(store: Path, limit: str, share: str, out: Path) -> dict[str, object]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _memory import peak_mib, reset_peak, rss_mib

    import evaltk.scale._scale as S
    from evaltk.errors import LimitExceeded
    from evaltk.scale import discover_partitions
    from evaltk.scale._remote import Root

    parts, shared = discover_partitions(store / "traces", store / "answers_shared", None)
    if share == "none":  # the peer: DuckDB's own limit only (the code before), no watchdog
        import contextlib

        @contextlib.contextmanager
        def whole(con, memory_limit, phase, temp_directory=None):
            con.execute(f"SET memory_limit = '{memory_limit}'")
            con.execute("SET preserve_insertion_order = true")
            yield

        S._bounded = whole
    else:
        S._DUCKDB_SHARE = float(share)
    base = rss_mib()
    reset_peak()
    t0, c0 = time.perf_counter(), time.process_time()
    refused = ids_peak = None
    try:
        S._check_unique_ids(parts, memory_limit=limit)
        ids_peak = peak_mib()
        S._shuffle_shared(parts, shared, Root(out), memory_limit=limit, temp_directory=None, storage_options=None)
    except LimitExceeded as e:
        refused = str(e)[:160]
    return {"base": base, "ids_peak": ids_peak, "peak": peak_mib(), "wall": time.perf_counter() - t0,
            "cpu": time.process_time() - c0, "refused": refused,
            "children_cpu": resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limits", default="1GB,2GB", help="comma-separated memory limits")
    ap.add_argument("--shares", default="none,1,0.5", help="DuckDB's share of what the limit leaves; none: the peer")
    args = parse_or_run_child(ap, child, 2)
    if args is None:
        return
    from evaltk.scale._scale import _size_bytes

    print(store_line(args.store), flush=True)
    for limit in args.limits.split(","):
        for share in args.shares.split(","):
            load0 = os.getloadavg()[0]
            r, err = fresh_child(__file__, args.store, [limit, share], "evaltk-shuffle-bench-")
            if r is None:
                print(f"  limit {limit} share {share}: failed\n{err}", flush=True)
                continue
            lim_mib = _size_bytes(limit) / 2**20
            what = f"REFUSED ({r['refused']})" if r["refused"] else "done"
            ids = f"{r['ids_peak']:.0f}" if r["ids_peak"] is not None else "-"
            print(f"  limit {limit} ({lim_mib:.0f} MiB)  DuckDB share {share:<4}  VmHWM {r['peak']:.0f} MiB = "
                  f"{r['peak'] / lim_mib:.2f} x limit (process at start {r['base']:.0f} MiB, after the id check "
                  f"{ids} MiB)  wall {r['wall']:.1f} s  CPU {r['cpu']:.1f} s  {what}  "
                  f"[load {load0:.1f} -> {os.getloadavg()[0]:.1f}]", flush=True)


if __name__ == "__main__":
    main()
