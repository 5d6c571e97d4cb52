"""StreamableHttpClient pointed at a legacy HTTP+SSE (2024-11-05) endpoint falls back
to that transport (the 2025-11-25 rule: after 400, 404 or 405 to the initialize
POST, a GET that opens an event stream); when it cannot, it says what the URL
is and what to use instead."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from fixtures.peers import Peer, python_env
from mcp_sse_server.client import ServerStartError, StreamableHttpClient, initialize_mcp_server
from mcp_sse_server.client.http import LegacySseEndpointError
from mcp_sse_server.engine import versions
from mcp_sse_server.engine.jsonrpc import McpError

from .asgi_server import serve
from .scenario import run_scenario
from .test_scenario import reference


async def legacy_stream(request: Request) -> Response:
    async def body() -> AsyncIterator[bytes]:
        yield b"event: endpoint\ndata: /messages?session_id=abc\n\n"
        await asyncio.Event().wait()  # an SSE session stays open until the client leaves

    return StreamingResponse(body(), media_type="text/event-stream")


def legacy_app(post_status: int) -> Starlette:
    """A GET opens a legacy stream, a POST gets ``post_status``; the endpoint it names does not exist."""

    async def refuse(request: Request) -> Response:
        return Response("Refused", status_code=post_status)

    routes = [Route("/sse", legacy_stream, methods=["GET"])]  # Starlette answers a POST with 405
    if post_status != 405:
        routes.append(Route("/sse", refuse, methods=["POST"]))
    return Starlette(routes=routes)


@pytest.mark.parametrize("post_status", [400, 404, 405])
async def test_without_fallback_a_legacy_url_gets_a_hint_to_use_type_sse(post_status: int) -> None:
    async with serve(legacy_app(post_status)) as base:
        client = StreamableHttpClient(f"{base}/sse", request_timeout=5, fallback_to_sse=False)
        try:
            with pytest.raises(LegacySseEndpointError) as failed:
                await client.initialize()
        finally:
            await client.close()
    message = failed.value.message
    assert "legacy HTTP+SSE endpoint" in message and 'type "sse"' in message
    assert f"HTTP {post_status}" in message and "fallback" not in message
    assert failed.value.data == {"status": post_status, "transport": "sse"}


async def test_a_fallback_that_fails_keeps_the_hint_and_says_why() -> None:
    async with serve(legacy_app(405)) as base:
        client = StreamableHttpClient(f"{base}/sse", request_timeout=5)
        try:
            with pytest.raises(LegacySseEndpointError) as failed:
                await client.initialize()
        finally:
            await client.close()
    message = failed.value.message
    assert "legacy HTTP+SSE endpoint (protocol 2024-11-05): a POST got HTTP 405" in message
    assert "the fallback to that transport failed" in message and "HTTP 405" in message  # POST /messages: none
    assert failed.value.data == {"status": 405, "transport": "sse"}
    assert not client.transport.legacy


async def test_the_hint_reaches_initialize_mcp_server() -> None:
    async with serve(legacy_app(405)) as base:
        with pytest.raises(ServerStartError, match=r'legacy HTTP\+SSE endpoint.*type "sse"'):
            await initialize_mcp_server({"name": "old", "url": f"{base}/sse"}, startup_timeout=10)


async def test_a_plain_405_gets_no_legacy_hint_and_no_fallback() -> None:
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
    assert not isinstance(failed.value, LegacySseEndpointError)
    assert "legacy" not in failed.value.message
    assert "HTTP 405" in failed.value.message


def without_version(record: dict[str, object]) -> dict[str, object]:
    return {key: value for key, value in record.items() if key != "protocolVersion"}


async def test_the_official_sdk_legacy_server_is_spoken_to_over_its_transport(sdk_sse: Peer) -> None:
    client = StreamableHttpClient(f"{sdk_sse.base}/sse", request_timeout=10)
    record = await run_scenario(client)
    assert client.transport.legacy and client.transport.connection.legacy is not None  # type: ignore[union-attr]
    assert without_version(record) == without_version(await reference())
    assert record["protocolVersion"] in versions.CLIENT_ACCEPTED


async def test_the_cli_lists_a_legacy_servers_tools_by_its_url(sdk_sse: Peer, tmp_path: Path) -> None:
    env = {**os.environ, **python_env(), "MCP_SSE_SERVER_CONFIG": str(tmp_path / "registry.json")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "mcp_sse_server", "tools", f"{sdk_sse.base}/sse"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "add(a: number, b: number)" in done.stdout.splitlines()
