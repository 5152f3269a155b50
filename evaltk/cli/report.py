"""The ``evaltk`` command-line layer for ``evaltk.report``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ..report import (
    NOTEBOOKS,
    NotebookFailure,
    ReportFailed,
    render_report,
)

# --------------------------------------------------------------------------- CLI

_INPUT_ERRORS = {"InputError", "SchemaViolation", "ValueError", "TypeError", "KeyError"}
_UNREADABLE_ERRORS = {"UnreadableInput", "FileNotFoundError", "IsADirectoryError", "PermissionError",
                      "UnicodeDecodeError"}


def _exit_code(failures: Sequence[NotebookFailure]) -> int:
    """65 when every failure is bad input, 66 when one is unreadable input, else 70 (a bug)."""
    from ._main import EXIT_DATAERR, EXIT_NOINPUT, EXIT_SOFTWARE

    names = {f.error_name for f in failures}
    if names & _UNREADABLE_ERRORS and names <= _UNREADABLE_ERRORS | _INPUT_ERRORS:
        return EXIT_NOINPUT
    if names <= _INPUT_ERRORS:
        return EXIT_DATAERR
    return EXIT_SOFTWARE


def register_cli(subparsers: Any) -> None:
    """Add ``evaltk report``."""
    p = subparsers.add_parser(
        "report",
        help="execute the notebooks and write reports/<week>/index.html",
        description=(
            "Execute the parameterised notebooks with papermill and render code-free HTML "
            "(charts as SVG, readable offline) into OUT/<week>/: index.html (the weekly summary) "
            "and one page per notebook, plus run.json (parameters, evaltk version, SHA-256 of inputs)."
        ),
        epilog=(
            "Examples:\n"
            "  evaltk report                                  # demo data, current week\n"
            "  evaltk report --week 2026-W48 --data ../shared/data --out reports/\n"
            "  evaltk report --params params.yaml --only calibration weekly\n"
            "  evaltk report --scored scored/                 # the week from `evaltk scale score --out scored/`\n\n"
            "Exit codes: 0 every notebook ran; 64 usage; 65 invalid parameters or data (also when a\n"
            "notebook stops on an InputError, and a --scored dataset without its completion record\n"
            "_complete.json: the message names the partitions done and missing); 66 unreadable input\n"
            "(also a --scored path that is not a scored dataset); 70 a notebook failed otherwise\n"
            "(a bug). A failure names the notebook, the cell and the error."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--week", default=None, help="ISO week YYYY-Www (default: the current week)")
    p.add_argument("--data", default=None, metavar="DIR", help="data folder (default: the embedded demo data)")
    p.add_argument("--scored", default=None, metavar="DIR",
                   help="a scored dataset (the --out of `evaltk scale score`: a folder or an fsspec URL such as "
                        "s3://bucket/scored): the weekly page's scores, coverage, agents and verdicts, and the "
                        "calibration and direction-of-error pages' sections on this week's runs, come from its "
                        "per-partition summaries, without loading score rows")
    p.add_argument("--params", default=None, metavar="FILE", help="YAML or JSON file of notebook parameters")
    p.add_argument("--out", default="reports", metavar="DIR", help="output root (default: reports/)")
    p.add_argument("--only", nargs="+", default=None, metavar="NOTEBOOK", choices=NOTEBOOKS,
                   help=f"run only these notebooks ({', '.join(NOTEBOOKS)})")
    p.add_argument("--json", action="store_true", help="print run.json on stdout at the end")
    p.set_defaults(func=_cli_report)


def _cli_report(args: argparse.Namespace) -> int:
    def say(msg: str) -> None:
        print(f"evaltk report: {msg}", file=sys.stderr, flush=True)

    try:
        index = render_report(week=args.week, data=args.data, params=args.params, out=args.out,
                              notebooks=args.only, progress=say, scored=args.scored)
    except ReportFailed as e:  # each failure once (the progress lines only say FAILED)
        for f in e.failures:
            print(f"evaltk: {f}", file=sys.stderr)
        print(f"evaltk: the pages of the failed notebooks show the error; see {e.out_dir / 'run.json'}",
              file=sys.stderr)
        if args.json:
            print((e.out_dir / "run.json").read_text(encoding="utf-8"))
        return _exit_code(e.failures)
    say(f"done: {index}")
    if args.json:
        print((index.parent / "run.json").read_text(encoding="utf-8"))
    return 0
