"""Where one partition's CPU goes: the scale engines' per-partition work, phase by phase.

Takes one partition of a store written by ``benchmarks/scale.py --generate-only`` (or
writes a small one), scores it once to warm up, then ``--repeat`` more times, and prints
the CPU seconds (``time.process_time``, this process only) of each phase of
``evaltk.scale._scale._score_local``: ingest, scoring, the partition's report summary,
the ``DatasetSummary`` the engines add up, and writing the outputs. Each phase runs the
same functions the engines run, on the same inputs, in the same order; the score rows are
not checked here (tests/scale does that). Also printed: the CPU seconds of importing
``evaltk.scale`` in a fresh interpreter (paid by every worker process the engines spawn)
and the load average before and after.

Usage::

    python benchmarks/scale.py --sizes 1000000 --workdir W --generate-only
    python benchmarks/scale_profile.py --store W/store-1000000 [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def _load() -> str:
    return "/".join(Path("/proc/loadavg").read_text().split()[:3])


def _import_cpu() -> float:
    code = "import time; t = time.process_time(); import evaltk.scale; print(time.process_time() - t)"
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", required=True, help="a store folder with traces/ and answers/ (benchmarks/scale.py)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from evaltk.ingest import ingest_traces
    from evaltk.scale import discover_partitions, report_summary
    from evaltk.scale._scale import (
        _label_measures,
        _store_label_measures,
        _summary_of,
        _with_hive_keys,
        _write_outputs,
    )
    from evaltk.scoring import score_traces

    store = Path(args.store)
    labels = store / "labels" if (store / "labels").exists() else None
    parts, _ = discover_partitions(store / "traces", store / "answers", labels)
    part = parts[0]
    label_ms = _label_measures(_store_label_measures(parts, {})) if labels is not None else ()
    print(f"partition {part.key} of {store} ({len(parts)} partitions), load average {_load()}")
    print(f"import evaltk.scale in a fresh interpreter: {_import_cpu():.2f} CPU-s")
    cpu: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as out:
        for i in range(args.repeat + 1):
            t = [time.process_time()]
            ing = ingest_traces(part.traces, part.answers, part.labels)
            t.append(time.process_time())
            m = score_traces(ing, population="partition", label_measures=label_ms)
            scores, runs = m.frame, _with_hive_keys(m.runs, part.hive)
            t.append(time.process_time())
            report = report_summary(scores, runs)
            t.append(time.process_time())
            _summary_of(scores, runs, (), report)
            t.append(time.process_time())
            _write_outputs(part, os.path.join(out, str(i)), scores, runs, ing.ledger, None, report=report)
            t.append(time.process_time())
            if i:  # the first is a warm-up
                for name, a, b in zip(("ingest", "score", "report summary", "DatasetSummary", "write"),
                                      t, t[1:], strict=False):
                    cpu[name].append(b - a)
    total = [sum(x) for x in zip(*cpu.values(), strict=True)]
    for name, xs in cpu.items():
        print(f"  {name:<16} {min(xs):6.3f} - {max(xs):6.3f} CPU-s")
    print(f"  {'whole':<16} {min(total):6.3f} - {max(total):6.3f} CPU-s, load average at the end {_load()}")


if __name__ == "__main__":
    main()
