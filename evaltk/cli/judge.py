"""``evaltk judge run | sweep | rubric``: run an LLM judge on traces, sweep candidates to a frontier.

Exit codes (docs/judges.md, "Running a judge"): 0 every unit answered (an unreadable
reply is an answer: abstained); 75 some calls failed after their retries (the answers,
the failures and the cache are written: run the same command again to resume); 69 the
``judges`` extra is not installed; 64 usage; 65 a rubric, judges file or label file that
violates its schema; 66 unreadable input.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from .._io import json_text, loads_json, write_text_atomic
from .._validation import require_extra
from ..errors import UnreadableInput

#: A run or sweep with calls that failed after their retries (EX_TEMPFAIL: try again).
EXIT_CALLS_FAILED = 75


def register_cli(subparsers: Any) -> None:
    """``evaltk judge run | sweep | rubric``."""
    group = subparsers.add_parser(
        "judge", help="run an LLM judge on traces (OpenAI-compatible HTTP), sweep candidates to a frontier",
        description="Judges as pinned instruments: a rubric file, a model and its decoding settings, every "
                    "answer carrying them. Needs the `judges` extra: pip install 'evaltk[judges]'.",
        epilog="Example: evaltk judge run data/demo/traces.jsonl --rubric x_task --model gpt-4o-mini "
               "--base-url http://127.0.0.1:8000/v1 --out out/x_task.csv",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = group.add_subparsers(dest="judge_command", metavar="SUBCOMMAND", parser_class=type(group))
    group.set_defaults(func=lambda args: _group_help(group))

    r = sub.add_parser(
        "run", help="ask one judge one rubric's question on every unit of the traces",
        description="Writes the answers table ingest reads (every row with the judge's instrument: model, "
                    "version, rubric id and digest, template digest, decoding), a failures table (calls that "
                    "failed after their retries: no answer) and a skipped table (units with nothing to ask "
                    "on). Replies are cached (sqlite) under the instrument and the prompt: re-running resumes "
                    "with no second call for a graded item. Exit 0 all answered, 75 some calls failed, 69 the "
                    "judges extra is missing, 64 usage, 65 schema, 66 unreadable.",
        epilog="Example: evaltk judge run data/demo/traces.jsonl --rubric x_task --model screen-rules "
               "--model-version 2026-11 --base-url http://127.0.0.1:8765/v1 --max-tokens 4 "
               "--price-input 0.15 --price-output 0.60 --out out/x_task.csv",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("traces", help="trace file (JSONL / Parquet)")
    r.add_argument("--rubric", required=True, help="a shipped rubric (x_task, x_eff, x_ctx) or a rubric YAML file")
    r.add_argument("--model", default=None, help="model id (default: $EVALTK_JUDGE_MODEL)")
    r.add_argument("--name", default=None, help="the answers' rater (default: the model id)")
    r.add_argument("--model-version", default="", help="what the model is pinned to (a dated snapshot)")
    r.add_argument("--base-url", default=None,
                   help="API root (default: $EVALTK_JUDGE_BASE_URL, $OPENAI_BASE_URL, then OpenAI's)")
    r.add_argument("--api-key-env", default=None,
                   help="environment variable holding the key (default: $EVALTK_JUDGE_API_KEY, $OPENAI_API_KEY)")
    _decoding_args(r)
    r.add_argument("--price-input", type=float, default=None, help="US dollars per million input tokens")
    r.add_argument("--price-output", type=float, default=None, help="US dollars per million output tokens")
    _run_args(r)
    r.add_argument("--out", required=True, help="answers table to write (.csv or .jsonl)")
    r.add_argument("--failures", default=None, help="failures table (default: <out>.failures.csv)")
    r.add_argument("--cache", default=None, help="grade cache (default: <out>.cache.sqlite)")
    r.add_argument("--no-cache", action="store_true", help="no cache: every unit is a call")
    r.set_defaults(func=_cli_run)

    s = sub.add_parser(
        "sweep", help="run candidate judges on the human-anchored items and the canaries, then select",
        description="Seed 002's judge selection from traces to a frontier: every judge of --judges (a YAML or "
                    "JSON list of {name, model, model_version, base_url, api_key_env, decoding, price}) is "
                    "asked the rubric's question on the items the human labels anchor and on the canaries; "
                    "accuracy, cost (from the replies' token usage and the declared prices) and latency are "
                    "measured, and evaltk.select_judges takes the frontier. Writes answers.csv, failures.csv, "
                    "selection.csv and orderings.csv to --out. Exit codes as `judge run`.",
        epilog="Example: evaltk judge sweep data/demo/traces.jsonl --rubric x_task --judges judges.yaml "
               "--labels data/demo/labels.csv --canaries data/demo/canaries.csv --out out/sweep",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("traces", help="trace file (JSONL / Parquet)")
    s.add_argument("--rubric", required=True, help="a shipped rubric (x_task, x_eff, x_ctx) or a rubric YAML file")
    s.add_argument("--judges", required=True, help="YAML / JSON list of candidate judges")
    s.add_argument("--labels", required=True, help="human labels (the answers-table profile)")
    s.add_argument("--canaries", default=None, help="known failures: trace_id, measure, passing_answer (CSV)")
    _run_args(s)
    s.add_argument("--seed", type=int, default=0, help="seed of the paired bootstrap of the orderings")
    s.add_argument("--out", required=True, help="folder to write the tables to")
    s.add_argument("--cache", default=None, help="grade cache (default: <out>/cache.sqlite)")
    s.set_defaults(func=_cli_sweep)

    b = sub.add_parser("rubric", help="check a rubric and print its id, measure, unit and digests",
                       epilog="Example: evaltk judge rubric x_task --json",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("rubric", help="a shipped rubric (x_task, x_eff, x_ctx) or a rubric YAML file")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=_cli_rubric)


def _decoding_args(p: Any) -> None:
    p.add_argument("--decoding", default=None, help='decoding settings as JSON (default {"temperature": 0})')
    p.add_argument("--temperature", type=float, default=None)
    p.add_argument("--max-tokens", type=int, default=None)


def _run_args(p: Any) -> None:
    p.add_argument("--concurrency", type=int, default=8, help="calls in flight at once (default 8)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per attempt (default 60)")
    p.add_argument("--retries", type=int, default=3, help="retries of a retryable failure (default 3)")
    p.add_argument("--max-retry-after", type=float, default=60.0,
                   help="longest Retry-After honoured, seconds (default 60); beyond it the unit fails")
    p.add_argument("--progress", action="store_true", help="a progress bar on stderr")
    p.add_argument("--json", action="store_true", help="machine-readable summary")


def _group_help(parser: Any) -> int:
    parser.print_help(sys.stderr)
    return 64


def _judges_api() -> Any:
    """``evaltk.judges`` with the extra's modules present, or exit 69 naming the extra (the one
    missing-extra rule: :func:`evaltk._validation.require_extra`)."""
    require_extra("judges", purpose="`evaltk judge`")
    from .. import judges

    return judges


def _run_options(args: Any) -> dict[str, Any]:
    from ._main import CliError

    if args.concurrency < 1 or args.retries < 0 or not args.timeout > 0:
        raise CliError("usage: --concurrency must be >= 1, --retries >= 0 and --timeout > 0", 64)
    return {"concurrency": args.concurrency, "timeout": args.timeout, "retries": args.retries,
            "max_retry_after": args.max_retry_after, "progress": args.progress}


def _write_table(frame: Any, path: Path) -> None:
    if path.suffix.lower() == ".jsonl":
        text = "".join(json.dumps({k: _json_cell(v) for k, v in rec.items()}, ensure_ascii=False) + "\n"
                       for rec in frame.to_dict("records"))
    else:
        text = frame.to_csv(index=False)
    write_text_atomic(path, text)


def _json_cell(v: Any) -> Any:
    import pandas as pd

    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    return v.item() if hasattr(v, "item") else v


def _cli_run(args: Any) -> int:
    from ._main import CliError

    judges = _judges_api()
    model = args.model or os.environ.get("EVALTK_JUDGE_MODEL")
    if not model:
        raise CliError("usage: --model is required (or set EVALTK_JUDGE_MODEL)", 64)
    decoding = _decoding(args)
    price = None
    if (args.price_input is None) != (args.price_output is None):
        raise CliError("usage: give both --price-input and --price-output (US dollars per million tokens)", 64)
    if args.price_input is not None:
        price = judges.Price(args.price_input, args.price_output)
    judge = judges.JudgeConfig(name=args.name or model, model=model, model_version=args.model_version,
                               decoding=decoding, price=price, base_url=args.base_url,
                               api_key_env=args.api_key_env)
    rubric = judges.load_rubric(args.rubric)
    out = Path(args.out)
    cache = None if args.no_cache else (args.cache or str(out) + ".cache.sqlite")
    res = judges.run_judge(args.traces, rubric, judge=judge, cache=cache, **_run_options(args))
    failures = Path(args.failures) if args.failures else out.with_name(out.name + ".failures.csv")
    skipped = out.with_name(out.name + ".skipped.csv")
    _write_table(res.answers, out)
    _write_table(res.failures, failures)
    _write_table(res.skipped, skipped)
    summary = {"judge": judge.name, "measure": rubric.measure, **res.instrument, **res.summary(),
               "answers": str(out), "failures": str(failures), "skipped": str(skipped),
               "cache": cache}
    if args.json:
        print(json_text(summary))
    else:
        s = res.summary()
        print(f"{judge.name} on {rubric.measure} (rubric {rubric.id}, {rubric.digest[:19]}): "
              f"{s['n_answers']} answers ({s['n_cached']} from the cache, {s['n_unreadable']} unreadable), "
              f"{s['n_failed']} failed, {s['n_skipped']} skipped; {s['n_calls']} calls -> {out}")
        for row in res.failures.head(5).itertuples():
            print(f"  failed: {row.trace_id}{'' if row.step is None or str(row.step) == '<NA>' else f' step {row.step}'}"
                  f": {row.reason}", file=sys.stderr)
    return EXIT_CALLS_FAILED if len(res.failures) else 0


def _decoding(args: Any) -> dict[str, Any]:
    from ._main import CliError

    dec: dict[str, Any] = {"temperature": 0}
    if args.decoding:
        try:
            dec = loads_json(args.decoding)
        except UnreadableInput as e:
            raise CliError(f"usage: --decoding is not JSON ({e})", 64) from None
        if not isinstance(dec, dict):
            raise CliError("usage: --decoding must be a JSON object", 64)
    if args.temperature is not None:
        dec["temperature"] = args.temperature
    if args.max_tokens is not None:
        dec["max_tokens"] = args.max_tokens
    return dec


def _cli_sweep(args: Any) -> int:
    import pandas as pd

    from .._io import read_csv_text

    judges = _judges_api()
    candidates = judges.read_judges(args.judges)
    rubric = judges.load_rubric(args.rubric)
    canaries = read_csv_text(args.canaries, required=("trace_id", "passing_answer")) if args.canaries else None
    out = Path(args.out)
    cache = args.cache or str(out / "cache.sqlite")
    res = judges.sweep_judges(args.traces, rubric, candidates, args.labels, canaries=canaries, cache=cache,
                              rng=args.seed, **_run_options(args))
    sel = res.selection
    _write_table(res.answers, out / "answers.csv")
    _write_table(res.failures, out / "failures.csv")
    table = sel.table.copy()
    for c in ("canaries_passed", "dominated_by"):
        table[c] = table[c].map(lambda xs: ";".join(map(str, xs)))
    _write_table(table, out / "selection.csv")
    _write_table(sel.orderings, out / "orderings.csv")
    per_judge = {name: r.summary() for name, r in res.runs.items()}
    if args.json:
        cols = ["judge", "accuracy", "ci_low", "ci_high", "coverage", "n_answered", "n_items", "cost_per_item",
                "latency_p50", "on_frontier", "rejected", "status"]
        rows = [{k: _json_cell(v) for k, v in rec.items()} for rec in sel.table[cols].to_dict("records")]
        print(json_text({"measure": rubric.measure, "rubric_id": rubric.id, "rubric_digest": rubric.digest,
                          "frontier": sel.frontier, "eligible": sel.eligible, "judges": rows,
                          "runs": per_judge, "out": str(out)}))
    else:
        cols = ["judge", "accuracy", "ci_low", "ci_high", "coverage", "cost_per_item", "latency_p50",
                "on_frontier", "status"]
        with pd.option_context("display.width", 200, "display.max_colwidth", 60):
            print(sel.table[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        print(f"eligible: {', '.join(sel.eligible) or '(none)'}; tables in {out}")
        for name, s in per_judge.items():
            if s["n_failed"]:
                print(f"  {name}: {s['n_failed']} calls failed (see {out / 'failures.csv'})", file=sys.stderr)
    return EXIT_CALLS_FAILED if len(res.failures) else 0


def _cli_rubric(args: Any) -> int:
    judges = _judges_api()
    r = judges.load_rubric(args.rubric)
    doc = {"id": r.id, "measure": r.measure, "unit": r.unit, "question": r.question, "answers": list(r.answers),
           "rubric_digest": r.digest, "template_digest": r.template_digest,
           "context": list(judges.UNIT_CONTEXT[r.unit]), "source": r.source}
    if args.json:
        print(json_text(doc))
    else:
        for k, v in doc.items():
            print(f"{k}: {', '.join(v) if isinstance(v, list) else v}")
    return 0
