"""What an idle session costs: opened through the ASGI app with initialize and
notifications/initialized, then left alone. Python allocations are counted with
tracemalloc (deterministic). One server serves every session, so nothing of the
server (registries, compiled schemas) grows with the sessions."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.asgi import open_session
from fixtures.http_app import ADD_SCHEMA
from mcp_sse_server import CallToolResult, McpServer, Tool
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.transport.http import McpHttpApp

pytestmark = pytest.mark.deployments(
    "local",
    reason="tracemalloc counts this process's objects; on Redis a session lives in redis-server "
    "(scripts/redis_session_cost.py measures that)",
)

SESSIONS = 300
BUDGET = 2 * 1024  # bytes of Python objects per idle session (the target for all memory is 4 KB)
# with on_session: the session also holds a server of its own (7.6 KB with the skills methods in its tables)
PER_SESSION_SERVER_BUDGET = 8 * 1024


async def add(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
    return CallToolResult.text(str(arguments["a"] + arguments["b"]))


def one_tool_server() -> McpServer:
    server = McpServer("footprint", "1.0.0")
    server.add_tool(Tool("add", {**ADD_SCHEMA}, add, description="Adds two numbers."))
    return server


async def _bytes_per_idle_session(app: McpHttpApp) -> float:
    for _ in range(20):  # warm caches and free lists first
        await open_session(app)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(SESSIONS):
            await open_session(app)
        gc.collect()
        per_session = (tracemalloc.get_traced_memory()[0] - before) / SESSIONS
    finally:
        tracemalloc.stop()
    assert len(app.live_sessions) == SESSIONS + 20
    return per_session


async def test_an_idle_session_stays_within_its_budget(make_app: Callable[..., McpHttpApp]) -> None:
    server = one_tool_server()
    per_session = await _bytes_per_idle_session(make_app(server, max_sessions=SESSIONS + 50))
    assert per_session <= BUDGET, f"{per_session:.0f} B per idle session"
    assert len(server.sessions) == SESSIONS + 20  # one server, every session


async def test_a_server_per_session_costs_its_registry_on_top(make_app: Callable[..., McpHttpApp]) -> None:
    per_session = await _bytes_per_idle_session(make_app(one_tool_server, max_sessions=SESSIONS + 50))
    assert per_session <= PER_SESSION_SERVER_BUDGET, f"{per_session:.0f} B per idle session"
