"""The fixtures of the HTTP transport tests: the app (``make_app``, ``app``) the tests drive through
``fixtures.asgi`` (no socket), and ``bound``, a real ``McpHttpServer`` on a loopback port for tests
that need uvicorn, TLS or a real client library. Helpers are in tests/fixtures (asgi, messages,
http_app, node).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from fixtures.http_app import Clock, Gate, build_server, http_app
from mcp_sse_server import McpServer
from mcp_sse_server.transport.http import HttpLimits, McpHttpApp, McpHttpServer


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def make_app(gate: Gate, clock: Clock) -> AsyncIterator[Callable[..., McpHttpApp]]:
    """Build apps with test limits; every app is shut down after the test."""
    apps: list[McpHttpApp] = []

    def make(factory: McpServer | Callable[[], Any] | None = None, **limits: Any) -> McpHttpApp:
        app = http_app(factory, gate, clock, limits=HttpLimits(**limits))
        apps.append(app)
        return app

    yield make
    for app in apps:
        await app.shutdown(deadline=0.5)


@pytest.fixture
async def app(make_app: Callable[..., McpHttpApp]) -> McpHttpApp:
    return make_app()


# --- a real server on a socket ---------------------------------------------------------


@pytest.fixture
async def bound(gate: Gate) -> AsyncIterator[McpHttpServer]:
    http = await McpHttpServer.bind(build_server(gate), port=0)
    try:
        yield http
    finally:
        await http.close(deadline=0.5)
