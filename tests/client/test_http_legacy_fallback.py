"""StreamableHttpClient pointed at a legacy HTTP+SSE (2024-11-05) endpoint says so, and what to use instead."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from mcp_sse_server.client import ServerStartError, StreamableHttpClient, initialize_mcp_server
from mcp_sse_server.jsonrpc import McpError

from .asgi_server import serve
from .conftest import Peer


async def legacy_stream(request: Request) -> Response:
    async def body() -> AsyncIterator[bytes]:
        yield b"event: endpoint\ndata: /messages?session_id=abc\n\n"
        await asyncio.Event().wait()  # an SSE session stays open until the client leaves

    return StreamingResponse(body(), media_type="text/event-stream")


async def not_found(request: Request) -> Response:
    return Response("Not Found", status_code=404)


def legacy_app(post_status: int) -> Starlette:
    routes = [Route("/sse", legacy_stream, methods=["GET"])]  # Starlette answers a POST with 405
    if post_status == 404:
        routes = [Route("/sse", legacy_stream, methods=["GET"]), Route("/sse", not_found, methods=["POST"])]
    return Starlette(routes=routes)


@pytest.mark.parametrize("post_status", [405, 404])
async def test_a_legacy_sse_url_gets_a_hint_to_use_type_sse(post_status: int) -> None:
    async with serve(legacy_app(post_status)) as base:
        client = StreamableHttpClient(f"{base}/sse", request_timeout=5)
        try:
            with pytest.raises(McpError) as failed:
                await client.initialize()
        finally:
            await client.close()
    message = failed.value.message
    assert "legacy HTTP+SSE endpoint" in message
    assert 'type "sse"' in message
    assert f"HTTP {post_status}" in message
    assert failed.value.data == {"status": post_status, "transport": "sse"}


async def test_the_hint_reaches_initialize_mcp_server() -> None:
    async with serve(legacy_app(405)) as base:
        with pytest.raises(ServerStartError, match=r'legacy HTTP\+SSE endpoint.*type "sse"'):
            await initialize_mcp_server({"name": "old", "url": f"{base}/sse"}, startup_timeout=10)


async def test_a_plain_405_gets_no_legacy_hint() -> None:
    async def refuse(request: Request) -> Response:
        return Response("nope", status_code=405)

    app = Starlette(routes=[Route("/mcp", refuse, methods=["GET", "POST"])])
    async with serve(app) as base:
        client = StreamableHttpClient(f"{base}/mcp", request_timeout=5)
        try:
            with pytest.raises(McpError) as failed:
                await client.initialize()
        finally:
            await client.close()
    assert "legacy" not in failed.value.message
    assert "HTTP 405" in failed.value.message


async def test_the_official_sdk_legacy_server_gets_the_hint(sdk_sse: Peer) -> None:
    client = StreamableHttpClient(f"{sdk_sse.base}/sse", request_timeout=10)
    try:
        with pytest.raises(McpError, match=r'legacy HTTP\+SSE endpoint.*type "sse"'):
            await client.initialize()
    finally:
        await client.close()
