"""The package's import layering (design review 2026-12-02, section 1): no cycle, nothing upward.

``scripts/import_scan.py`` reads every module's imports with ``ast``, counting the ones under
``if TYPE_CHECKING:`` and inside functions too, since they hide a dependency rather than remove
it. The subprocess checks confirm that what the scan says holds when Python imports.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src" / "mcp_sse_server"

# Design review 2026-12-02 (issue 36): no class of the package is longer than this.
MAX_CLASS_LINES = 500

# The modules below the transports; the layers they sit in are the scan's LAYERS.
CORE_TOP = 7

# Function-local imports allowed between core modules: each defers an import until it is needed
# (typed.py imports pydantic, request_state.py cryptography; visibility.py's rule classes load
# with a server's first rule and apps.py with its first app, so a server without them starts
# without them).
DEFERRED = {
    "mcp_sse_server.engine.typed",
    "mcp_sse_server.engine.request_state",
    "mcp_sse_server.engine.visibility",
    "mcp_sse_server.engine.apps",
}


def _load_scan() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_scan", ROOT / "scripts" / "import_scan.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("import_scan", module)  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


scan = _load_scan()


@pytest.fixture(scope="module")
def edges() -> list[Any]:
    return scan.scan()


def test_no_cycle_counting_runtime_type_checking_and_local_imports(edges: list[Any]) -> None:
    assert scan.cycles(edges) == []


def test_no_core_module_imports_from_a_layer_above_its_own(edges: list[Any]) -> None:
    upward = [str(edge) for edge in scan.upward(edges) if scan.layer_of(edge.source) <= CORE_TOP]
    assert upward == []


def test_core_modules_import_each_other_at_module_level(edges: list[Any]) -> None:
    local = [
        str(edge)
        for edge in edges
        if edge.kind == "local"
        and scan.layer_of(edge.source) <= CORE_TOP
        and scan.layer_of(edge.target) <= CORE_TOP
        and edge.target not in DEFERRED
    ]
    assert local == []


def test_every_module_has_a_layer() -> None:
    assert [name for name in scan.modules() if scan.layer_of(name) is None] == []


def test_the_scan_finds_a_cycle_through_a_type_checking_import(tmp_path: Path) -> None:
    package = tmp_path / "mcp_sse_server"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import B\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\nelse:\n    import os\n"
    )
    (package / "c.py").write_text("def f():\n    from . import a\n")
    found = scan.scan(package)
    assert {(edge.source, edge.target, edge.kind) for edge in found} == {
        ("mcp_sse_server.a", "mcp_sse_server.b", "runtime"),
        ("mcp_sse_server.b", "mcp_sse_server.a", "type_checking"),
        ("mcp_sse_server.c", "mcp_sse_server.a", "local"),
    }
    assert scan.cycles(found, ("runtime",)) == []
    assert scan.cycles(found) == [["mcp_sse_server.a", "mcp_sse_server.b"]]
    assert scan.main(["--root", str(package)]) == 1


@pytest.mark.parametrize(
    ("imported", "unloaded"),
    [
        ("mcp_sse_server.engine.session", ["mcp_sse_server.engine.server", "mcp_sse_server.engine.stateless"]),
        ("mcp_sse_server.engine.context", ["mcp_sse_server.engine.protocol", "mcp_sse_server.engine.session"]),
        ("mcp_sse_server.stores.memory", ["mcp_sse_server.engine.session", "mcp_sse_server.engine.protocol"]),
    ],
)
def test_importing_a_module_loads_nothing_above_it(imported: str, unloaded: list[str]) -> None:
    code = f"import sys, {imported}; print(sorted(m for m in {unloaded!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_redis_stores_default_to_the_http_limits_sizes() -> None:
    pytest.importorskip("redis")
    from mcp_sse_server.stores.redis_setup import DEFAULT_SIZES
    from mcp_sse_server.transport.http.limits import DEFAULT_LIMITS

    names = (
        "session_idle_timeout",
        "session_max_lifetime",
        "backlog_limit",
        "replay_buffer_size",
        "stream_log_grace",
        "ended_streams_kept",
    )
    assert [getattr(DEFAULT_SIZES, name) for name in names] == [getattr(DEFAULT_LIMITS, name) for name in names]


def _class_sizes(root: Path) -> list[tuple[str, int]]:
    """Every class under ``root`` as ``path:line Name`` and its length in lines (decorators to last line)."""
    sizes = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ClassDef):
                assert node.end_lineno is not None
                where = f"{path.relative_to(root.parent).as_posix()}:{node.lineno} {node.name}"
                sizes.append((where, node.end_lineno - node.lineno + 1))
    return sizes


def test_no_class_over_500_lines() -> None:
    offenders = [f"{where} ({lines} lines)" for where, lines in _class_sizes(SOURCE) if lines > MAX_CLASS_LINES]
    assert offenders == []


def test_the_class_size_check_sees_a_long_class(tmp_path: Path) -> None:
    package = tmp_path / "package"
    package.mkdir()
    body = "".join(f"    x{n} = {n}\n" for n in range(MAX_CLASS_LINES))
    (package / "big.py").write_text(f"class Small:\n    pass\n\n\nclass Big:\n{body}")
    assert _class_sizes(package) == [("package/big.py:1 Small", 2), ("package/big.py:5 Big", MAX_CLASS_LINES + 1)]


async def test_the_session_serves_the_stateless_era_only_through_its_hook() -> None:
    from mcp_sse_server import McpServer, MemoryTransport, ServerSession
    from mcp_sse_server.engine.jsonrpc import JsonRpcError, JsonRpcRequest, JsonRpcResponse
    from mcp_sse_server.engine.stateless import StatelessEndpoint, StatelessSwitch
    from mcp_sse_server.engine.stateless_meta import CLIENT_CAPABILITIES, PROTOCOL_VERSION_KEY

    server = McpServer("s", "1")
    stateless = JsonRpcRequest(
        1, "server/discover", {"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES: {}}}
    )
    plain = ServerSession(server, MemoryTransport.pair()[0])
    refused = await plain.connection.dispatch(stateless)
    assert isinstance(refused, JsonRpcError) and refused.code == -32600  # before initialize: a session era request

    switched = ServerSession(
        server, MemoryTransport.pair()[0], before_initialize=StatelessSwitch(StatelessEndpoint(server))
    )
    served = await switched.connection.dispatch(stateless)
    assert isinstance(served, JsonRpcResponse) and served.result["resultType"] == "complete"
    again = await switched.connection.dispatch(JsonRpcRequest(2, "initialize", {"protocolVersion": "2025-11-25"}))
    assert isinstance(again, JsonRpcError) and again.code == -32022  # the connection stays stateless
