"""``McpHttpApp`` mounted in Starlette and FastAPI, served by a real uvicorn: the parent's
``lifespan=app.lifespan`` (or ``async with app:`` inside a lifespan of its own) runs the app's
startup and shutdown, which the parent does not pass to mounted apps."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Mount

from fixtures.http_app import build_server
from fixtures.messages import ACCEPT_BOTH, initialize_message
from mcp_sse_server import Depends, McpServer
from mcp_sse_server.client import StreamableHttpClient
from mcp_sse_server.transport.http import McpHttpApp

# Only catches a hang: uvicorn's graceful shutdown and ours take well under a second.
HANG = 30.0


def starlette_app(mcp: McpHttpApp) -> Any:
    return Starlette(routes=[Mount("/mcp", app=mcp)], lifespan=mcp.lifespan)


def starlette_app_with_its_own_lifespan(mcp: McpHttpApp) -> Any:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp:
            yield

    return Starlette(routes=[Mount("/mcp", app=mcp)], lifespan=lifespan)


def fastapi_app(mcp: McpHttpApp) -> Any:
    fastapi = pytest.importorskip("fastapi")
    app = fastapi.FastAPI(lifespan=mcp.lifespan)
    app.mount("/mcp", mcp)
    return app


async def _serve(app: Any) -> tuple[uvicorn.Server, asyncio.Task[None], str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, lifespan="on", log_config=None, access_log=False))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    for _ in range(int(HANG / 0.01)):
        if server.started or task.done():
            break
        await asyncio.sleep(0.01)
    assert server.started, "uvicorn did not start"
    return server, task, f"http://127.0.0.1:{port}/mcp/"


@pytest.mark.parametrize("make", [starlette_app, starlette_app_with_its_own_lifespan, fastapi_app])
async def test_a_mounted_app_serves_and_its_shutdown_runs_with_the_parents(
    make: Callable[[McpHttpApp], Any],
) -> None:
    mcp = McpHttpApp(build_server())
    server, task, url = await _serve(make(mcp))
    try:
        async with StreamableHttpClient(url) as client:
            result = await client.call_tool("add", {"a": 2, "b": 3})
            assert result.content[0].text == "5"  # type: ignore[union-attr]
        # A session its client leaves open (no stream held, so uvicorn's own shutdown does not wait on it).
        async with httpx.AsyncClient() as http:
            reply = await http.post(url, json=initialize_message(), headers={"accept": ACCEPT_BOTH})
        assert reply.status_code == 200
        assert reply.headers["mcp-session-id"] in mcp.live_sessions
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, HANG)
    # The parent's shutdown ran the app's: the session was ended and the endpoint refuses work.
    assert dict(mcp.live_sessions) == {}
    await mcp.shutdown(deadline=0)  # (a second shutdown is harmless)


async def test_the_app_as_a_context_manager_starts_and_shuts_down() -> None:
    mcp = McpHttpApp(build_server())
    async with mcp as entered:
        assert entered is mcp
        transport = httpx.ASGITransport(app=mcp)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            reply = await http.post("/mcp", json=initialize_message(), headers={"accept": ACCEPT_BOTH})
        assert reply.status_code == 200 and len(mcp.live_sessions) == 1
    assert dict(mcp.live_sessions) == {}


async def test_the_apps_shutdown_cleans_up_the_servers_server_scoped_providers() -> None:
    events: list[str] = []

    async def pool() -> AsyncIterator[str]:
        events.append("opened")
        yield "pool"
        events.append("closed")

    server = McpServer("scoped")

    @server.tool()
    async def use(connection: str = Depends(pool, scope="server")) -> str:
        return connection

    mcp = McpHttpApp(server)
    async with mcp:
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=mcp))
        async with http, StreamableHttpClient("http://127.0.0.1/mcp", http_client=http) as client:
            assert (await client.call_tool("use")).content[0].text == "pool"  # type: ignore[union-attr]
        assert events == ["opened"]
    assert events == ["opened", "closed"]
