"""``evaltk import inspect|otel``: other tools' records in, evaltk's trace, answer and suite
files out (a thin layer over :func:`evaltk.ingest.import_inspect` / :func:`evaltk.ingest.import_otel`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .._validation import require_extra
from ..errors import InputError
from ..ingest import (
    INSPECT_EXTRA,
    Imported,
    check_import_paths,
    import_inspect,
    import_otel,
    read_action_policy,
    write_import,
)

_EXIT_TEXT = ("Exit codes: 0 imported (dropped records are listed in the ledger, not errors); 1 no complete "
              "run among the inputs (the ledger says why); 64 usage "
              "(--out is one of the inputs, a file, or a folder holding files an import does not write: pass "
              "--overwrite); 65 a policy file that is not a policy; 66 an input that cannot be read; 69 the "
              "inspect extra is not installed (import inspect).")


def register_cli(subparsers: Any) -> None:
    """Add ``evaltk import inspect`` and ``evaltk import otel``."""
    p = subparsers.add_parser(
        "import", help="import inspect_ai logs or OpenTelemetry spans as evaltk traces, answers and a suite run",
        description="Write evaltk's trace, answer and suite files with a ledger from another tool's records, "
                    "so every evaltk command (and `evaltk report --data DIR`) runs on them.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples:\n  evaltk import inspect logs/*.eval --policy policy.yaml --out imported/\n"
               "  evaltk import otel spans.jsonl --policy policy.yaml --out imported/\n"
               "  evaltk report --data imported/\n\n" + _EXIT_TEXT)
    sub = p.add_subparsers(dest="source", metavar="SOURCE", parser_class=type(p))
    pi = sub.add_parser(
        "inspect", help="inspect_ai eval logs (.eval, .json)", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Each sample x epoch becomes a run, each sample a suite task and each epoch a trial; "
                    "the chosen score is the trial score and model-graded scores become judge answers "
                    "(x_task, with the grader model). Errored and cancelled samples are dropped with their "
                    "reason in the ledger. Mapping: docs/import-inspect.md. Needs the extra "
                    f"`pip install 'evaltk[{INSPECT_EXTRA}]'`.",
        epilog="Example: evaltk import inspect data/examples/import/refunds.eval --policy "
               "data/examples/import/policy.yaml --out out/imported --json\n"
               "Then: evaltk report --data out/imported\n\n" + _EXIT_TEXT)
    pi.add_argument("logs", nargs="+", metavar="LOG", help="inspect_ai eval logs")
    pi.add_argument("--scorer", default=None, help="the score that is each trial's score (default: the first)")
    pi.add_argument("--pass-score", type=float, default=1.0,
                    help="passScore: a trial passes at a score >= this (default 1, as inspect_ai's pass_at)")
    pi.add_argument("--k", type=int, default=None, help="the k of pass@k and pass^k (default: the number of epochs)")
    po = sub.add_parser(
        "otel", help="OpenTelemetry spans (OTLP JSON, SDK span JSON lines)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="One trace id is one run; agent and tool spans (GenAI or OpenInference attributes) are "
                    "its steps in start order; every attribute is kept; an unfinished trace is an in-progress "
                    "run. Mapping: docs/import-otel.md.",
        epilog="Example: evaltk import otel data/examples/import/otlp.json "
               "--policy data/examples/import/policy.yaml --out out/spans --json\n\n" + _EXIT_TEXT)
    po.add_argument("files", nargs="+", metavar="FILE", help="span files")
    for q in (pi, po):
        q.add_argument("--policy", default=None, metavar="F",
                       help="action policy (YAML or JSON): tool-name patterns -> consequential / "
                            "needs_confirmation; without it x_safe is not_implemented")
        q.add_argument("--out", required=True, metavar="DIR", help="output folder")
        q.add_argument("--json", action="store_true", help="print import.json (counts, inputs) on stdout")
        q.add_argument("--overwrite", action="store_true",
                       help="write into a folder that holds other files too (the import's files replace those "
                            "of the same name; docs/outputs.md)")
    pi.set_defaults(func=_cmd_inspect)
    po.set_defaults(func=_cmd_otel)
    p.set_defaults(func=lambda args: _usage(p))


def _usage(p: argparse.ArgumentParser) -> int:
    from ._main import EXIT_USAGE, CliError

    p.print_usage(sys.stderr)
    raise CliError("usage: name the source: evaltk import inspect LOG... or evaltk import otel FILE...", EXIT_USAGE)


def _checked(inputs: list[str], args: argparse.Namespace) -> Any:
    # refused (OutputRefused, exit 64) before anything is read: the one output rule (docs/outputs.md)
    check_import_paths([*inputs, *([args.policy] if args.policy else [])], args.out, overwrite=args.overwrite)
    return read_action_policy(args.policy) if args.policy else None


def _cmd_inspect(args: argparse.Namespace) -> int:
    from ._main import EXIT_USAGE, CliError

    # the one missing-extra rule: MissingExtra, exit 69 as every command, before anything is read or written
    require_extra(INSPECT_EXTRA, purpose="`evaltk import inspect`")
    policy = _checked(args.logs, args)
    try:
        imp = import_inspect(args.logs, policy=policy, scorer=args.scorer, pass_score=args.pass_score, k=args.k)
    except InputError:
        raise
    except ValueError as e:  # --k or --pass-score out of range
        raise CliError(f"usage: {e}", EXIT_USAGE) from None
    return _write(imp, args)


def _cmd_otel(args: argparse.Namespace) -> int:
    return _write(import_otel(args.files, policy=_checked(args.files, args)), args)


def _write(imp: Imported, args: argparse.Namespace) -> int:
    paths = write_import(imp, args.out, overwrite=args.overwrite)
    manifest = paths["manifest"].read_text(encoding="utf-8")
    c = json.loads(manifest)["counts"]
    code = 0 if c["runs"] else 1
    if not c["runs"]:
        print(f"evaltk import: no complete run among the inputs; see {paths['ledger']}", file=sys.stderr)
    if args.json:
        print(manifest, end="")
        return code
    print(f"{c['ledger_records']} records: {c['kept']} kept, {c['dropped']} dropped; {c['runs']} runs "
          f"({c['in_progress_runs']} in progress), {c['answers']} answers, {c['suite_tasks']} suite tasks; "
          f"wrote {args.out}")
    for r in imp.ledger[imp.ledger["status"] == "dropped"].head(20).itertuples(index=False):
        print(f"  {r.source}:{r.record}: {r.kind}: {r.reason}")
    if imp.policy is None:
        print("  no --policy: consequential steps are not declared, so x_safe is not_implemented on every run")
    return code
