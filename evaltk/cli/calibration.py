"""The ``evaltk`` command-line layer for the calibration functions of ``evaltk.judges``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._io import json_text, read_csv_text, read_json
from ..data import load_alt_test_annotations
from ..errors import SchemaViolation
from ..judges import (
    CALIBRATION_LEVELS,
    agentrewardbench_ceiling,
    alt_test,
    human_ceiling,
)
from ..values import ABSTAIN_WORDS, MEASURE_LEVELS

# --------------------------------------------------------------------------- CLI


def register_cli(subparsers: Any) -> None:
    """``evaltk calibration ceiling | alt-test | agentrewardbench``."""
    import argparse

    group = subparsers.add_parser(
        "calibration",
        help="human ceiling and the alternative annotator test",
        description="Calibration against humans: human-human agreement with intervals (ceiling) and the "
                    "alternative annotator test (alt-test).",
        epilog="Example: evaltk calibration ceiling data/examples/agreement/ratings.csv --level nominal --abstain cannot_tell",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = group.add_subparsers(dest="calibration_command", metavar="SUBCOMMAND",
                               parser_class=type(group))
    group.set_defaults(func=lambda args: _cli_group_help(group))

    p = sub.add_parser(
        "alt-test",
        help="alternative annotator test: can a judge replace the human annotators?",
        description="Leave-one-annotator-out alt-test (Calderon, Reichart and Dror 2025). Exit 0 when the "
                    "judge passes (winning rate >= 0.5), 1 when it does not.",
        epilog="Example: evaltk calibration alt-test data/examples/alttest/human_annotations.json data/examples/alttest/llm_annotations.json "
               "--judge judge-a --metric accuracy --epsilon 0.2 --min-items 10 --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("humans", help="JSON {annotator: {item: label}}")
    p.add_argument("judges", help="JSON {judge: {item: label}} (or {item: label} with --single)")
    p.add_argument("--judge", action="append", help="judge name(s) to test (default: all)")
    p.add_argument("--single", action="store_true", help="the judges file is one judge's {item: label}")
    p.add_argument("--metric", default="accuracy", choices=["accuracy", "neg_rmse"])
    p.add_argument("--epsilon", type=float, default=0.2)
    p.add_argument("--q", type=float, default=0.05)
    p.add_argument("--min-items", type=int, default=30)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cli_alt_test)

    c = sub.add_parser(
        "ceiling",
        help="human-human agreement on multiply-labelled items, with 95%% intervals",
        description="Human ceiling from a long CSV (item, rater, rating). Abstentions (by default the "
                    "vocabulary's abstain words: cannot tell, Unsure, ...) are excluded and counted.",
        epilog="Example: evaltk calibration ceiling data/examples/agreement/ratings.csv --item item_id --rater rater --rating rating "
               "--level nominal --abstain cannot_tell --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("csv", help="long CSV: one row per (item, rater)")
    c.add_argument("--item", default="item_id")
    c.add_argument("--rater", default="rater")
    c.add_argument("--rating", default="rating")
    lv = c.add_mutually_exclusive_group(required=True)  # a level of measurement is declared, never defaulted
    lv.add_argument("--level", choices=list(CALIBRATION_LEVELS), help="level of measurement of the ratings")
    lv.add_argument("--measure", choices=list(MEASURE_LEVELS),
                    help="an evaltk measure: its vocabulary's level and ordered words")
    c.add_argument("--categories", nargs="+", help="declared domain (ordinal: lowest first)")
    c.add_argument("--abstain", nargs="*", default=None,
                   help="labels meaning 'declined' (counted); default: the vocabulary's abstain words "
                        "(cannot tell, Unsure, ...); --abstain with no label: none")
    c.add_argument("--confidence-level", type=float, default=0.95)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=_cli_ceiling)

    a = sub.add_parser(
        "agentrewardbench",
        help="human ceiling of AgentRewardBench's four questions on its double-annotated trajectories",
        description="Reads AgentRewardBench's annotations.csv; 'Unsure' is an abstention, excluded and counted.",
        epilog="Example: evaltk calibration agentrewardbench ../shared/data/agentrewardbench/annotations.csv\n"
               "(needs the shared AgentRewardBench data beside the clone; see docs/datasets.md)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_argument("csv", help="annotations.csv")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--json", action="store_true")
    a.set_defaults(func=_cli_agentrewardbench)


def _cli_group_help(parser: Any) -> int:
    import sys

    parser.print_help(sys.stderr)
    return 64


def _cli_alt_test(args: Any) -> int:
    import sys

    humans = load_alt_test_annotations(args.humans)
    judges_raw = load_alt_test_annotations(args.judges) if not args.single else None
    if args.single:
        p = Path(args.judges)
        one = read_json(p)  # strict: a repeated item key is refused, not silently overwritten
        if not isinstance(one, dict):
            raise SchemaViolation("expected an object {item: label}", file=str(p))
        judges = {"judge": one}
    else:
        assert judges_raw is not None
        judges = judges_raw
    names = args.judge or list(judges)
    for n in names:
        if n not in judges:
            from ._main import CliError

            raise CliError(f"judge {n!r} is not in {args.judges} (has: {', '.join(map(str, judges))})", 64)
    out = []
    for n in names:
        r = alt_test(humans, judges[n], metric=args.metric, epsilon=args.epsilon, q=args.q,
                     min_items=args.min_items)
        out.append({"judge": n, "winning_rate": r.winning_rate, "advantage_probability": r.advantage_probability,
                    "passed": r.passed, "n_annotators_tested": len(r.per_annotator),
                    "n_annotators_skipped": len(r.skipped)})
    if args.json:
        print(json_text({"epsilon": args.epsilon, "q": args.q, "metric": args.metric, "results": out}))
    else:
        for o in out:
            print(f"{o['judge']}: {'PASSED' if o['passed'] else 'FAILED'}  winning rate {o['winning_rate']:.2f}  "
                  f"advantage probability {o['advantage_probability']:.2f}  "
                  f"({o['n_annotators_tested']} annotators tested, {o['n_annotators_skipped']} skipped)",
                  file=sys.stdout)
    return 0 if all(o["passed"] for o in out) else 1


def _cli_agentrewardbench(args: Any) -> int:
    frame = agentrewardbench_ceiling(args.csv, rng=args.seed)
    if args.json:
        print(frame.to_json(orient="records", indent=2))
    else:
        cols = ["question", "statistic_name", "statistic", "ci_low", "ci_high", "interval_method",
                "n_pairable", "n_multiply_labelled", "n_ratings_abstained"]
        print(frame[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


def _cli_ceiling(args: Any) -> int:
    df = read_csv_text(args.csv, required=(args.item, args.rater, args.rating))
    df[args.rating] = df[args.rating].str.strip()
    abstain = [*(ABSTAIN_WORDS if args.abstain is None else args.abstain), ""]
    r = human_ceiling(df, item=args.item, rater=args.rater, rating=args.rating, level=args.level,
                      measure=args.measure,
                      categories=args.categories, abstain=abstain, confidence_level=args.confidence_level,
                      rng=args.seed)
    if not r.defined:
        from ._main import CliError

        raise CliError(f"{args.csv}: no human ceiling: {r.statistic.reason}", 1)  # type: ignore[union-attr]  # undefined: an Abstention
    frame = r.to_frame()
    if args.json:
        print(frame.to_json(orient="records", indent=2))
    else:
        print(frame.to_string(index=False))
    return 0
