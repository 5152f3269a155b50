"""The installed package: a lean core that runs the core commands, extras that a command
names when they are missing (exit 69), and a wheel that carries every data file.

A missing extra is simulated with the real import machinery: a fresh interpreter
(``python -c``) whose first ``sys.meta_path`` finder refuses the extra's modules, the way
an environment without them behaves; evaltk itself is not patched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from evaltk._validation import EXTRAS
from evaltk.cli import EXIT_UNAVAILABLE

ROOT = Path(__file__).resolve().parents[1]

#: The distribution each importable module of an extra comes from (pyproject names).
DISTRIBUTIONS = {"altair": "altair", "vl_convert": "vl-convert-python", "papermill": "papermill",
                 "nbformat": "nbformat", "nbconvert": "nbconvert", "jupytext": "jupytext",
                 "ipykernel": "ipykernel", "duckdb": "duckdb", "dask": "dask[dataframe]",
                 "distributed": "distributed", "pingouin": "pingouin"}

_REFUSE = """
import importlib.abc, sys
BLOCKED = set({blocked!r})
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Refuse())
"""


def _run_without(blocked: set[str], code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", _REFUSE.format(blocked=sorted(blocked)) + code],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _requirement_name(req: str) -> str:
    """``dask[dataframe]>=2024.1`` -> ``dask[dataframe]``; names normalised (PEP 503: ``_`` is ``-``)."""
    for sep in ("<", ">", "=", "!", "~", ";"):
        req = req.split(sep)[0]
    return req.strip().lower().replace("_", "-")


def _distribution(module: str) -> str:
    """The distribution a module comes from: the table above, else the module's own name."""
    return _requirement_name(DISTRIBUTIONS.get(module, module))


def test_the_extras_in_pyproject_are_the_ones_the_commands_name():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    optional = project["optional-dependencies"]
    for extra, modules in EXTRAS.items():
        declared = {_requirement_name(r) for r in optional[extra]}
        assert declared == {_distribution(m) for m in modules}, extra
    core = {_requirement_name(r) for r in project["dependencies"]}
    heavy = {_distribution(m).split("[")[0] for mods in EXTRAS.values() for m in mods} | {"scikit-learn", "jupyterlab"}
    assert not core & heavy, f"the core install carries {sorted(core & heavy)}"
    assert "evaltk[report]" in optional["notebooks"]  # the notebooks extra runs the report too


def _dev():
    """dev.py as a module (it is not in the package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("evaltk_dev_py", ROOT / "dev.py")
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)
    return dev


def test_dev_py_test_installs_every_extra_and_s3test_in_a_step_of_its_own():
    dev = _dev()
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    steps = [set(step.split(",")) for step in dev.TEST_EXTRAS]
    installed = set().union(*steps)
    installed |= {r.split("[")[1].split("]")[0] for e in installed for r in optional[e] if r.startswith("evaltk[")}
    assert installed == set(optional)  # CI skips no test for want of an extra
    assert steps[-1] == {"s3test"}  # resolved with the others, pip's resolver fails (pyproject.toml)


@pytest.mark.parametrize("module", ["altair", "jupytext"])
def test_report_without_the_report_extra_says_which_extra_and_exits_69(tmp_path, module):
    out = tmp_path / "reports"
    code = f"from evaltk.cli import main; sys.exit(main(['report', '--out', {str(out)!r}]))"
    r = _run_without({module}, code, tmp_path)
    assert r.returncode == EXIT_UNAVAILABLE == 69, r.stderr
    assert "Traceback" not in r.stderr
    assert f"`evaltk report` needs the `report` extra of evaltk ({module} is not installed)" in r.stderr
    assert "pip install 'evaltk[report]'" in r.stderr
    assert not out.exists()  # refused before any work


def test_scale_without_the_scale_extra_says_which_extra(tmp_path):
    code = ("from evaltk.cli import main; sys.exit(main(['scale', 'score', "
            f"{str(ROOT / 'data' / 'demo' / 'traces.jsonl')!r}, '--out', 'out', '--engine', 'duckdb']))")
    r = _run_without({"duckdb"}, code, tmp_path)
    assert r.returncode == 69, r.stderr
    assert "Traceback" not in r.stderr
    assert "pip install 'evaltk[scale]'" in r.stderr


def test_the_regression_gate_without_pingouin_names_the_gate_extra(tmp_path):
    code = ("from evaltk._validation import import_optional\n"
            "try:\n    import_optional('pingouin', purpose='the gate')\n"
            "except ImportError as e:\n    print(type(e).__name__, e.extra, e)\n")
    r = _run_without({"pingouin"}, code, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("MissingExtra gate the gate needs the `gate` extra")


@pytest.mark.slow
def test_the_core_commands_run_without_any_extra(tmp_path):
    """``pip install evaltk`` alone: import evaltk, score, trajectory self-check, fixtures validate."""
    blocked = {m for mods in EXTRAS.values() for m in mods} | {"sklearn", "matplotlib", "statsmodels"}
    demo = ROOT / "data" / "demo"
    code = f"""
import evaltk
from evaltk.cli import main
from evaltk.data import examples_dir
rcs = [
    main(["score", {str(demo / "traces.jsonl")!r}, "--answers", {str(demo / "answers.csv")!r},
          "--labels", {str(demo / "labels.csv")!r}, "--out", "scored"]),
    main(["trajectory", "self-check"]),
    main(["fixtures", "validate", str(examples_dir() / "fixtures")]),
]
print("RCS", rcs)
print("LOADED", sorted(set(BLOCKED) & {{m.split(".")[0] for m in sys.modules}}))
"""
    r = _run_without(blocked, code, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "RCS [0, 0, 0]" in r.stdout, r.stdout + r.stderr
    assert "LOADED []" in r.stdout
    assert "8 fixture(s), 0 error(s): valid" in r.stdout
    assert (tmp_path / "scored").is_dir()


def _package_files(root: Path) -> set[str]:
    """Every file under ``evaltk/`` (symlinked folders followed), as wheel paths."""
    found = set()
    for folder, dirs, files in os.walk(root / "evaltk", followlinks=True):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if not f.endswith(".pyc"):
                found.add((Path(folder) / f).relative_to(root).as_posix())
    return found


@pytest.mark.slow
def test_the_wheel_carries_every_file_under_evaltk(tmp_path):
    """Built from a copy of the source (the build leaves nothing in the work tree)."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(*_dev().NOT_IN_WHEEL_COPY))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                        "--disable-pip-version-check", "-w", str(tmp_path / "dist"), str(src)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0 and "Could not find a version that satisfies the requirement setuptools" in r.stderr:
        pytest.skip("pip cannot fetch the build backend (setuptools) from a package index")
    assert r.returncode == 0, r.stderr
    (wheel,) = (tmp_path / "dist").glob("evaltk-*.whl")
    shipped = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("evaltk/")}
    missing = _package_files(src) - shipped
    assert not missing, f"files under evaltk/ that the wheel leaves out: {sorted(missing)}"
    tasks = [n for n in shipped if n.startswith("evaltk/data/examples/fixtures/") and n.endswith("task.yaml")]
    assert len(tasks) == 8
    assert {f"evaltk/notebooks/{n}.py" for n in ("weekly", "calibration")} <= shipped
