"""`evaltk scale`: the command-line layer over :mod:`evaltk.scale`."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from .._io import json_text
from ..scale import (
    ENGINES,
    DatasetSummary,
    WorkersLost,
    engine_kind,
    optional_module,
    partitions_done,
    score_dataset,
    summarize_dataset,
)
from ..values import Abstention

#: The Dask cluster lost its workers mid-run (EX_TEMPFAIL, as `evaltk judge` uses it): resume.
EXIT_WORKERS_LOST = 75


def register_cli(subparsers: Any) -> None:
    """``evaltk scale score STORE ...`` and ``evaltk scale summarize OUT ...``."""
    import argparse

    p = subparsers.add_parser(
        "scale", help="score and summarise a partitioned trace store with DuckDB or Dask (same numbers)",
        description="Score a folder of JSONL/Parquet trace files partition by partition (DuckDB on one "
                    "machine, Dask on a cluster) and summarise it; results equal `evaltk score` in memory. "
                    "Exit codes: 0 done; 64 usage (an --out holding an earlier run without --resume or "
                    "--overwrite); 65 the store violates the contract (a trace id in two partitions, an "
                    "unknown --by column), a malformed record with --strict, or a scored dataset is partial or "
                    "corrupt; 66 unreadable input; "
                    "75 the Dask cluster lost its workers (rerun with --resume); "
                    "130 interrupted (Ctrl-C: rerun with --resume).",
        epilog="Example: evaltk scale score data/demo/traces.jsonl --answers data/demo/answers.csv --labels data/demo/labels.csv "
               "--out out/scored --engine duckdb --memory-limit 4GB --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="scale_command", metavar="SUBCOMMAND", parser_class=type(p))

    def engine_args(q: Any) -> None:
        q.add_argument("--engine", choices=list(ENGINES), default="duckdb", help="engine (default duckdb)")
        q.add_argument("--scheduler", help="a Dask scheduler address (tcp://host:8786); implies --engine dask")
        q.add_argument("--memory-limit", help="DuckDB memory limit, or each local Dask worker's (e.g. 4GB)")
        q.add_argument("--workers", type=int, help="workers of a LocalCluster evaltk starts (default 2)")
        q.add_argument("--by", nargs="+", help="run columns to group the summary by (agent, domain, a hive key)")
        q.add_argument("--json", action="store_true", help="print a machine-readable summary")
        q.add_argument("--storage-options", type=_json_object, default=None, metavar="JSON",
                       help='fsspec options for s3:// gs:// URLs, e.g. \'{"anon": false, "client_kwargs": '
                            '{"endpoint_url": "http://127.0.0.1:9000"}}\'')

    s = sub.add_parser("score", help="score a trace store and write the score matrix as partitioned Parquet",
                       epilog="Example: evaltk scale score data/demo/traces.jsonl --answers data/demo/answers.csv --out out/scored",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("traces", help="a trace file or a folder of them (hive-partitioned or not)")
    s.add_argument("--answers", help="judge answers: co-partitioned folder, or one file/folder")
    s.add_argument("--labels", help="human labels: co-partitioned folder, or one file/folder")
    s.add_argument("--out", required=True, help="output folder (must not hold a scored dataset, unless "
                                                "--resume or --overwrite)")
    again = s.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="continue an interrupted run in --out: score only the partitions not done")
    again.add_argument("--overwrite", action="store_true",
                       help="remove what an earlier run wrote in --out (only that) and start over")
    s.add_argument("--strict", action="store_true",
                   help="stop at the first malformed answer or label row, naming its file, record and field "
                        "(exit 65), instead of ledgering it")
    s.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="a progress bar on stderr (default: when stderr is a terminal)")
    engine_args(s)
    s.set_defaults(func=_cli_score)
    m = sub.add_parser("summarize", help="summarise a scored dataset (the --out of `evaltk scale score`)",
                       epilog="Example: evaltk scale score data/demo/traces.jsonl --answers data/demo/answers.csv --out out/scored && "
                              "evaltk scale summarize out/scored --by agent --engine duckdb --json",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    m.add_argument("out", help="a folder written by `evaltk scale score`")
    engine_args(m)
    m.set_defaults(func=_cli_summarize)
    p.set_defaults(func=lambda args: _cli_help(p))


def _json_object(text: str) -> dict[str, Any]:
    import argparse

    try:
        doc = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise argparse.ArgumentTypeError("a JSON object expected")
    return doc


def _cli_help(p: Any) -> int:
    import sys

    from ._main import EXIT_USAGE

    p.print_help(sys.stderr)
    return EXIT_USAGE


@contextlib.contextmanager
def _cli_engine(args: Any) -> Iterator[Any]:
    if args.scheduler:
        distributed = optional_module("distributed")
        client = distributed.Client(args.scheduler)
        try:
            yield client
        finally:
            client.close()
    else:
        yield args.engine


def _cli_report(summary: DatasetSummary, head: dict[str, Any], as_json: bool) -> None:
    import sys
    import warnings

    from ..values import UndefinedWarning

    frame = summary.to_frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedWarning)
        cal = summary.calibration_frame(rng=0, n_resamples=2000)
        p1 = summary.pass_counts.pass_at_k(1)
    doc = {**head, "n_runs": summary.n_runs, "population": summary.population,
           "measures": json.loads(frame.to_json(orient="records")),
           "calibration": json.loads(cal.to_json(orient="records")),
           "pass_at_1": None if isinstance(p1, Abstention) else p1}
    if as_json:
        print(json_text(doc))
        return
    print(f"{summary.n_runs} runs" + "".join(f", {k} {v}" for k, v in head.items()))
    for r in doc["measures"]:
        mean = "abstain" if r["mean"] is None else f"{r['mean']:.3f}"
        grp = "".join(f" {r[k]}" for k in summary.scores.keys if k not in ("measure", "tier"))
        cov = "undefined" if r["coverage"] is None else f"{r['coverage']:.3f}"
        print(f"  {r['measure']:<12}{grp} mean {mean:>8}  n {r['n']:>9}  coverage {cov}",
              file=sys.stdout)
    for r in doc["calibration"]:
        ci = "no interval" if r["ci_low"] is None else f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
        st = "undefined" if r["statistic"] is None else f"{r['statistic']:.3f} {ci}"
        print(f"  judge-human {r['measure']:<7} cohen_kappa {st}  pairable {r['n_pairable']}")


def _cli_score(args: Any) -> int:
    import sys

    show = sys.stderr.isatty() if args.progress is None else args.progress
    try:
        with _cli_engine(args) as engine:
            res = score_dataset(args.traces, args.answers, args.labels, out=args.out, engine=engine, by=args.by,
                                memory_limit=args.memory_limit, n_workers=args.workers, resume=args.resume,
                                overwrite=args.overwrite, progress=show, storage_options=args.storage_options,
                                strict=args.strict)
    except KeyboardInterrupt:
        print(f"evaltk scale score: interrupted; {partitions_done(args.out, storage_options=args.storage_options)} "
              f"partition(s) done in {args.out}. "
              "Rerun with --resume to score only the rest, or --overwrite to start over.", file=sys.stderr)
        return 130
    except WorkersLost as e:  # not a bug and not bad input: the run can go on where it stopped
        print(f"evaltk scale score: {e}", file=sys.stderr)
        return EXIT_WORKERS_LOST
    _cli_report(res.summary, {"out": str(res.out), "partitions": res.n_partitions, "engine": res.engine},
                args.json)
    return 0


def _cli_summarize(args: Any) -> int:
    with _cli_engine(args) as engine:
        s = summarize_dataset(args.out, by=args.by, engine=engine, memory_limit=args.memory_limit,
                              n_workers=args.workers, storage_options=args.storage_options)
    _cli_report(s, {"engine": engine_kind(engine)}, args.json)
    return 0
