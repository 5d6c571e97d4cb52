"""Each public name is exported once: the lazy export table, ``__all__`` and the
type checker's imports of a package agree, and every name resolves."""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest

PACKAGES = ["mcp_sse_server", "mcp_sse_server.client", "mcp_sse_server.servers"]


def _type_checking_names(module: object) -> set[str]:
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom):
                    names.update(alias.asname or alias.name for alias in statement.names)
    return names


@pytest.mark.parametrize("name", PACKAGES)
def test_exports_agree_and_resolve(name: str) -> None:
    package = importlib.import_module(name)
    exports: dict[str, str] = package._EXPORTS
    assert sorted(package.__all__) == sorted(exports)
    assert _type_checking_names(package) == set(exports)
    for export in exports:
        assert getattr(package, export) is not None
