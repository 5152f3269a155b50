"""evaltk is a typed library (#18 part 7): it ships ``py.typed`` and mypy, configured in
pyproject.toml (``[tool.mypy]``), reports no error on the package with pandas-stubs installed.

The mypy runs are slow (about a minute from a cold cache); they skip, saying why, when mypy
or pandas-stubs is not installed (both are in the ``dev`` extra, so CI runs them).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _mypy(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None
          ) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (pip install -e '.[dev]')")
    try:
        importlib.metadata.distribution("pandas-stubs")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("pandas-stubs is not installed (pip install -e '.[dev]'): without it pandas "
                    "is untyped and the count means something else")
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", str(ROOT / ".mypy_cache"), *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def test_py_typed_is_shipped_with_the_package():
    assert (ROOT / "evaltk" / "py.typed").is_file()
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in cfg["tool"]["setuptools"]["package-data"]["evaltk"]


@pytest.mark.slow
def test_mypy_reports_no_error_on_the_package():
    r = _mypy()  # files = ["evaltk"] from [tool.mypy]
    out = r.stdout + r.stderr
    errors = [line for line in out.splitlines() if re.search(r": error: ", line)]
    assert r.returncode == 0 and not errors, f"{len(errors)} mypy errors:\n" + "\n".join(errors[:50])
    assert "Success: no issues found" in out


@pytest.mark.slow
def test_a_users_type_checker_sees_evaltk_types_not_any(tmp_path):
    # user code in its own folder, evaltk found on the path the way an installed package is
    # (mypy reads a PYTHONPATH entry like site-packages: without py.typed every name is Any
    # and the misuses below pass silently); a misuse of the public API is caught
    snippet = ("import evaltk\n"
               "r = evaltk.wilson_interval(3, 10)\n"
               "reveal_type(r)\n"
               "r.no_such_attribute\n"
               "evaltk.summarize(3.5)\n")
    user = tmp_path / "user_code.py"
    user.write_text(snippet)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = _mypy(str(user), cwd=tmp_path, env=env)
    out = r.stdout
    assert re.search(r'Revealed type is "evaltk\.stats\.[\w.]*ProportionInterval"', out), out
    assert '"ProportionInterval" has no attribute "no_such_attribute"' in out, out
    assert re.search(r'Argument 1 to "summarize" has incompatible type "float"', out), out
