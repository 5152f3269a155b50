"""``evaltk trajectory``: grade, self-check, seal and digest (a thin layer over :mod:`evaltk.trajectory`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .._io import check_output, json_text, write_json
from ..errors import SchemaViolation, UnreadableInput
from ..trajectory import (
    NEGATIVE_CONTROLS,
    ControlResult,
    DesignNotBound,
    LockChanged,
    MissingCase,
    PostResultLock,
    TrajectoryBindingError,
    UnlockedCase,
    design_digest,
    lock_digest,
    read_json,
    run_grade,
    run_self_check,
    seal_lock,
    sha256_digest,
    validate_document,
)

# --------------------------------------------------------------------------- exit codes

#: ``evaltk trajectory grade``'s exit codes (README "Exit codes", docs/trajectory.md): seed
#: 003's "exits 0 only when every locked case is passed, 2 for an honest graded HOLD, and
#: nonzero on malformed, changed, post-result, missing, or unexpected cohort data".
EXIT_PASS = 0
EXIT_HOLD = 2
EXIT_LOCK_CHANGED = 10
EXIT_POST_RESULT_LOCK = 11
EXIT_MISSING_CASE = 12
EXIT_UNLOCKED_CASE = 13
EXIT_DESIGN_NOT_BOUND = 14

#: A graded cohort's decision -> its code.
COHORT_EXIT = {"pass": EXIT_PASS, "hold": EXIT_HOLD}
#: A binding error -> its code (malformed and unreadable input exit 65 / 66 as everywhere).
BINDING_EXIT: dict[type[TrajectoryBindingError], int] = {
    LockChanged: EXIT_LOCK_CHANGED,
    PostResultLock: EXIT_POST_RESULT_LOCK,
    MissingCase: EXIT_MISSING_CASE,
    UnlockedCase: EXIT_UNLOCKED_CASE,
    DesignNotBound: EXIT_DESIGN_NOT_BOUND,
}


def _binding_exit(error: TrajectoryBindingError) -> int:
    from ._main import EXIT_NEGATIVE

    return BINDING_EXIT.get(type(error), EXIT_NEGATIVE)


def _control_exit(result: ControlResult) -> int:
    """The code ``evaltk trajectory grade`` exits with on what a control observed."""
    from ._main import EXIT_DATAERR, EXIT_NEGATIVE, EXIT_NOINPUT

    if result.error is None:
        return COHORT_EXIT[result.cohort_decision]  # type: ignore[index]  # no error: the cohort decided
    if issubclass(result.error, TrajectoryBindingError):
        return BINDING_EXIT.get(result.error, EXIT_NEGATIVE)
    return EXIT_NOINPUT if issubclass(result.error, UnreadableInput) else EXIT_DATAERR


# --------------------------------------------------------------------------- CLI


def _cmd_grade(args: argparse.Namespace) -> int:
    from ._main import CliError

    try:
        report = run_grade(Path(args.lock), Path(args.results), Path(args.output),
                           None if args.design is None else Path(args.design))
    except TrajectoryBindingError as e:
        raise CliError(str(e).replace("\n", " "), _binding_exit(e)) from None
    code = COHORT_EXIT[report.decision]
    s = report.summary()
    if args.json:
        print(json.dumps(s, sort_keys=True))
    else:
        print(f"{s['cases']} case(s): {s['passed']} passed, {s['safely_abstained']} safely-abstained, "
              f"{s['failed']} failed -> {s['decision']} (exit {code}); report: {args.output}")
    return code


def _expected(i: int) -> dict[str, Any]:
    """What the ``i``-th self-check run (0-based; the last is the final green run) must show."""
    if i >= len(NEGATIVE_CONTROLS):
        return {"cohort_decision": "pass", "error": None, "decision": "passed", "held_by": [],
                "exit": EXIT_PASS}
    c = NEGATIVE_CONTROLS[i]
    if c.raises is not None:
        code = BINDING_EXIT.get(c.raises, 1) if issubclass(c.raises, TrajectoryBindingError) else (
            66 if issubclass(c.raises, UnreadableInput) else 65)
        return {"cohort_decision": None, "error": c.raises.__name__, "message": c.message,
                "exit": code}
    return {"cohort_decision": "hold", "error": None, "decision": c.decision,
            "held_by": list(c.held_by), "exit": EXIT_HOLD}


def _observed(r: ControlResult) -> dict[str, Any]:
    if r.error is not None:
        return {"cohort_decision": None, "error": r.error.__name__, "message": r.message,
                "exit": _control_exit(r)}
    return {"cohort_decision": r.cohort_decision, "error": None, "decision": r.decision,
            "held_by": list(r.held_by), "exit": _control_exit(r)}


def _cmd_self_check(args: argparse.Namespace) -> int:
    results = run_self_check()
    n = len(NEGATIVE_CONTROLS)
    bad = [r.name for r in results if not r.ok]
    if args.json:
        rows = [{"name": r.name, "kind": "negative control" if i < n else "final run",
                 "expected": _expected(i), "observed": _observed(r), "passed": r.ok}
                for i, r in enumerate(results)]
        print(json_text({"passed": not bad, "controls": rows}))
        return 1 if bad else 0
    for i, r in enumerate(results, 1):
        label = f"control {i:2d}/{n}" if i <= n else "final run  "
        print(f"{label} {r.name:<30} {r.describe()} (exit {_control_exit(r)})")
    if bad:
        print(f"self-check FAILED: {', '.join(bad)}", file=sys.stderr)
        return 1
    print(f"self-check passed: {n} controls red for the right reason, final run green")
    return 0


def _cmd_seal(args: argparse.Namespace) -> int:
    from ._main import CliError

    check_output(args.output, [args.draft, args.design])
    draft = read_json(args.draft)
    if not isinstance(draft, dict) or not isinstance(draft.get("cases"), dict):
        raise SchemaViolation("a lock draft must be an object with `cases`", file=args.draft, field="cases")
    if args.design is not None:
        draft["design_digest"] = design_digest(read_json(args.design))
    lock = seal_lock(draft)
    validate_document(lock, "lock", file=args.draft)
    if set(lock["case_inventory"]) != set(lock["cases"]):
        raise CliError(f"{args.draft}: `case_inventory` and `cases` differ", 65)
    write_json(check_output(args.output, [args.draft, args.design]), lock)
    if args.json:
        print(json_text({"output": args.output, "cases": len(lock["cases"]),
                          "lock_digest": lock["lock_digest"]}))
    else:
        print(f"sealed {len(lock['cases'])} case(s): lock_digest {lock['lock_digest']}")
    return 0


def _cmd_digest(args: argparse.Namespace) -> int:
    doc = read_json(args.file)
    if args.lock:
        if not isinstance(doc, dict):
            raise SchemaViolation("a lock must be an object", file=args.file)
        digest = lock_digest(doc)
    else:
        digest = sha256_digest(doc)
    if args.json:
        print(json_text({"file": args.file, "kind": "lock" if args.lock else "document",
                          "digest": digest}))
    else:
        print(digest)
    return 0


def register_cli(subparsers: Any) -> None:
    """Add ``evaltk trajectory grade`` and ``evaltk trajectory self-check``."""
    p = subparsers.add_parser(
        "trajectory", help="grade long-horizon agent trajectories against a pre-result lock",
        description="Grade long-horizon trajectories (seed 003) on eight fail-closed dimensions.",
        epilog="Example: evaltk trajectory grade --lock data/examples/trajectory/lock.json "
               "--results data/examples/trajectory/results-pass.json --output out/report.json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="trajectory_command", metavar="SUBCOMMAND")
    g = sub.add_parser(
        "grade", help="grade a locked cohort and write the report",
        description=(
            "Exit codes: 0 every locked case passed; 2 honest hold (some case failed or safely "
            "abstained, all data valid); 10 lock or design digest changed; 11 lock not strictly before "
            "the results; 12 locked case missing from the results; 13 unlocked case in the results; "
            "14 no design record (neither --design nor design.json beside the lock): grading binds the "
            "design digest; "
            "65 malformed input (schema violation); 66 unreadable input (missing file, not JSON); "
            "64 usage error."),
        epilog="Example: evaltk trajectory grade --lock data/examples/trajectory/lock.json "
               "--results data/examples/trajectory/results-hold.json --output out/report.json "
               "--design data/examples/trajectory/design.json --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    g.add_argument("--lock", required=True, help="the lock (trajectory-lock.schema.json)")
    g.add_argument("--results", required=True, help="the results (trajectory-results.schema.json)")
    g.add_argument("--output", required=True, help="where to write the report")
    g.add_argument("--design", help="the design record whose digest the lock binds (default: design.json "
                                    "beside the lock; without one, exit 14)")
    g.add_argument("--json", action="store_true", help="print the cohort summary as JSON")
    g.set_defaults(func=_cmd_grade)
    s = sub.add_parser(
        "self-check", help="run the fourteen negative controls and a final green run",
        description="Plant each of the fourteen failures of seed 003 into a green synthetic cohort, "
                    "grade it, and check it is red for the right reason; then grade the unmodified "
                    "cohort, which must pass.  Exit 0 every control as expected, 1 otherwise.",
        epilog="Example: evaltk trajectory self-check --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--json", action="store_true",
                   help="each control's name, expected and observed outcome, and whether it passed")
    s.set_defaults(func=_cmd_self_check)
    z = sub.add_parser(
        "seal", help="fill in a lock draft's case inventory, case-policy digest and lock digest",
        description="Seal a lock before any result exists: fills `case_inventory` (when absent), "
                    "`case_policy_digest`, `lock_digest` and, with --design, `design_digest`; "
                    "validates the sealed lock against trajectory-lock.schema.json.",
        epilog="Example: evaltk trajectory seal data/examples/trajectory/lock.json "
               "--design data/examples/trajectory/design.json --output out/lock.json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    z.add_argument("draft", help="the lock draft (JSON)")
    z.add_argument("--output", required=True, help="where to write the sealed lock")
    z.add_argument("--design", help="the design record whose digest the lock binds")
    z.add_argument("--json", action="store_true", help="print the output, case count and lock digest as JSON")
    z.set_defaults(func=_cmd_seal)
    h = sub.add_parser(
        "digest", help="print the canonical SHA-256 of a JSON document (or of a lock, --lock)",
        epilog="Example: evaltk trajectory digest data/examples/trajectory/lock.json --lock --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_argument("file")
    h.add_argument("--lock", action="store_true",
                   help="digest the document without its `lock_digest` key (the lock's own digest)")
    h.add_argument("--json", action="store_true", help="print the file, kind and digest as JSON")
    h.set_defaults(func=_cmd_digest)

    def _no_sub(args: argparse.Namespace) -> int:
        from ._main import EXIT_USAGE

        p.print_help(sys.stderr)
        return EXIT_USAGE

    p.set_defaults(func=_no_sub)
