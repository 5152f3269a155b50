"""The ``evaltk`` command-line layer for the demo corpus of ``evaltk.data``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .._io import check_output, json_text
from ..data import (
    DEMO_FILES,
    make_demo,
    write_demo,
)

# --------------------------------------------------------------------------- CLI


def register_cli(subparsers: Any) -> None:
    """``evaltk demo OUT [--n-traces N] [--seed S] [--json]``: write the demo corpus."""
    p = subparsers.add_parser(
        "demo", help="write the demo corpus (traces, judge answers, human labels, truth)",
        description="Write the seeded demo corpus with its planted truth to a folder.",
        epilog="Example: evaltk demo out/demo --n-traces 3000 --seed 0\nExit codes: 0 written; 64 usage (OUT is "
               "a file, or a folder holding files the demo does not write: pass --overwrite).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("out", help="folder to write (created if needed)")
    p.add_argument("--n-traces", type=int, default=300, help="number of trace records (default 300)")
    p.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    p.add_argument("--json", action="store_true", help="print a machine-readable summary")
    p.add_argument("--overwrite", action="store_true",
                   help="write into a folder that holds other files too (the demo's files replace those of "
                        "the same name; docs/outputs.md)")
    p.set_defaults(func=_cli_demo)


def _cli_demo(args: argparse.Namespace) -> int:
    from ._main import EXIT_USAGE, CliError

    if args.n_traces < 10:
        raise CliError(f"--n-traces must be at least 10; got {args.n_traces}", EXIT_USAGE)
    if args.seed < 0:
        raise CliError(f"--seed must be non-negative; got {args.seed}", EXIT_USAGE)
    # an existing file named OUT, or a folder holding other things: refused (exit 64), no traceback
    writes = [*DEMO_FILES.values(), "README.md", DEMO_FILES["manifest"]]  # the manifest last (write_demo)
    check_output(args.out, [], kind="dir", writes=writes, by="evaltk demo", overwrite=args.overwrite)
    data = make_demo(n_traces=args.n_traces, rng=args.seed)
    paths = write_demo(args.out, data)
    summary = {"out": str(Path(args.out)), "files": {k: str(v) for k, v in paths.items()},
               "counts": data.manifest["counts"], "seed": args.seed}
    if args.json:
        print(json_text(summary))
    else:
        c = data.manifest["counts"]
        print(f"wrote {c['traces']} traces, {c['judge_answers']} judge answers, "
              f"{c['human_labels']} human labels to {args.out}")
    return 0
