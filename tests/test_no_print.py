"""Library code never prints: long work reports through ``logging`` and tqdm
(``evaltk._display.progress``); only the command line (``evaltk/cli``) writes to the terminal."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "evaltk"


def _prints(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.lineno for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"]


def test_no_print_outside_the_cli():
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        if rel.parts[0] in ("cli", "notebooks") or rel.parts[:2] == ("data", "examples"):
            continue
        if lines := _prints(path):
            found[str(rel)] = lines
    assert not found, f"print() in library code (use logging or evaltk._display.progress): {found}"


def test_the_check_finds_a_print(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f():\n    print('x')\n")
    assert _prints(f) == [2]
