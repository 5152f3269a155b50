"""`evaltk score`: the command-line layer over :func:`evaltk.scoring.score_traces`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .._io import check_output, json_text, removed_on_failure
from ..scoring import (
    SCORE_TABLES,
    score_traces,
)

# --------------------------------------------------------------------------- CLI


def register_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "score", help="score traces into a score matrix, manifest and ledger",
        description="Ingest a JSONL/Parquet trace file (and judge answers, human labels) and write "
                    "scores.parquet, manifest.json, ledger.parquet and friends to --out. The manifest "
                    "records each measure's instrument (scorer and version, fold rule, and per judge its "
                    "model, rubric, template and decoding from the answers' instrument columns) with its "
                    "digest; answers without those columns score as 'unpinned'.",
        epilog="Example: evaltk score data/demo/traces.jsonl --answers data/demo/answers.csv "
               "--labels data/demo/labels.csv --out out/\nExit codes (as `evaltk ingest`): 0 the score "
               "directory was written, whatever was dropped (the ledger says why, the counts are "
               "printed); 64 usage (--out is an input, a file, or a folder holding files `evaltk score` does not "
               "write: pass --overwrite); 65 a malformed record with --strict, or a limit passed; 66 "
               "unreadable input.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("traces", help="trace file (JSONL, one run per line; or Parquet)")
    p.add_argument("--answers", help="judge answers (CSV, JSONL or Parquet)")
    p.add_argument("--labels", help="human labels (CSV, JSONL or Parquet)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--strict", action="store_true", help="fail on the first malformed record")
    p.add_argument("--fold", choices=["majority", "unanimity"], default="majority",
                   help="how several judges' answers to one question fold (default: majority); part of "
                        "the instrument")
    p.add_argument("--json", action="store_true", help="print a machine-readable summary")
    p.add_argument("--overwrite", action="store_true",
                   help="write into a folder that holds other files too (the score files replace those of "
                        "the same name; docs/outputs.md)")
    p.set_defaults(func=_cli_score)


def _cli_score(args: argparse.Namespace) -> int:
    writes = [*(f"{t}.parquet" for t in SCORE_TABLES), "manifest.json"]
    check_output(args.out, [args.traces, args.answers, args.labels], kind="dir", writes=writes, by="evaltk score",
                 overwrite=args.overwrite)
    with removed_on_failure(Path(args.out) / "manifest.json"):  # a failed run leaves no loadable result
        m = score_traces(args.traces, args.answers, args.labels, strict=args.strict, fold=args.fold)
        out = m.save(args.out)
    led = m.ledger
    dropped = led[led["status"] == "dropped"] if len(led) else led
    summary = {
        "out": str(out),
        "runs": len(m.runs),
        "ledger": {"records": len(led), "kept": int((led["status"] == "kept").sum()) if len(led) else 0,
                   "dropped": len(dropped),
                   "dropped_by_reason": {str(k): int(v) for k, v in
                                         (dropped["reason"].astype(str).str.split(":").str[0].value_counts().items()
                                          if len(dropped) else [])}},
        "measures": json.loads(m.summary().to_json(orient="records")),
        "unscored": json.loads(m.unscored.to_json(orient="records")),
        "instruments": {m_: m.manifest.instrument(m_).to_dict() for m_ in m.manifest.measures},
    }
    if args.json:
        print(json_text(summary))
    else:
        print(f"scored {summary['runs']} runs -> {out}")
        print(f"ledger: {summary['ledger']['records']} records, {summary['ledger']['kept']} kept, "
              f"{summary['ledger']['dropped']} dropped")
        for r in summary["measures"]:
            mean = "abstain" if r["mean"] is None else f"{r['mean']:.3f}"
            print(f"  {r['measure']:<12} mean {mean:>8}  n {r['n']:>6}  coverage {r['coverage']:.3f}",
                  file=sys.stdout)
        print("instruments (a comparison needs the same instrument on both sides):")
        for r in m.manifest.instruments().itertuples():
            print(f"  {r.measure:<12} {r.instrument_status:<9} {r.instrument_digest[:23]}  {r.instrument}",  # type: ignore[index,str-bytes-safe]  # pandas-stubs: a row cell
                  file=sys.stdout)
        for r in summary["unscored"]:
            print(f"  not scored: {r['n_answers']} {r['tier']} {r['measure']} answers: {r['reason']}",
                  file=sys.stdout)
    return 0
