"""Layers of scoring and the engines above it (issue #13): scoring never imports judges or
the CLI; scoring, scale, the panel and the score/ingest/gate/scale commands import only
public names from other subpackages."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "evaltk"
MODULES = sorted([*ROOT.glob("scoring/*.py"), *ROOT.glob("scale/*.py"), ROOT / "judges" / "_panel.py",
                  *(ROOT / "cli" / f"{c}.py" for c in ("score", "ingest", "gate", "scale"))])


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(absolute module, imported names) of every ``from`` import in ``path``, at any depth."""
    pkg = path.relative_to(ROOT.parent).with_suffix("").parts[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = list(pkg[: len(pkg) - node.level + 1]) if node.level else []
            mod = ".".join([*base, *(node.module.split(".") if node.module else [])])
            out.append((mod, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out.extend((a.name, []) for a in node.names)
    return out


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_name_across_subpackages(path):
    own = path.relative_to(ROOT).parts[0]
    for mod, names in _imports(path):
        parts = mod.split(".")
        if parts[0] != "evaltk" or len(parts) < 2 or parts[1] == own:
            continue
        assert not any(p.startswith("_") for p in parts[2:]), f"{path.name} imports the private module {mod}"
        assert not any(n.startswith("_") for n in names), f"{path.name} imports private {names} from {mod}"


def test_scoring_imports_neither_judges_nor_cli():
    for path in ROOT.glob("scoring/*.py"):
        for mod, _ in _imports(path):
            assert not mod.startswith(("evaltk.judges", "evaltk.cli")), f"{path.name} imports {mod}"
