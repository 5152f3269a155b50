"""`evaltk ingest`: the command-line layer over :func:`evaltk.ingest.ingest_traces`."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from .._io import check_output, json_text, removed_on_failure, write_csv, write_parquet
from ..ingest import (
    ingest_traces,
)

# --------------------------------------------------------------------------- CLI


def register_cli(subparsers: Any) -> None:
    """``evaltk ingest TRACES [--answers F] [--labels F] [--out DIR] [--json] [--strict]``."""
    p = subparsers.add_parser(
        "ingest", help="validate traces, answers and labels; write the tables and the ledger",
        description="Read traces (JSONL/Parquet), judge answers and human labels "
                    "(CSV/JSONL/Parquet); drop in-progress runs, malformed records and "
                    "duplicated ids, each with a ledger entry; join on trace_id.",
        epilog="Example: evaltk ingest data/demo/traces.jsonl --answers data/demo/answers.csv "
               "--out out/ --json\nExit codes (the rule `evaltk score` follows too): 0 the tables and "
               "the ledger were produced, whatever was dropped (each dropped record has a ledger row "
               "with its reason, and the counts are printed); 64 usage (--out is an input, a file, or a "
               "folder holding files `evaltk ingest` does not write: pass --overwrite); 65 a malformed "
               "record with --strict, or a limit passed (docs/limits.md); 66 unreadable input.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("traces", help="trace file (JSONL, one run per line; or Parquet)")
    p.add_argument("--answers", action="append", help="judge answers (CSV, JSONL, Parquet); repeatable")
    p.add_argument("--labels", action="append", help="human labels (CSV, JSONL, Parquet); repeatable")
    p.add_argument("--out", help="write runs, steps, answers, labels, disagreements (Parquet) and "
                                 "ledger.csv here")
    p.add_argument("--strict", action="store_true", help="stop at the first malformed record")
    p.add_argument("--json", action="store_true", help="print a machine-readable summary")
    p.add_argument("--overwrite", action="store_true",
                   help="with --out: write into a folder that holds other files too (the tables replace "
                        "those of the same name; docs/outputs.md)")
    p.set_defaults(func=_cli_ingest)


#: The files ``evaltk ingest --out DIR`` writes in DIR (ledger.csv last).
INGEST_FILES = ("runs.parquet", "steps.parquet", "answers.parquet", "labels.parquet",
                "step_count_disagreements.parquet", "ledger.csv")


def _cli_ingest(args: argparse.Namespace) -> int:
    inputs = [args.traces, *(args.answers or []), *(args.labels or [])]
    if args.out:
        check_output(args.out, inputs, kind="dir", writes=INGEST_FILES, by="evaltk ingest",
                     overwrite=args.overwrite)
    written = [Path(args.out) / name for name in INGEST_FILES] if args.out else []
    with removed_on_failure(*written):  # a failed run leaves no earlier tables to read as its own
        ing = ingest_traces(args.traces, args.answers, args.labels, strict=args.strict)
    if args.out:
        out = Path(args.out)
        runs = ing.runs.copy()
        runs["guide"] = [None if g is None else json.dumps(g, sort_keys=True) for g in runs["guide"]]
        tables = (runs, ing.steps, ing.answers, ing.labels, ing.step_count_disagreements)
        for name, table in zip(INGEST_FILES, tables, strict=False):
            write_parquet(table, out / name)
        write_csv(ing.ledger, out / "ledger.csv")  # text cells neutralised against formulas
    led = ing.ledger
    n_drop = int((led["status"] == "dropped").sum())
    if args.json:
        summ = ing.summary()
        doc = {
            "records": int(len(led)),
            "kept": int(len(led) - n_drop),
            "dropped": n_drop,
            "runs": int(len(ing.runs)),
            "steps": int(len(ing.steps)),
            "answers": int(len(ing.answers)),
            "labels": int(len(ing.labels)),
            "step_count_disagreements": int(len(ing.step_count_disagreements)),
            "by_reason": [{k: (None if isinstance(v, float) and math.isnan(v) else v)
                           for k, v in r.items()} for r in summ.to_dict("records")],
        }
        print(json_text(doc, default=int))
    else:
        print(f"{len(led)} records: {len(led) - n_drop} kept, {n_drop} dropped; "
              f"{len(ing.runs)} runs, {len(ing.steps)} steps, {len(ing.answers)} answers, "
              f"{len(ing.labels)} labels", file=sys.stdout)
        for r in ing.dropped.head(20).itertuples(index=False):
            print(f"  {r.source}:{r.record}: {r.kind} {r.trace_id if isinstance(r.trace_id, str) else '-'}: "
                  f"{r.reason}" + (f" [{r.field}]" if isinstance(r.field, str) else ""), file=sys.stdout)
    return 0  # README "Exit codes": records dropped are in the ledger, not an exit code
