#!/usr/bin/env python3
"""The two quickstart commands, with nothing but Python 3.11 and pip needed.

    python3 dev.py report   # make .venv, install evaltk, render the weekly report
    python3 dev.py test     # make .venv, install evaltk with every extra, run pytest

Both create (or reuse) the virtual environment ``.venv`` beside this file.
``test`` exits non-zero when a test fails *and* when no test ran (pytest's exit 5).
Extra arguments after the command go to ``evaltk report`` or to pytest.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")


def _run(cmd: list[str]) -> int:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], cwd=ROOT)


def _ensure_venv(extras: str) -> None:
    if not PY.exists():
        print(f"+ creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    rc = _run([PY, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-e", f".[{extras}]"])
    if rc:
        sys.exit(rc)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"report", "test"}:
        print(__doc__, file=sys.stderr)
        return 64
    cmd, rest = argv[0], argv[1:]
    if cmd == "report":
        _ensure_venv("notebooks")
        return _run([BIN / "evaltk", "report", *rest])
    _ensure_venv("dev,notebooks,scale,judges,inspect,otel")
    rc = _run([PY, "-m", "pytest", *rest])
    if rc == 5:
        print("dev.py: pytest collected no tests; that is a failure.", file=sys.stderr)
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
