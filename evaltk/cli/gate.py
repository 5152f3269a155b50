"""`evaltk gate`: the command-line layer over :func:`evaltk.judges.gate`; the exit code of each decision lives here."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

import numpy as np

from .._io import json_text
from ..judges import (
    GateRefused,
    gate,
)
from ..scoring import ScoreMatrix

# --------------------------------------------------------------------------- CLI

#: The exit code of each gate decision (seed 002: promote, review, regress); the command maps
#: the decision, the result object carries none.
GATE_EXIT_CODES: dict[str, int] = {"promote": 0, "regress": 1, "review": 3}
EXIT_REFUSED_DATA = 65
EXIT_REFUSED_CONSISTENCY = 67


def register_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "gate", help="promote / review / regress a candidate against a baseline",
        description="Compare two saved score matrices (evaltk score --out DIR) dimension by dimension. "
                    "Exit 0 promote, 1 regress, 3 review; 65 invalid data, 67 inconsistent scoring "
                    "(the instruments differ: scorer or version, fold rule, or a judge's model, rubric, "
                    "template or decoding; each differing field is named), 66 unreadable input. A dimension "
                    "whose instrument is unpinned (answers without judge metadata) on either side is "
                    "review, never promote; so is a dimension whose interval has zero width (a folder against "
                    "itself: nothing is ruled out), so the example below, the demo scored twice, exits 3.",
        epilog="Example: evaltk score data/demo/traces.jsonl --answers data/demo/answers.csv --out out/v1 && evaltk score data/demo/traces.jsonl --answers data/demo/answers.csv "
               "--out out/v2 && evaltk gate --baseline out/v1 --candidate out/v2 --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--baseline", required=True, help="directory written by `evaltk score --out`")
    p.add_argument("--candidate", required=True, help="directory written by `evaltk score --out`")
    p.add_argument("--measures", nargs="+", help="dimensions to gate (default: the four trace dimensions)")
    p.add_argument("--pair-by", default="task", help="runs column pairing the two sides (default: task)")
    p.add_argument("--min-effect", type=float, default=0.05, help="minimum practical effect (default 0.05)")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--correction", choices=["holm", "fdr_bh"], default="holm")
    p.add_argument("--min-pairs", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cli_gate)


def _cli_gate(args: argparse.Namespace) -> int:
    from ._main import CliError

    a = ScoreMatrix.load(args.baseline)
    b = ScoreMatrix.load(args.candidate)
    try:
        res = gate(a, b, measures=args.measures, pair_by=args.pair_by, min_effect=args.min_effect,
                   alpha=args.alpha, correction=args.correction, min_pairs=args.min_pairs, rng=args.seed)
    except GateRefused as e:
        code = EXIT_REFUSED_DATA if e.gate == "data validity" else EXIT_REFUSED_CONSISTENCY
        if args.json:
            print(json_text({"decision": "refused", "gate": e.gate, "reasons": e.reasons}))
        raise CliError(f"{args.candidate} against {args.baseline}: {e}", code) from None
    if args.json:
        print(json_text(res.to_dict(), default=_json_default))
    else:
        print(f"decision: {res.decision}")
        for r in res.dimensions.itertuples():
            print(f"  {r.measure:<8} {r.decision:<8} {r.reason}", file=sys.stdout)
    return GATE_EXIT_CODES[res.decision]


def _json_default(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, float) and math.isnan(x):
        return None
    raise TypeError(type(x))
