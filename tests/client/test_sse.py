"""SseClient against the official Python SDK's legacy HTTP+SSE server (a
subprocess), plus scripted servers for the endpoint rules."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from fixtures.peers import WAIT, Peer
from mcp_sse_server.client import McpConnectionError, SseClient
from mcp_sse_server.engine.jsonrpc import JsonRpcNotification, McpError

from .asgi_server import serve


async def test_a_session_with_the_sdk_legacy_server(sdk_sse: Peer) -> None:
    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "m"}

    logs: list[dict[str, Any]] = []
    async with SseClient(f"{sdk_sse.base}/sse", sampling_handler=sample, on_log=logs.append) as client:
        transport = client.transport.connection
        assert transport is not None and transport.endpoint is not None
        # The SDK names a relative endpoint; it was resolved against the stream URL.
        assert str(transport.endpoint).startswith(f"{sdk_sse.base}/messages/?session_id=")
        assert {"add", "divide"} <= {tool.name for tool in await client.list_tools()}
        assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
        assert (await client.call_tool("divide", {"a": 1, "b": 0})).is_error
        progress: list[Any] = []
        await client.call_tool("slow", {"steps": 2}, on_progress=lambda *p: progress.append(p))
        assert [p[0] for p in progress] == [1, 2]
        result = await client.call_tool("ask_model", {"question": "?"})
        assert result.content[0].text == "model said: 42"  # type: ignore[union-attr]
        await client.call_tool("chatty")
        assert [entry["data"] for entry in logs] == ["first", {"n": 2}]


async def test_cancelling_a_call_reaches_the_legacy_server(sdk_sse: Peer) -> None:
    started = asyncio.Event()
    async with SseClient(f"{sdk_sse.base}/sse") as client:
        call = asyncio.create_task(client.call_tool("slow", {"steps": 400}, on_progress=lambda *p: started.set()))
        await asyncio.wait_for(started.wait(), WAIT)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.wait_for(sdk_sse.watch("SLOW-CANCELLED").wait(), WAIT)


async def test_a_legacy_server_killed_mid_call_fails_the_call(fresh_sdk_sse: Peer) -> None:
    started = asyncio.Event()
    async with SseClient(f"{fresh_sdk_sse.base}/sse") as client:
        call = asyncio.create_task(client.call_tool("slow", {"steps": 400}, on_progress=lambda *p: started.set()))
        await asyncio.wait_for(started.wait(), WAIT)
        fresh_sdk_sse.kill()
        with pytest.raises(McpConnectionError) as raised:
            await asyncio.wait_for(call, WAIT)
        assert fresh_sdk_sse.base in raised.value.message
        with pytest.raises(McpError):  # the session is over: later calls fail at once
            await client.ping()


def stream_app(*events: bytes, status: int = 200) -> Starlette:
    """A legacy server that sends ``events`` on the stream, then keeps it open."""
    posted: list[bytes] = []

    async def sse(request: Request) -> Response:
        if status != 200:
            return PlainTextResponse("go away", status_code=status)

        async def body() -> AsyncIterator[bytes]:
            for event in events:
                yield event
            await asyncio.Event().wait()

        return StreamingResponse(body(), media_type="text/event-stream")

    async def messages(request: Request) -> Response:
        posted.append(await request.body())
        return Response(status_code=202)

    app = Starlette(routes=[Route("/sse", sse), Route("/messages", messages, methods=["POST"])])
    app.state.posted = posted
    return app


async def test_an_endpoint_on_another_origin_is_refused() -> None:
    async with serve(stream_app(b"event: endpoint\ndata: http://example.com:8080/messages\n\n")) as base:
        client = SseClient(f"{base}/sse")
        with pytest.raises(McpConnectionError, match=r"another origin \(http://example.com:8080\)"):
            await client.initialize()


async def test_an_endpoint_that_never_comes_is_a_timeout_not_a_hang() -> None:
    async with serve(stream_app(b": just a comment\n\n")) as base:
        client = SseClient(f"{base}/sse", connect_timeout=0.2)
        with pytest.raises(McpConnectionError, match=r"sent no endpoint event within 0\.2 s"):
            await client.initialize()


async def test_a_refused_stream_is_a_clear_error() -> None:
    async with serve(stream_app(status=401)) as base:
        client = SseClient(f"{base}/sse")
        with pytest.raises(McpConnectionError, match="answered the event-stream GET with HTTP 401"):
            await client.initialize()


async def test_the_endpoint_is_resolved_against_the_stream_url() -> None:
    app = stream_app(b"event: endpoint\ndata: messages?session=1\n\n")
    async with serve(app) as base:
        client = SseClient(f"{base}/sse")
        transport = await client.transport.connect()
        try:
            assert str(transport.endpoint) == f"{base}/messages?session=1"  # type: ignore[attr-defined]
            await transport.send(JsonRpcNotification("hello"))
            assert app.state.posted == [b'{"jsonrpc":"2.0","method":"hello"}']
        finally:
            await transport.close()
