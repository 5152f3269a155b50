#!/usr/bin/env python3
"""The two quickstart commands, with nothing but Python 3.11 and pip needed.

    python3 dev.py report   # make .venv, install evaltk with the report extra, render the weekly report
    python3 dev.py test     # make .venv, install evaltk with every extra (then `s3test`), run pytest (2 processes)
    python3 dev.py wheel    # CI: build the wheel, install it in a fresh venv, run the commands from an empty folder
    python3 dev.py floor    # CI: the fast tests (-m "not slow") on the oldest NumPy, pandas, SciPy and pyarrow pyproject admits

``report`` and ``test`` create (or reuse) the virtual environment ``.venv`` beside this file.
``test`` exits non-zero when a test fails *and* when no test ran (pytest's exit 5).
Extra arguments after the command go to ``evaltk report`` or to pytest.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"


def _bin(env: Path) -> Path:
    """A virtual environment's folder of executables."""
    return env / ("Scripts" if os.name == "nt" else "bin")


BIN = _bin(VENV)
#: The extras ``test`` installs, one ``pip install`` per entry (tests/test_packaging.py checks
#: that together they are every extra of pyproject.toml, so CI skips no test for a missing one).
TEST_EXTRAS = ("dev,notebooks,scale,gate,judges,inspect,otel", "s3test")
#: The array stack whose floors ``floor`` installs: each in the series its ``>=`` in pyproject.toml
#: names (``pandas>=2.3`` -> ``pandas==2.3.*``, the newest patch of it), the one home of the floors.
#: On Python 3.11 and 3.12 (numpy 1.26 and pyarrow 14 have no wheels for 3.13).
#: Run on them, the fast tests found four bugs CI on the newest releases could not (docs in the
#: commits of 2026-12-04: pyarrow 14's missing ``Table.from_struct_array`` and its refusal of
#: repeated column names, NumPy 2's scalar repr in messages, Dask 2026.1's hang without a guard).
FLOOR_PACKAGES = ("numpy", "pandas", "scipy", "pyarrow")
FLOOR_VENV = ROOT / ".venv-floor"
#: What the wheel's build copy of the work tree leaves out (tests/test_packaging.py uses it too).
NOT_IN_WHEEL_COPY = (".git", ".venv", ".venv-*", "reports", "build", "*.egg-info", "__pycache__", "tests", "benchmarks")


def _run(cmd: list[str], cwd: Path = ROOT) -> int:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], cwd=cwd)


def _check(cmd: list[str], cwd: Path = ROOT) -> str:
    """Run ``cmd``; its standard output, or exit with its code."""
    print("+", " ".join(str(c) for c in cmd), flush=True)
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, stdout=subprocess.PIPE, text=True)
    print(r.stdout, end="", flush=True)
    if r.returncode:
        print(f"dev.py: exit {r.returncode} from {cmd[0]}", file=sys.stderr)
        sys.exit(r.returncode)
    return r.stdout


def _wheel_check() -> int:
    """The installed package as a user gets it: wheel, fresh venv with the report extra, the
    commands run from an empty folder on the examples the wheel ships."""
    with tempfile.TemporaryDirectory(prefix="evaltk-wheel-") as tmp:
        tmp_path = Path(tmp)
        src = tmp_path / "src"  # build from a copy: the build leaves nothing in the work tree
        shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(*NOT_IN_WHEEL_COPY))
        _check([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--disable-pip-version-check",
                "-w", tmp_path / "dist", src])
        (wheel,) = (tmp_path / "dist").glob("evaltk-*.whl")
        env = tmp_path / "venv"
        venv.EnvBuilder(with_pip=True).create(env)
        bin_ = _bin(env)
        _check([bin_ / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                f"{wheel}[report]"])
        empty = tmp_path / "empty"
        empty.mkdir()
        _check([bin_ / "evaltk", "trajectory", "self-check"], cwd=empty)
        examples = _check([bin_ / "python", "-c", "from evaltk.data import examples_dir; print(examples_dir())"],
                          cwd=empty).strip()
        expected = len(list((ROOT / "data" / "examples" / "fixtures").rglob("task.yaml")))
        out = _check([bin_ / "evaltk", "fixtures", "validate", Path(examples) / "fixtures"], cwd=empty)
        if f"{expected} fixture(s), 0 error(s): valid" not in out:
            print(f"dev.py: the installed examples are not the {expected} valid fixtures", file=sys.stderr)
            return 1
        _check([bin_ / "evaltk", "report", "--week", "2026-W01", "--out", "reports"], cwd=empty)
        index = empty / "reports" / "2026-W01" / "index.html"
        if not index.is_file():
            print(f"dev.py: evaltk report wrote no {index}", file=sys.stderr)
            return 1
        print(f"dev.py: the wheel {wheel.name} works from an empty folder", flush=True)
    return 0


def _ensure_venv(*steps: str, at: Path = VENV, pip_args: tuple[str | Path, ...] = ()) -> Path:
    """Make (or reuse) the virtual environment ``at`` (``.venv``) and install evaltk editable with
    each set of extras in ``steps``, one ``pip install`` per set (with ``pip_args``), in order: a
    later set is resolved against what the earlier ones installed (the `s3test` extra resolved
    together with every other one fails in pip's resolver).  Its Python."""
    py = _bin(at) / ("python.exe" if os.name == "nt" else "python")
    if not py.exists():
        print(f"+ creating {at}", flush=True)
        venv.EnvBuilder(with_pip=True).create(at)
    for extras in steps:
        rc = _run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pip_args,
                   "-e", f".[{extras}]"])
        if rc:
            sys.exit(rc)
    return py


def _pytest(py: Path, args: list[str]) -> int:
    """pytest in ``py``'s environment (two processes unless ``args`` choose); no test run is a failure."""
    rc = _run([py, "-m", "pytest", *_workers(args), *args])
    if rc == 5:
        print("dev.py: pytest collected no tests; that is a failure.", file=sys.stderr)
        return 1
    return rc


def floor_constraints() -> list[str]:
    """``name==X.*`` for each of :data:`FLOOR_PACKAGES`, from its ``name>=X`` in pyproject.toml."""
    import re
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["dependencies"]
    floors = {}
    for dep in deps:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9.]+)", dep.replace(" ", ""))
        if m and m.group(1).lower() in FLOOR_PACKAGES:
            floors[m.group(1).lower()] = f"{m.group(1).lower()}=={m.group(2)}.*"
    missing = [p for p in FLOOR_PACKAGES if p not in floors]
    if missing:
        raise SystemExit(f"dev.py: pyproject.toml names no `>=` floor for {', '.join(missing)}")
    return [floors[p] for p in FLOOR_PACKAGES]


def _floor_check(rest: list[str]) -> int:
    """The fast tests in ``.venv-floor``, with the array stack at its declared floors."""
    with tempfile.TemporaryDirectory(prefix="evaltk-floor-") as tmp:
        constraints = Path(tmp) / "constraints.txt"
        floors = floor_constraints()
        constraints.write_text("\n".join(floors) + "\n", "utf-8")
        print("+ floors:", ", ".join(floors), flush=True)
        py = _ensure_venv(TEST_EXTRAS[0], at=FLOOR_VENV, pip_args=("-c", constraints))
    _check([py, "-c", "import numpy, pandas, scipy, pyarrow; print('floor:', 'numpy', numpy.__version__, "
                      "'pandas', pandas.__version__, 'scipy', scipy.__version__, 'pyarrow', pyarrow.__version__)"])
    return _pytest(py, ["-m", "not slow", *rest])


def _workers(args: list[str]) -> list[str]:
    """Two pytest-xdist processes unless the arguments choose (``-n N``, ``--numprocesses``, ``-p no:xdist``):
    the whole suite took 13 min 17 s in one process and 8 min 36 s in two on the 2-core machine."""
    chosen = any(a.startswith(("-n", "--numprocesses", "--dist")) or a == "no:xdist" for a in args)
    return [] if chosen else ["-n", "2"]


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"report", "test", "wheel", "floor"}:
        print(__doc__, file=sys.stderr)
        return 64
    cmd, rest = argv[0], argv[1:]
    if cmd == "wheel":
        return _wheel_check()
    if cmd == "floor":
        return _floor_check(rest)
    if cmd == "report":
        _ensure_venv("report")
        return _run([BIN / "evaltk", "report", *rest])
    return _pytest(_ensure_venv(*TEST_EXTRAS), rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
