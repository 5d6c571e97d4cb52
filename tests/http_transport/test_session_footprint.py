"""What an idle session costs: opened through the ASGI app with initialize and
notifications/initialized, then left alone. Python allocations are counted with
tracemalloc (deterministic); compiled schemas live in Rust and are shared, so
they must not grow with the sessions."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

from mcp_sse_server import CallToolResult, McpServer, Tool
from mcp_sse_server.context import RequestContext
from mcp_sse_server.schema import _shared as compiled_schemas
from mcp_sse_server.transport.http import McpHttpApp

from .conftest import ADD_SCHEMA, open_session

SESSIONS = 300
BUDGET = 3 * 1024  # bytes of Python objects per idle session (the target for all memory is 4 KB)


async def add(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
    return CallToolResult.text(str(arguments["a"] + arguments["b"]))


def one_tool_server() -> McpServer:
    # What a typical factory does: a fresh server and Tool per session, shared handler and schema.
    server = McpServer("footprint", "1.0.0")
    server.add_tool(Tool("add", {**ADD_SCHEMA}, add, description="Adds two numbers."))
    return server


async def test_an_idle_session_stays_within_its_budget(make_app: Callable[..., McpHttpApp]) -> None:
    app = make_app(one_tool_server, max_sessions=SESSIONS + 50)
    for _ in range(20):  # warm caches and free lists first
        await open_session(app)
    gc.collect()
    compiled = len(compiled_schemas)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(SESSIONS):
            await open_session(app)
        gc.collect()
        per_session = (tracemalloc.get_traced_memory()[0] - before) / SESSIONS
    finally:
        tracemalloc.stop()
    assert len(app.sessions) == SESSIONS + 20
    assert per_session <= BUDGET, f"{per_session:.0f} B per idle session"
    assert len(compiled_schemas) == compiled  # every session reuses the compiled tool schemas
