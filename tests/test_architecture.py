"""The layering of swarm's own modules: no import cycles, and no package importing one above it.

Static: every module under ``swarm/`` is parsed with ``ast``, never imported,
and the import graph is built from what the source says:

- every ``import`` and ``from ... import`` counts, also those inside functions
  (a lazy import is still a dependency, only a later one);
- ``from x import y`` is an import of ``x.y`` when ``x.y`` is a module of
  swarm's, else of ``x``; relative imports are resolved;
- an import of a module does not count as an import of its parent packages
  (Python runs their ``__init__`` first, but that is what the ``__init__``
  imports, and it is checked as its own module);
- imports under ``if TYPE_CHECKING:`` are recorded but marked, and the
  failure message shows a cycle that closes only through them apart. Both
  kinds fail: a type hint naming a class of a module that imports you is a
  cycle in the design even if it never runs (a lower module names what it
  needs from a higher one as a Protocol of its own). The layer check counts
  them too.

The layer order is ``LAYERS`` below, the same as in docs/architecture.md
("Layers"). A package may import its own modules and those of any package
below it; ``ALLOWED_UPWARD`` would name an exception, with why (there is none).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SWARM = Path(__file__).resolve().parents[1] / "swarm"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("swarm.__main__",),
    ("swarm.cli",),
    ("swarm.interactive",),
    ("swarm.runtime",),
    ("swarm.teammate",),
    ("swarm.agent",),
    ("swarm.models",),
    ("swarm.backends",),
    ("swarm.core",),
    ("swarm", "swarm.errors", "swarm.startup"),
)
"""Top to bottom; each entry is one layer, named by the packages (or top-level modules) in it.

A module belongs to the longest name here that is it or contains it. Arrows
point down only: a module may import from its own layer and any layer after it.
"""

ALLOWED_UPWARD: dict[tuple[str, str], str] = {}
"""(importer, imported) module pairs allowed to point up, with the reason. Empty: there are none."""


@dataclass(frozen=True)
class Import:
    """One import statement's edge: where, and whether it only runs for a type checker."""

    source: str
    target: str
    line: int
    type_checking: bool
    lazy: bool
    """Inside a function or method: runs when it is called, not when the module loads."""


@dataclass(repr=False)
class Graph:
    """swarm's modules and the imports between them."""

    root: Path
    """The package directory (``.../swarm``)."""
    modules: dict[str, Path]
    imports: list[Import] = field(default_factory=list)

    def edges(self, *, type_checking: bool = False) -> dict[str, set[str]]:
        """``source -> targets`` for imports that run; with ``type_checking``, also those under ``if TYPE_CHECKING:``."""
        edges: dict[str, set[str]] = {name: set() for name in self.modules}
        for found in self.imports:
            if type_checking or not found.type_checking:
                edges[found.source].add(found.target)
        return edges

    def __repr__(self) -> str:  # pytest prints the fixture in a failure: keep it to a line
        return f"Graph({self.root}: {len(self.modules)} modules, {len(self.imports)} imports)"

    def where(self, source: str, target: str) -> list[Import]:
        return [i for i in self.imports if i.source == source and i.target == target]


# -- building the graph --------------------------------------------------------------


def module_name(path: Path, root: Path) -> str:
    """``swarm/agent/tool_api/base.py`` -> ``swarm.agent.tool_api.base``; a package's ``__init__.py`` is the package."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def find_modules(root: Path) -> dict[str, Path]:
    return {module_name(path, root): path for path in sorted(root.rglob("*.py"))}


def build_graph(root: Path) -> Graph:
    """The import graph of the package at ``root`` (its own modules only; third-party imports are left out)."""
    graph = Graph(root, find_modules(root))
    for name, path in graph.modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node, type_checking, lazy in _imports(tree):
            for target in _targets(node, name, is_package, graph.modules):
                if target != name:
                    graph.imports.append(Import(name, target, node.lineno, type_checking, lazy))
    return graph


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    """Every import node, with whether it sits under ``if TYPE_CHECKING:`` and whether inside a function."""
    def visit(node: ast.AST, type_checking: bool, lazy: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, type_checking, lazy
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from visit(child, True, lazy)
            for child in node.orelse:
                yield from visit(child, type_checking, lazy)
            return
        inner = lazy or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            yield from visit(child, type_checking, inner)

    yield from visit(tree, False, False)


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``<anything>.TYPE_CHECKING`` (``typing.TYPE_CHECKING``, or a module's own flag)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool,
             modules: dict[str, Path]) -> list[str]:
    """The swarm modules one import statement imports."""
    if isinstance(node, ast.Import):
        return [_owning_module(alias.name, modules) for alias in node.names
                if _owning_module(alias.name, modules)]
    base = _absolute(node, importer, is_package)
    if base is None:
        return []
    found = []
    for alias in node.names:
        child = f"{base}.{alias.name}"
        if child in modules:
            found.append(child)
        elif owner := _owning_module(base, modules):
            found.append(owner)
    return list(dict.fromkeys(found))


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str | None:
    """The absolute module a ``from`` import names (relative ones resolved against ``importer``)."""
    if node.level == 0:
        return node.module
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    if node.level > 1:
        package = package[:-(node.level - 1)]
    return ".".join([*package, *([node.module] if node.module else [])])


def _owning_module(dotted: str | None, modules: dict[str, Path]) -> str:
    """The longest prefix of ``dotted`` that is one of swarm's modules ("" for a module not of swarm's)."""
    parts = (dotted or "").split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return ""


# -- the checks ----------------------------------------------------------------------


def cycles(graph: Graph, *, type_checking: bool = False) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan's), biggest first.

    Of the imports that run; with ``type_checking``, of every import, those
    under ``if TYPE_CHECKING:`` too.
    """
    edges = graph.edges(type_checking=type_checking)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def connect(start: str) -> None:  # iterative: a deep import chain must not hit the recursion limit
        nonlocal counter
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for name in sorted(edges):
        if name not in index:
            connect(name)
    return sorted(found, key=lambda component: (-len(component), component))


def layer_of(module: str) -> int:
    """The index in ``LAYERS`` of the layer ``module`` belongs to (the longest matching name wins)."""
    best, best_len = -1, -1
    for position, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best_len:
                best, best_len = position, len(name)
    if best < 0:
        raise AssertionError(f"{module} is in no layer of LAYERS; add its package there and to docs/architecture.md")
    return best


def upward(graph: Graph) -> list[Import]:
    """Imports (type-only ones included) from a module into a layer above its own."""
    return [i for i in graph.imports
            if layer_of(i.target) < layer_of(i.source) and (i.source, i.target) not in ALLOWED_UPWARD]


def describe_cycles(graph: Graph, components: Iterable[list[str]], *, type_checking: bool = False) -> str:
    """One block per cycle: its modules, then every import between them with its file and line."""
    blocks = []
    for number, component in enumerate(components, 1):
        members = set(component)
        lines = [f"cycle {number} ({len(component)} modules): {', '.join(component)}"]
        for found in sorted(graph.imports, key=lambda i: (i.source, i.target, i.line)):
            if found.source in members and found.target in members and (type_checking or not found.type_checking):
                lines.append(f"    {found.source} -> {found.target}  [{_where(graph, found)}]{_notes(found)}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def type_only_cycles(graph: Graph) -> list[list[str]]:
    """The cycles that close only through ``if TYPE_CHECKING:`` imports (allowed: they never run)."""
    running = {tuple(component) for component in cycles(graph)}
    return [c for c in cycles(graph, type_checking=True) if tuple(c) not in running]


def _notes(found: Import) -> str:
    notes = [note for note, on in (("TYPE_CHECKING only", found.type_checking),
                                   ("inside a function", found.lazy)) if on]
    return f" ({', '.join(notes)})" if notes else ""


def describe_upward(graph: Graph, found: Iterable[Import]) -> str:
    lines = []
    for edge in sorted(found, key=lambda i: (i.source, i.target, i.line)):
        lines.append(f"    {edge.source} ({_layer_name(edge.source)}) -> {edge.target} ({_layer_name(edge.target)})"
                     f"  [{_where(graph, edge)}]{_notes(edge)}")
    return "\n".join(lines)


def _layer_name(module: str) -> str:
    return LAYERS[layer_of(module)][0].removeprefix("swarm.")


def _where(graph: Graph, found: Import) -> str:
    return f"{graph.modules[found.source].relative_to(graph.root.parent)}:{found.line}"


# -- the tests -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph(SWARM)


def test_no_import_cycles(graph: Graph) -> None:
    """No two of swarm's modules import each other, directly or around a loop, not even through type-only imports
    (a service a lower module needs from a higher one is a Protocol in the lower one)."""
    found = cycles(graph)
    typed = type_only_cycles(graph)
    assert not found and not typed, (
        f"{len(found)} import cycle(s) among swarm's modules:\n\n" + describe_cycles(graph, found)
        + (f"\n\n{len(typed)} more that close only through `if TYPE_CHECKING:` imports:\n\n"
           + describe_cycles(graph, typed, type_checking=True) if typed else ""))


def test_imports_point_down_the_layers(graph: Graph) -> None:
    """No module imports a package above its own in ``LAYERS`` (docs/architecture.md, "Layers")."""
    found = upward(graph)
    order = " > ".join("/".join(n.removeprefix("swarm.") or "swarm" for n in names) for names in LAYERS)
    assert not found, (f"{len(found)} import(s) point up the layers ({order}):\n" + describe_upward(graph, found))


def test_every_module_has_a_layer(graph: Graph) -> None:
    """A new top-level package must be placed in ``LAYERS`` (and in docs/architecture.md) before it is used."""
    assert len(graph.modules) > 100 and len(graph.imports) > 500, f"{graph} is not swarm's source tree"
    for name in graph.modules:
        layer_of(name)


def test_the_checker_finds_a_planted_cycle(tmp_path: Path) -> None:
    """The checks cannot pass vacuously: a two-module cycle and an upward import in a scratch package are found."""
    root = tmp_path / "swarm"
    (root / "core").mkdir(parents=True)
    (root / "cli").mkdir()
    for package in (root, root / "core", root / "cli"):
        (package / "__init__.py").write_text("")
    (root / "core" / "a.py").write_text("from swarm.core import b\n")
    (root / "core" / "b.py").write_text("def later():\n    from .a import thing\n")
    (root / "core" / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                        "    from swarm.core.d import D\n")
    (root / "core" / "d.py").write_text("from swarm.core.c import C\n")
    (root / "core" / "e.py").write_text("import swarm.cli.main\n")
    (root / "cli" / "main.py").write_text("from swarm.core.a import x\n")

    found = build_graph(root)

    assert cycles(found) == [["swarm.core.a", "swarm.core.b"]]
    assert type_only_cycles(found) == [["swarm.core.c", "swarm.core.d"]]  # c -> d never runs: allowed, listed
    assert [(i.source, i.target, i.lazy) for i in found.where("swarm.core.b", "swarm.core.a")] == [
        ("swarm.core.b", "swarm.core.a", True)]
    assert [(i.source, i.target) for i in upward(found)] == [("swarm.core.e", "swarm.cli.main")]
    assert "swarm.core.a -> swarm.core.b" in describe_cycles(found, cycles(found))
