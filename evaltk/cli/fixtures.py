"""``evaltk fixtures``: validate, list, seen and retire (a thin layer over :mod:`evaltk.fixtures`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._io import json_text
from ..errors import InputError
from ..fixtures import (
    ERROR,
    Finding,
    load_suite,
    record_seen,
    retire,
    validate_suite,
)

# --------------------------------------------------------------------------- CLI


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and v != v:
        return None
    return v


def _cmd_validate(args: Any) -> int:
    from ._main import EXIT_NEGATIVE, EXIT_OK

    root = args.root if args.root is not None else getattr(args, "suite", None)
    if root is None:
        from ._main import EXIT_USAGE, CliError
        raise CliError("usage: evaltk fixtures validate ROOT", EXIT_USAGE)
    report = validate_suite(root, journey=args.journey)
    if args.json:
        print(json_text(report.to_dicts(warnings=args.warnings), ensure_ascii=False))
    else:
        for f in report.findings:
            if f.severity == ERROR or args.warnings:
                print(_display(f, report.root))
        n_err, n_warn = len(report.errors), len(report.warnings)
        status = "valid" if report.valid else "INVALID"
        warn = f", {n_warn} warning(s)" + ("" if args.warnings else " (show with --warnings)") \
            if n_warn else ""
        print(f"{report.root}: {report.n_fixtures} fixture(s), {n_err} error(s){warn}: {status}")
        for key, counts in report.composition.items():
            if counts:
                print(f"  by {key}: " + ", ".join(f"{k} {n}" for k, n in counts.items()))
        print("  answer kinds: " + ", ".join(f"{k} {n}" for k, n in report.answer_kinds.items()))
    return EXIT_OK if report.valid else EXIT_NEGATIVE


def _display(f: Finding, root: str) -> str:
    s = str(f)
    return s if f.file.startswith("/") else f"{Path(root, f.file).as_posix()}{s[len(f.file):]}"


def _cmd_list(args: Any) -> int:
    frame = load_suite(args.root, journey=args.journey)
    cols = ["id", "kind", "class", "boundary", "visibility", "journey_path", "path", "valid"]
    if args.json:
        recs = [{k: _jsonable(v) for k, v in row.items()}
                for row in frame.to_dict(orient="records")]
        print(json_text(recs, ensure_ascii=False, default=str))
    elif frame.empty:
        print("no fixtures")
    else:
        print(frame[cols].fillna("-").to_string(index=False))
    return 0


def _cmd_seen(args: Any) -> int:
    from ._main import EXIT_USAGE, CliError

    try:
        rec = record_seen(args.root, args.id, by=args.by, at=args.at)
    except InputError as e:
        if e.field in ("id", "by", "at"):
            raise CliError(str(e), EXIT_USAGE) from None
        raise
    msg = f"recorded: {rec['id']} seen by {rec['by']} at {rec['at']}"
    if rec.get("visibility") == "holdout":
        msg += (f"; it is a holdout fixture and is no longer an honest holdout: run "
                f"`evaltk fixtures retire {rec['id']} --reason TEXT`")
    print(msg)
    return 0


def _cmd_retire(args: Any) -> int:
    from ._main import EXIT_NEGATIVE, EXIT_USAGE, CliError

    try:
        rec = retire(args.root, args.id, reason=args.reason, by=args.by, at=args.at)
    except InputError as e:
        if e.field == "visibility":
            raise CliError(str(e), EXIT_NEGATIVE) from None
        if e.field in ("id", "reason", "at"):
            raise CliError(str(e), EXIT_USAGE) from None
        raise
    print(f"retired: {rec['id']} is now public ({rec['reason']})")
    return 0


def _cmd_fixtures(args: Any) -> int:
    from ._main import EXIT_USAGE, CliError

    if args.suite is None:
        raise CliError("usage: evaltk fixtures {validate,list,seen,retire} ... "
                       "(or evaltk fixtures --suite ROOT --validate-only)", EXIT_USAGE)
    args.root = args.suite
    args.json = args.suite_json
    args.journey = args.suite_journey
    args.warnings = args.suite_warnings
    return _cmd_validate(args)


def register_cli(subparsers: Any) -> None:
    """Register ``evaltk fixtures {validate,list,seen,retire}``."""
    import argparse

    fmt = argparse.RawDescriptionHelpFormatter
    p = subparsers.add_parser(
        "fixtures", help="validate and list evaluation task fixtures; holdout ledger",
        description="Evaluation task fixtures (task.yaml): validation, listing, holdout hygiene.",
        epilog="Examples:\n  evaltk fixtures validate data/examples/fixtures\n"
               "  evaltk fixtures list data/examples/fixtures --json\n"
               "  evaltk fixtures seen untangle-billing-module --by alice --root SUITE\n"
               "  evaltk fixtures retire untangle-billing-module --reason 'shown in review' "
               "--root SUITE\nExit codes: 0 valid, 1 a fixture is invalid, 64 usage, "
               "66 unreadable root.",
        formatter_class=fmt)
    p.add_argument("--suite", default=None, help="seed-style alias: validate this suite")
    p.add_argument("--validate-only", action="store_true", help="with --suite: only validate")
    p.add_argument("--journey", dest="suite_journey", default=None, metavar="JOURNEY",
                   help="with --suite: journey document")
    p.add_argument("--json", dest="suite_json", action="store_true",
                   help="with --suite: findings as a JSON list")
    p.add_argument("--warnings", dest="suite_warnings", action="store_true",
                   help="with --suite: also show warnings")
    p.set_defaults(func=_cmd_fixtures)
    sub = p.add_subparsers(dest="fixtures_command", metavar="SUBCOMMAND",
                           parser_class=type(p))

    v = sub.add_parser(
        "validate", help="check every task.yaml and the suite rules (exit 1 when invalid)",
        description="Check every fixture under ROOT/fixtures (or ROOT) and report every problem.",
        epilog="Example: evaltk fixtures validate data/examples/fixtures --json\n"
               "Exit codes: 0 valid, 1 a fixture is invalid, 65 bad journey, 66 unreadable.",
        formatter_class=fmt)
    v.add_argument("root", nargs="?", default=None, help="suite folder or its fixtures folder")
    v.add_argument("--journey", default=None,
                   help="journey document (Markdown `N: Phase Name` lines or YAML `phases:`)")
    v.add_argument("--json", action="store_true", help="print the findings as a JSON list")
    v.add_argument("--warnings", action="store_true", help="also show warnings")
    v.add_argument("--validate-only", action="store_true",
                   help="accepted for the seed's runner; validation is all this command does")
    v.set_defaults(func=_cmd_validate)

    ls = sub.add_parser("list", help="one line per fixture", formatter_class=fmt,
                        epilog="Example: evaltk fixtures list data/examples/fixtures --json")
    ls.add_argument("root")
    ls.add_argument("--journey", default=None)
    ls.add_argument("--json", action="store_true", help="print JSON records")
    ls.set_defaults(func=_cmd_list)

    s = sub.add_parser("seen", help="record in the holdout ledger that someone saw a fixture",
                       formatter_class=fmt,
                       epilog="Example: cp -r data/examples/fixtures out-suite && evaltk fixtures seen "
                              "untangle-billing-module --by alice --root out-suite")
    s.add_argument("id")
    s.add_argument("--by", required=True, help="who saw it")
    s.add_argument("--root", default=".", help="suite folder (default: current folder)")
    s.add_argument("--at", default=None, help="ISO 8601 time (default: now, UTC)")
    s.set_defaults(func=_cmd_seen)

    r = sub.add_parser("retire", help="move a holdout fixture to public and record why",
                       formatter_class=fmt,
                       epilog="Example: cp -r data/examples/fixtures out-suite && evaltk fixtures retire "
                              "untangle-billing-module --reason 'pasted in a PR' --root out-suite")
    r.add_argument("id")
    r.add_argument("--reason", required=True)
    r.add_argument("--by", default=None)
    r.add_argument("--root", default=".", help="suite folder (default: current folder)")
    r.add_argument("--at", default=None, help="ISO 8601 time (default: now, UTC)")
    r.set_defaults(func=_cmd_retire)
