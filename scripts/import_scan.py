"""Import edges between the modules of ``src/mcp_sse_server``, their cycles, and layering breaks.

An AST scan (nothing is imported). Every ``import`` / ``from ... import`` that names a module of
the package is an edge, labelled by where it sits:

* ``runtime``: executed when the module loads (module level, class bodies, ``try`` blocks);
* ``type_checking``: under ``if TYPE_CHECKING:`` (only the type checker follows it);
* ``local``: inside a function (runs on the first call).

All three count for cycles: a ``TYPE_CHECKING`` or function-local edge still says that one
module needs the other, it only hides the import-order puzzle. ``from pkg import name`` is an
edge to ``pkg.name`` when that is a module, else to ``pkg``; the implicit import of a parent
package's ``__init__`` is not an edge (every module would then depend on the package root).

Usage::

    python scripts/import_scan.py            # edges in cycles; exit status 1 when there is one
    python scripts/import_scan.py --layers   # also the edges that go up in LAYERS
    python scripts/import_scan.py --edges    # also every edge

Importable: ``scan()``, ``cycles()``, ``upward()`` (``tests/core/test_layers.py`` uses them).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

__all__ = ["LAYERS", "Edge", "Kind", "cycles", "layer_of", "main", "modules", "scan", "upward"]

PACKAGE: Final = "mcp_sse_server"
SOURCE: Final = Path(__file__).resolve().parent.parent / "src" / PACKAGE

Kind = Literal["runtime", "type_checking", "local"]
KINDS: Final[tuple[Kind, ...]] = ("runtime", "type_checking", "local")

# The layering, lowest first: a module imports only from its own layer or below. Keys are module
# names without the package prefix; a key ending in ".*" covers a subpackage; the longest matching
# key wins. The folders are the floors (the engine at the bottom, the command line at the top);
# inside the engine, its modules keep the order of design review 2026-12-02, section 1.2.
LAYERS: Final[dict[str, int]] = {
    # The engine, L0-L7.
    "engine": 0,
    # L0: plain data and pure helpers
    "engine._lazy": 0,
    "engine.jsonrpc": 0,
    "engine.versions": 0,
    "engine.deadline": 0,
    "engine.uri_template": 0,
    "engine.schema": 0,
    "engine.request_state": 0,
    "engine.records": 0,
    "engine.elicitation_schema": 0,
    "engine.background": 0,
    "engine.tokens": 0,
    "engine.scopes": 0,
    "engine.skill_format": 0,
    "engine.downlevel": 0,
    "engine.batches": 0,
    "engine.not_found": 0,
    "engine.visibility": 0,
    # L1: what a handler gets, and what a transport is
    "engine.context": 1,
    "engine.transport": 1,
    "engine.handlers": 1,
    "engine.transports": 0,
    # L2: wire and registration data
    "engine.types": 2,
    "engine.stateless_meta": 2,
    "engine.typed": 2,
    "engine.skills": 2,
    "engine.registry": 2,
    "engine.middleware": 2,
    "engine.observe": 2,
    # L3: the JSON-RPC engine
    "engine.protocol": 3,
    # L4: the store interfaces and the in-process event bus and task store
    "engine.stores": 4,
    "engine.memory_stores": 4,
    # L5-L7: sessions, the stateless endpoint, the server
    "engine.session": 5,
    "engine.stateless": 6,
    "engine.tasks": 6,
    "engine.server": 7,
    "engine.mount": 7,
    "engine.transform": 3,
    "engine.apps": 7,
    "engine.app_links": 2,
    "engine.app_decorators": 7,
    "engine.files": 7,
    "engine.tools": 7,
    "engine.resources": 7,
    "engine.prompts": 7,
    "engine.completion": 7,
    "engine.lifecycle": 7,
    "engine.decorators": 7,
    # L8: what the engine's interfaces are implemented and guarded with: stores, auth
    "stores": 8,
    "stores.*": 8,
    "auth": 8,
    "auth.*": 8,
    # telemetry implements engine.observe; nothing below it imports it
    "telemetry": 8,
    "telemetry.*": 8,
    # L9: transports
    "transport": 9,
    "transport.*": 9,
    # L10: clients and bundled servers
    "client": 10,
    "client.*": 10,
    "servers": 10,
    "servers.*": 10,
    "openapi": 10,
    "openapi.*": 10,
    "proxy": 10,
    "proxy.*": 10,
    "middleware": 10,
    "middleware.*": 10,
    # L11: the command line and the package root
    "cli": 11,
    "cli.*": 11,
    "": 11,
    "__main__": 11,
}


@dataclass(frozen=True, slots=True)
class Edge:
    """``source`` imports ``target`` (full dotted names) at ``path:line``, as ``kind``."""

    source: str
    target: str
    kind: Kind
    path: str
    line: int

    def __str__(self) -> str:
        return f"{_short(self.source)} -> {_short(self.target)}  [{self.kind}]  {self.path}:{self.line}"


def _short(module: str) -> str:
    """``mcp_sse_server.engine.stores`` -> ``stores.base``; the root stays its own name."""
    return module[len(PACKAGE) + 1 :] if module.startswith(PACKAGE + ".") else module


def modules(root: Path = SOURCE) -> dict[str, Path]:
    """Every module of the package under ``root``, by dotted name (a package by its ``__init__``)."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = [PACKAGE, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


class _Collector(ast.NodeVisitor):
    """The import statements of one module, each with the kind of place it sits in."""

    def __init__(self) -> None:
        self.found: list[tuple[ast.Import | ast.ImportFrom, Kind]] = []
        self._functions = 0
        self._type_checking = 0

    def _kind(self) -> Kind:
        if self._functions:
            return "local"
        return "type_checking" if self._type_checking else "runtime"

    def visit_Import(self, node: ast.Import) -> None:
        self.found.append((node, self._kind()))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.found.append((node, self._kind()))

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        self._functions += 1
        self.generic_visit(node)
        self._functions -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        self.visit(node.test)
        self._type_checking += 1
        for statement in node.body:
            self.visit(statement)
        self._type_checking -= 1
        for statement in node.orelse:  # the else branch of TYPE_CHECKING is what runs
            self.visit(statement)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` names."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base.pop()  # a module's relative imports start from its package
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def scan(root: Path = SOURCE) -> list[Edge]:
    """Every import edge between two modules of the package under ``root``, in file order."""
    known = modules(root)
    edges: list[Edge] = []
    for module, path in known.items():
        collector = _Collector()
        collector.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        shown = path.relative_to(root.parent.parent) if root.parent.parent in path.parents else path
        for node, kind in collector.found:
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(module, path.name == "__init__.py", node)
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    targets.append(submodule if submodule in known else base)
            for target in dict.fromkeys(targets):  # one edge per statement and target
                if target in known and target != module:
                    edges.append(Edge(module, target, kind, str(shown), node.lineno))
    return edges


def cycles(edges: Iterable[Edge], kinds: Iterable[Kind] = KINDS) -> list[list[str]]:
    """The strongly connected components of more than one module, counting edges of ``kinds``
    (Tarjan's algorithm, iterative); each sorted, the list sorted by its first member."""
    wanted = set(kinds)
    graph: dict[str, set[str]] = {}
    for edge in edges:
        if edge.kind in wanted:
            graph.setdefault(edge.source, set()).add(edge.target)
            graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def layer_of(module: str, layers: dict[str, int] = LAYERS) -> int | None:
    """The layer of a module (full dotted name) in ``layers``, None when it is not placed."""
    short = "" if module == PACKAGE else _short(module)
    if short in layers:
        return layers[short]
    parts = short.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        key = ".".join(parts[:cut]) + ".*"
        if key in layers:
            return layers[key]
    return None


def upward(edges: Iterable[Edge], layers: dict[str, int] = LAYERS) -> list[Edge]:
    """The edges whose target sits in a higher layer than their source (unplaced modules skipped)."""
    found = []
    for edge in edges:
        source, target = layer_of(edge.source, layers), layer_of(edge.target, layers)
        if source is not None and target is not None and target > source:
            found.append(edge)
    return found


def _report(edges: list[Edge], root: Path, *, layers: bool, every_edge: bool) -> tuple[list[str], bool]:
    lines: list[str] = []
    counts = {kind: sum(edge.kind == kind for edge in edges) for kind in KINDS}
    tally = ", ".join(f"{kind} {count}" for kind, count in counts.items())
    lines.append(f"{len(modules(root))} modules, {len(edges)} edges ({tally})")
    if every_edge:
        lines.append("")
        lines.append("edges:")
        lines.extend(f"  {edge}" for edge in edges)
    # Cycles grow as more kinds of edge count: show each step, as the review did.
    steps: Sequence[tuple[str, tuple[Kind, ...]]] = (
        ("runtime", ("runtime",)),
        ("runtime + type_checking", ("runtime", "type_checking")),
        ("runtime + type_checking + local", KINDS),
    )
    for label, kinds in steps:
        components = cycles(edges, kinds)
        lines.append("")
        lines.append(f"cycles counting {label}: {len(components) or 'none'}")
        for component in components:
            members = set(component)
            lines.append(f"  {len(component)} modules: {', '.join(_short(name) for name in component)}")
            lines.extend(
                f"    {edge}"
                for edge in edges
                if edge.kind in kinds and edge.source in members and edge.target in members
            )
    has_cycle = bool(cycles(edges))
    if layers:
        unplaced = sorted(name for name in modules(root) if layer_of(name) is None)
        going_up = upward(edges)
        lines.append("")
        lines.append(f"upward edges (design review 1.2 layering): {len(going_up) or 'none'}")
        for edge in going_up:
            lines.append(f"  L{layer_of(edge.source)} -> L{layer_of(edge.target)}  {edge}")
        if unplaced:
            lines.append(f"modules not placed in a layer: {', '.join(_short(name) for name in unplaced)}")
    return lines, has_cycle


def main(argv: Sequence[str] | None = None) -> int:
    """Print the scan; exit status 1 when the package has an import cycle (any kind of edge)."""
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0] if __doc__ else None)
    parser.add_argument("--layers", action="store_true", help="also list the edges that go up in the layering")
    parser.add_argument("--edges", action="store_true", help="also list every edge")
    parser.add_argument("--root", type=Path, default=SOURCE, help="the package directory (default: %(default)s)")
    arguments = parser.parse_args(argv)
    root = arguments.root.resolve()
    lines, has_cycle = _report(scan(root), root, layers=arguments.layers, every_edge=arguments.edges)
    print("\n".join(lines))
    return 1 if has_cycle else 0


if __name__ == "__main__":
    sys.exit(main())
