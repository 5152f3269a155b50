"""The seed commands (suite, trajectory, fixtures) are thin layers over public functions:
no private name and no private module of a domain subpackage is imported (issue 13)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parent.parent / "evaltk" / "cli"
DOMAIN = ("suite", "trajectory", "fixtures")


def _imports(path: Path) -> list[tuple[str, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom):
            mod = ("." * node.level) + (node.module or "")
            out += [(mod, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names]
    return out


def _private_imports(path: Path) -> list[str]:
    bad = []
    for mod, name in _imports(path):
        parts = mod.lstrip(".").split(".")
        parts = parts[1:] if parts[0] == "evaltk" else parts
        if parts[0] in DOMAIN and (len(parts) > 1 or name.startswith("_")):
            bad.append(f"from {mod} import {name}")
    return bad


@pytest.mark.parametrize("command", DOMAIN)
def test_cli_imports_only_public_names_of_the_domain(command):
    assert _private_imports(CLI / f"{command}.py") == []


def test_the_walk_flags_private_names_and_modules(tmp_path):
    p = tmp_path / "x.py"
    p.write_text("from ..suite._read import load_suite_run\nfrom ..trajectory import _x, grade_files\n"
                 "from evaltk.fixtures._load import load_task\nfrom ..errors import InputError\n")
    assert _private_imports(p) == ["from ..suite._read import load_suite_run", "from ..trajectory import _x",
                                   "from evaltk.fixtures._load import load_task"]
