"""The package's import graph: layers that import downward only, and no circles.

The layers, bottom up, are declared in :data:`LAYERS` and described in
docs/architecture.md. A module belongs to the layer whose package it is in;
it may import modules of its own layer or of any layer below, never above.
The old import paths (:data:`COMPAT`, deprecated, no files: one finder,
:data:`ALIAS_MODULE`, serves them) belong to no layer: nothing in the package
may import them.

Every dependency counts:

* every ``import`` in a module, at module level or inside a function (a lazy
  import is still a dependency), and those under ``if TYPE_CHECKING:`` too (a
  type-only import is a dependency of the design, if not of the run);
* a module that imports dynamically (``importlib.import_module``,
  ``__import__``) depends on every ``contextwright`` module it names in a
  string, and an f-string ``f"contextwright.stages.{name}"`` names the
  package before its first placeholder.

``from contextwright.x import y`` is an edge to ``contextwright.x.y`` when
``y`` is a submodule, else to ``contextwright.x``. A package's ``__init__``
importing its own submodules is how a package exposes its surface, so edges
from a package to modules inside it do not make a circle by themselves.
"""

from __future__ import annotations

import ast
from pathlib import Path

import contextwright
from contextwright import _aliases

ROOT = Path(contextwright.__file__).parent

#: The layers, bottom up: (name, the packages in it).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # _native: the C word profiles (a compiled module; its stub names it), below everything
    ("core", ("contextwright.core", "contextwright._native")),
    ("tokens", ("contextwright.tokens",)),
    ("clients", ("contextwright.clients",)),
    ("model", ("contextwright.model",)),
    ("inputs", ("contextwright.inputs",)),
    ("render", ("contextwright.render",)),
    ("stages", ("contextwright.stages",)),
    ("stores", ("contextwright.stores",)),
    ("assembly", ("contextwright.assembly",)),
    ("surface", ("contextwright",)),
    ("batch", ("contextwright.batch",)),
    ("eval", ("contextwright.eval",)),
    ("adapters", ("contextwright.adapters",)),
    ("service", ("contextwright.service",)),
    ("cli", ("contextwright.cli",)),
)

#: The old import paths (deprecated, served by :data:`ALIAS_MODULE`): no module may import them.
COMPAT = frozenset(_aliases.ALIASES)
#: The finder that serves :data:`COMPAT`; outside the layers, and only the surface imports it
#: (to install it). It names every old path's new home in strings, for ``importlib``.
ALIAS_MODULE = "contextwright._aliases"


def _modules() -> dict[str, Path]:
    """Every module: its source, or for a compiled one (``_native``) its stub."""
    out = {}
    stubs = [p for p in ROOT.rglob("*.pyi") if not p.with_suffix(".py").exists()]
    for path in sorted([*ROOT.rglob("*.py"), *stubs]):
        parts = ["contextwright", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _dynamic_names(tree: ast.AST) -> list[str]:
    """The ``contextwright`` module names a module spells in strings, when it imports dynamically."""
    dynamic = any(
        isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
            or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__"))
        )
        for node in ast.walk(tree)
    )
    if not dynamic:
        return []
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            text = str(node.values[0].value).rstrip(".")
        else:
            continue
        if text.startswith("contextwright") and all(p.isidentifier() for p in text.split(".")):
            names.append(text)
    return names


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def resolve(target: str) -> None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    for node in ast.walk(tree):
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
    for target in _dynamic_names(tree):
        resolve(target)
    return {m for m in found if m.startswith("contextwright")}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = {**modules, **dict.fromkeys(COMPAT, ROOT)}  # an old path is an edge of its own, not to its parent
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _layer(module: str) -> int | None:
    """The index of ``module``'s layer in :data:`LAYERS`; None for a compatibility path."""
    if module in COMPAT or module == ALIAS_MODULE:
        return None
    best: tuple[int, int] | None = None  # (length of the matching package, layer)
    for index, (_, packages) in enumerate(LAYERS):
        for package in packages:
            if module == package or module.startswith(package + "."):
                if package == "contextwright" and module != package:
                    continue  # the root holds only the surface (__init__); the rest is in packages
                if best is None or len(package) > best[0]:
                    best = (len(package), index)
    assert best is not None, f"{module} is in no layer: add it to LAYERS or COMPAT"
    return best[1]


def test_the_graph_sees_real_edges() -> None:
    graph = _graph()
    assert "contextwright.clients.chat" in graph["contextwright.stages.llm_compress"]
    assert "contextwright.core.errors" in graph["contextwright.clients.chat"]


def test_the_graph_sees_type_only_and_dynamic_imports() -> None:
    graph = _graph()
    # model.report names the zone results only for type hints (under TYPE_CHECKING)
    assert "contextwright.model.zones" in graph["contextwright.model.report"]
    # stages.base imports a stage's module by name: f"contextwright.stages.{name}"
    assert "contextwright.stages" in graph["contextwright.stages.base"]


def test_every_module_has_a_layer() -> None:
    for module in _modules():
        _layer(module)


def test_imports_point_down() -> None:
    graph = _graph()
    up = []
    for module, targets in sorted(graph.items()):
        mine = _layer(module)
        if mine is None:
            continue
        for target in sorted(targets):
            theirs = _layer(target)
            if target == ALIAS_MODULE and module == "contextwright":
                continue  # the surface installs the finder of the old paths
            if theirs is None:
                up.append(f"{module} imports the compatibility path {target}")
            elif theirs > mine:
                up.append(f"{module} ({LAYERS[mine][0]}) imports {target} ({LAYERS[theirs][0]})")
    assert up == [], "imports that point up:\n" + "\n".join(up)


def test_no_circles() -> None:
    graph = _graph()

    def inside(package: str, module: str) -> bool:
        return module.startswith(package + ".")

    edges = {m: {t for t in ts if not inside(m, t)} for m, ts in graph.items()}
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in edges:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    assert circles == [], f"modules in an import circle: {circles}"


def test_the_llm_client_imports_no_stage() -> None:
    graph = _graph()
    assert not {m for m in graph["contextwright.clients.chat"] if m.startswith("contextwright.stages")}


def test_only_the_surface_imports_the_finder_of_the_old_paths() -> None:
    graph = _graph()
    assert ALIAS_MODULE in graph["contextwright"]
    assert sorted(m for m, targets in graph.items() if ALIAS_MODULE in targets) == ["contextwright"]


def test_an_import_of_an_old_path_is_an_edge_to_that_path_not_to_its_parent(tmp_path: Path) -> None:
    scratch = tmp_path / "filter.py"
    scratch.write_text("import contextwright.types\nfrom contextwright.errors import ConfigError\n", "utf-8")
    found = _imports("contextwright.stages.filter", scratch, {**_modules(), **dict.fromkeys(COMPAT, ROOT)})
    assert found == {"contextwright.types", "contextwright.errors"}
