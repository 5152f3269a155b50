"""The layering rules of ARCHITECTURE.md, checked by walking every import in ``evaltk/``.

1. Layers point down: the foundation (``values``, ``errors``, ``_validation``, ``_io``,
   ``_columns``) imports only the foundation; ``stats`` imports only the foundation and
   itself; the subpackages form no cycle.
2. Nothing but ``evaltk.cli`` imports ``evaltk.cli``.
3. No module imports a private name, or a private module, from another subpackage.

Every import counts, including the ones inside functions: a lazy import hides a cycle
from the interpreter, not from the design.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "evaltk"

#: Top-level modules every layer may use; they import nothing else of evaltk.
FOUNDATION = {"values", "errors", "_validation", "_io", "_columns", "_display", "_blas"}
#: What ``stats`` may import besides itself.
STATS_MAY_IMPORT = FOUNDATION
#: The subpackages from the bottom of the data flow up: each may import only those before
#: it (and the foundation).  README's "Architecture" section draws the same order.
LAYERS: tuple[str, ...] = ("stats", "data", "ingest", "scoring", "judges", "suite", "trajectory",
                           "fixtures", "scale", "report", "cli")


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted ("evaltk.stats._agreement")
    target: str  # the imported module, dotted
    names: tuple[str, ...]  # names imported from it (empty for ``import x``)
    line: int


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(path: Path, module: str) -> list[str]:
    return module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]


def _is_type_checking_block(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _imports(path: Path) -> list[Import]:
    module = _module_name(path)
    package = _package_of(path, module)
    out: list[Import] = []
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    typing_only = {id(n) for block in ast.walk(tree) if _is_type_checking_block(block)
                   for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue  # ``if TYPE_CHECKING:`` imports are annotations, never run
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "evaltk":
                    out.append(Import(module, a.name, (), node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "evaltk":
                continue
            names = tuple(a.name for a in node.names)
            # ``from evaltk.stats import _agreement`` imports a module: record it as one
            for n in names:
                if (PKG.parent / Path(*target.split("."), f"{n}.py")).is_file() or (
                        PKG.parent / Path(*target.split("."), n, "__init__.py")).is_file():
                    out.append(Import(module, f"{target}.{n}", (), node.lineno))
                    names = tuple(x for x in names if x != n)
            if names:
                out.append(Import(module, target, names, node.lineno))
    return out


def _all_imports() -> list[Import]:
    return [imp for p in sorted(PKG.rglob("*.py")) for imp in _imports(p)]


def _layer(module: str) -> str:
    """``evaltk.stats._agreement`` -> ``stats``; ``evaltk.values`` -> ``values``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _private_part(target: str) -> str | None:
    """The first private component of a module path below its layer, if any."""
    for part in target.split(".")[2:]:
        if part.startswith("_"):
            return part
    return None


IMPORTS = _all_imports()


def _where(imp: Import) -> str:
    return f"{imp.module} (line {imp.line}) imports {imp.target}" + (
        f" [{', '.join(imp.names)}]" if imp.names else "")


def test_the_walk_sees_the_package():
    modules = {imp.module for imp in IMPORTS}
    assert {"evaltk.stats._agreement", "evaltk.scoring", "evaltk.cli._main"} <= modules
    assert len(IMPORTS) > 200


def test_the_foundation_imports_only_the_foundation():
    bad = [_where(i) for i in IMPORTS
           if _layer(i.module) in FOUNDATION and _layer(i.target) not in FOUNDATION]
    assert not bad, "\n".join(bad)


def test_stats_imports_nothing_above_it():
    bad = [_where(i) for i in IMPORTS if _layer(i.module) == "stats"
           and _layer(i.target) not in STATS_MAY_IMPORT | {"stats"}]
    assert not bad, "\n".join(bad)


def test_only_the_cli_imports_the_cli():
    bad = [_where(i) for i in IMPORTS if _layer(i.target) == "cli"
           and _layer(i.module) != "cli" and i.module != "evaltk.__main__"]
    assert not bad, "\n".join(bad)


def test_no_private_name_or_module_crosses_a_subpackage():
    bad = []
    for i in IMPORTS:
        src, dst = _layer(i.module), _layer(i.target)
        if src == dst or dst in FOUNDATION or not dst:
            continue
        if _private_part(i.target):
            bad.append(_where(i) + f": private module {_private_part(i.target)}")
        private_names = [n for n in i.names if n.startswith("_") and n != "__version__"]
        if private_names:
            bad.append(_where(i) + f": private name(s) {private_names}")
    assert not bad, "\n".join(bad)


def _layer_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for i in IMPORTS:
        src, dst = _layer(i.module), _layer(i.target)
        if not src or not dst or src == dst:
            continue  # the package itself (``evaltk/__init__``, ``__version__``) is not a layer
        graph.setdefault(src, set()).add(dst)
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_each_subpackage_imports_only_the_layers_below_it():
    subpackages = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
    assert subpackages == set(LAYERS), "declare the new subpackage's place in LAYERS"
    bad = []
    for src, targets in _layer_graph().items():
        if src not in LAYERS:
            continue
        below = set(LAYERS[: LAYERS.index(src)]) | FOUNDATION
        bad += [f"{src} imports {dst}" for dst in sorted(targets - below)]
    assert not bad, "\n".join(bad)


def test_the_subpackages_form_no_cycle():
    cycle = _find_cycle(_layer_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize(("graph", "cycle"), [
    ({"a": {"b"}, "b": {"c"}}, None),
    ({"a": {"b"}, "b": {"a"}}, ["a", "b", "a"]),
    ({"a": {"b"}, "b": {"c"}, "c": {"b"}}, ["b", "c", "b"]),
])
def test_the_cycle_finder_finds_cycles(graph, cycle):
    assert _find_cycle(graph) == cycle


def test_the_walk_resolves_relative_imports(tmp_path):
    imps = _imports(PKG / "stats" / "__init__.py")
    assert any(i.target.startswith("evaltk.stats._") for i in imps)
    assert _private_part("evaltk.scoring._matrix") == "_matrix"
    assert _private_part("evaltk.scoring") is None


def test_submodules_stay_modules():
    """``import evaltk`` re-exports names; it must never shadow a subpackage with a function."""
    import importlib
    import types

    import evaltk

    for sub in sorted(p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()):
        importlib.import_module(f"evaltk.{sub}")
        assert isinstance(getattr(evaltk, sub), types.ModuleType), sub


def test_the_top_level_exports_no_constants():
    import evaltk

    constants = [n for n in evaltk.__all__ if n.isupper()]
    assert not constants, constants


#: Subpackages whose public names are reached through the subpackage only: the report's
#: charts and runner load altair and papermill, and the CLI is the command, not an API.
NOT_AT_TOP_LEVEL = {"report", "cli"}


def test_every_public_function_and_class_is_importable_from_the_top_level():
    """``from evaltk import NAME`` for every public name of every subpackage (constants and
    vocabularies stay in their subpackage), and it is the same object."""
    import importlib

    import evaltk

    missing, different = [], []
    for layer in ("values", "errors", *LAYERS):
        if layer in NOT_AT_TOP_LEVEL:
            continue
        mod = importlib.import_module(f"evaltk.{layer}")
        for name in getattr(mod, "__all__", ()):
            if name.isupper():
                continue
            if not hasattr(evaltk, name):
                missing.append(f"{layer}.{name}")
            elif getattr(evaltk, name) is not getattr(mod, name):
                different.append(f"{layer}.{name}")
    assert not missing, "add to evaltk/__init__.py: " + ", ".join(missing)
    assert not different, "evaltk.NAME is another object than the subpackage's: " + ", ".join(different)


def _module_graph() -> dict[str, set[str]]:
    modules = {imp.module for imp in IMPORTS}
    graph: dict[str, set[str]] = {}
    for i in IMPORTS:
        if i.target in modules and i.target != i.module and _layer(i.module) == _layer(i.target):
            graph.setdefault(i.module, set()).add(i.target)
    # a package's __init__ imports its private modules; those importing the package back
    # (``from . import x``) would be a cycle through the __init__, which the walk records
    return graph


def test_the_modules_inside_a_subpackage_form_no_cycle():
    cycle = _find_cycle(_module_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])
