"""Each public name is written once, as an ``X as X`` import under ``if TYPE_CHECKING:`` in its
package's ``__init__.py`` (``engine/_lazy.py``): ``__all__``, ``dir()`` and the lazy imports come
from those lines, and every name resolves to what the line names."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys

import pytest

from mcp_sse_server.engine._lazy import type_checking_exports

PACKAGES = [
    "mcp_sse_server",
    "mcp_sse_server.auth",
    "mcp_sse_server.client",
    "mcp_sse_server.client.oauth",
    "mcp_sse_server.middleware",
    "mcp_sse_server.openapi",
    "mcp_sse_server.servers",
    "mcp_sse_server.stores",
    "mcp_sse_server.transport",
    "mcp_sse_server.transport.http",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_exports_are_the_type_checking_imports_and_resolve(name: str) -> None:
    package = importlib.import_module(name)
    source = inspect.getsource(package)
    exports = type_checking_exports(source)
    assert exports and sorted(package.__all__) == sorted(exports) == dir(package)
    for export, module in exports.items():
        assert getattr(package, export) is getattr(importlib.import_module(module, name), export)
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        package.nothing_here  # noqa: B018
    for node in ast.walk(ast.parse(source)):  # the re-export form, for type checkers
        if isinstance(node, ast.ImportFrom) and node.module != "typing" and "lazy" not in (node.module or ""):
            assert all(alias.asname == alias.name for alias in node.names), ast.unparse(node)


def test_importing_the_package_imports_none_of_its_dependencies() -> None:
    code = "import sys, mcp_sse_server; print(sorted({'orjson', 'httpx', 'uvicorn', 'pydantic'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_star_import_takes_every_name() -> None:
    namespace: dict[str, object] = {}
    exec("from mcp_sse_server.auth import *", namespace)
    assert {"JwtVerifier", "ResourceServer", "AccessToken"} <= set(namespace)
