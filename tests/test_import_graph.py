"""The package's import graph: no two contextwright modules import each other.

Every ``import`` in every module counts, at module level or inside a function
(a lazy import is still a dependency), except those under ``if TYPE_CHECKING:``.
``from contextwright.x import y`` is an edge to ``contextwright.x.y`` when
``y`` is a submodule, else to ``contextwright.x``. A package's ``__init__``
importing its own submodules is how a package exposes its surface, so edges
from a package to modules inside it are not cycles by themselves; a submodule
importing its package back still counts.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import contextwright

ROOT = Path(contextwright.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = ["contextwright", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def resolve(target: str) -> None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                resolve(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                resolve(full if full in modules else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in found if m.startswith("contextwright")}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_the_graph_sees_real_edges() -> None:
    graph = _graph()
    assert "contextwright.llm" in graph["contextwright.stages.compress"]
    assert "contextwright.errors" in graph["contextwright.llm"]


def test_no_two_modules_import_each_other() -> None:
    graph = _graph()
    mutual = [
        (a, b)
        for a, b in itertools.combinations(sorted(graph), 2)
        if b in graph[a]
        and a in graph[b]
        and not b.startswith(a + ".")  # a package exposing its submodule, which imports the package back
    ]
    assert mutual == [], f"modules that import each other: {mutual}"


def test_the_llm_client_imports_no_stage() -> None:
    graph = _graph()
    assert not {m for m in graph["contextwright.llm"] if m.startswith("contextwright.stages")}
