"""``evaltk suite``: summarize, gate and check (a thin layer over :mod:`evaltk.suite`)."""

from __future__ import annotations

from typing import Any

from .._io import check_output, json_text, removed_on_failure, write_json, write_jsonl
from ..suite import (
    check_summary,
    gate_summary,
    load_suite_run,
    scored_events,
    summarize_suite,
)

# --------------------------------------------------------------------------- CLI


def _cmd_summarize(args: Any) -> int:
    if args.out:
        check_output(args.out, [args.run])
    if args.events:
        check_output(args.events, [args.run, args.out])
    with removed_on_failure(args.out, args.events):  # a failed run leaves no earlier summary behind
        summary = summarize_suite(load_suite_run(args.run))
        doc = summary.to_dict()
        if args.out:
            write_json(args.out, doc)
        if args.events:
            write_jsonl(args.events, scored_events(summary))
    if args.json or not args.out:
        print(json_text(doc, allow_nan=False))
    else:
        state = "passed" if summary.passed else "NOT passed"
        print(f"{summary.run.suite}: {state}; wrote {args.out}")
        for r in summary.reasons:
            print(f"  {r}")
    return 0


def _cmd_gate(args: Any) -> int:
    decision = gate_summary(args.summary)
    if args.json:
        print(json_text(decision.to_dict()))
    else:
        print("PASSED" if decision.passed else "NOT PASSED")
        for r in decision.reasons:
            print(f"  {r}")
    return 0 if decision.passed else 1


def _cmd_check(args: Any) -> int:
    violations = check_summary(args.run, args.summary, events=args.events)
    if args.json:
        print(json_text({"conforms": not violations, "violations": [x.to_dict() for x in violations]},
                        default=str))
    elif violations:
        print(f"{len(violations)} RFC 0246 violation(s) in {args.summary}:")
        for x in violations:
            print(f"  {x}")
    else:
        print(f"{args.summary} conforms to RFC 0246 for {args.run}")
    return 1 if violations else 0


def register_cli(subparsers: Any) -> None:
    """Register ``evaltk suite summarize | gate | check``."""
    import argparse

    p = subparsers.add_parser(
        "suite", help="suite gating (RFC 0246): summarize a run, gate on a summary, check a host's summary",
        description="Suite gating under RFC 0246. Exit codes: 0 ok / passed / conforms, 1 not passed or "
                    "violations, 64 usage, 65 invalid input, 66 unreadable input.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples:\n  evaltk suite summarize data/examples/suite/run.json --out summary.json "
               "--events events.jsonl\n  evaltk suite gate data/examples/suite/summary.json\n"
               "  evaltk suite check data/examples/suite/run.json data/examples/suite/summary.json")
    sub = p.add_subparsers(dest="suite_command", metavar="SUBCOMMAND")
    s = sub.add_parser("summarize", help="compute the EvalSummary of a suite run",
                       description="Compute the RFC 0246 EvalSummary of a suite run (JSON or YAML). "
                                   "Exit 0 when summarised (whether or not the suite passed).",
                       epilog="Example: evaltk suite summarize data/examples/suite/run.json "
                              "--out out/summary.json --events out/events.jsonl --json",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("run", help="suite run, .json / .yaml")
    s.add_argument("--out", help="write the EvalSummary JSON here (stdout when omitted)")
    s.add_argument("--events", help="write per-trial eval.scored events here (JSONL)")
    s.add_argument("--json", action="store_true", help="print the summary JSON on stdout too")
    s.set_defaults(func=_cmd_summarize)
    g = sub.add_parser("gate", help="exit 0 when a summary passed, 1 when not (with why)",
                       description="Read an EvalSummary and decide: exit 0 passed, 1 not passed "
                                   "(also when the summary contradicts its own passed flag).",
                       epilog="Example: evaltk suite gate data/examples/suite/summary.json --json",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    g.add_argument("summary", help="EvalSummary JSON")
    g.add_argument("--json", action="store_true", help="machine-readable output")
    g.set_defaults(func=_cmd_gate)
    c = sub.add_parser("check", help="check a host's summary of a run against RFC 0246",
                       description="List every RFC 0246 violation in a host's summary of a run. "
                                   "Exit 0 conforms, 1 violations.",
                       epilog="Example: evaltk suite check data/examples/suite/run.json "
                              "data/examples/suite/summary.json --events data/examples/suite/events.jsonl "
                              "--json",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("run", help="suite run the host graded, .json / .yaml")
    c.add_argument("summary", help="the host's EvalSummary JSON")
    c.add_argument("--events", help="the host's eval.scored events (JSONL), checked too")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(func=_cmd_check)

    def _no_sub(args: Any) -> int:
        import sys

        p.print_help(sys.stderr)
        from ._main import EXIT_USAGE, CliError

        raise CliError("usage: evaltk suite needs a subcommand: summarize, gate or check", EXIT_USAGE)

    p.set_defaults(func=_no_sub)

