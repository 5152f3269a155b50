"""Running one measurement in a fresh process (shared by the shuffle benchmarks).

A benchmark script re-runs itself with ``--store STORE --child ARGS... OUT``; the child
prints one JSON line, its result.  Each measurement so starts from a fresh interpreter
(no memory, pools or caches of an earlier one), and ``OUT``, a temporary folder for what
it writes, is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fresh_child(script: str, store: Path, child_args: list[str], prefix: str) -> tuple[dict | None, str]:
    """``(result, "")`` of ``script --store store --child *child_args OUT`` in a fresh process,
    or ``(None, the end of its stderr)`` when it failed."""
    out = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        p = subprocess.run([sys.executable, script, "--store", str(store), "--child", *child_args, str(out)],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if p.returncode != 0:
        return None, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), ""


def store_line(store: Path, extra: str = "") -> str:
    """The header line: the store, its shared answer files, the CPUs and the load average."""
    n_answers = sum(1 for _ in (store / "answers_shared").glob("*.parquet"))
    return (f"store {store} ({n_answers} shared answer files){extra}, {os.cpu_count()} CPUs, "
            f"load average {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")


def parse_or_run_child(ap: argparse.ArgumentParser, child: Callable[..., dict], n_args: int) -> argparse.Namespace | None:
    """Add ``--store`` and the hidden ``--child`` to ``ap`` and parse; in a child process, print
    ``child(store, *args, Path(out))`` as its JSON line and return None."""
    ap.add_argument("--store", required=True, type=Path, help="a store of benchmarks/scale.py (with answers_shared/)")
    ap.add_argument("--child", nargs=n_args + 1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not args.child:
        return args
    *rest, out = args.child
    print(json.dumps(child(args.store, *rest, Path(out))))
    return None
