"""StreamableHttpClient against our own McpHttpServer: server-to-client
requests, logs and progress on the request's stream, unsolicited messages on
the standalone stream, cancellation reaching the handler, re-initialization
after the session is deleted, JSON-RPC error bodies, and the server going
away mid-call."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from fixtures.peers import WAIT
from mcp_sse_server.client import McpConnectionError, StreamableHttpClient
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.engine.jsonrpc import CONNECTION_CLOSED, McpError
from mcp_sse_server.engine.server import McpServer
from mcp_sse_server.engine.types import CallToolResult, CreateMessageRequest, SamplingMessage, Tool
from mcp_sse_server.transport.http import McpHttpServer

EMPTY = {"type": "object", "properties": {}}


class Sessions:
    """Builds one McpServer per session and remembers them, with hooks for the tests."""

    def __init__(self) -> None:
        self.servers: list[McpServer] = []
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()

    def __call__(self) -> McpServer:
        server = McpServer("ours", "1.0.0")

        async def slow(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
            context.on_cancelled(self.cancelled.set)
            for step in range(1, int(arguments.get("steps", 1)) + 1):
                await context.report_progress(step, arguments.get("steps"), f"step {step}")
                self.started.set()
                await asyncio.sleep(0.02)
            return CallToolResult.text("done")

        async def chatty(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
            await context.log("info", "from the tool")
            return CallToolResult.text("logged")

        async def ask(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
            reply = await context.session.create_message(
                CreateMessageRequest([SamplingMessage.user("2+2?")], max_tokens=5)
            )
            answer = await context.session.elicit(
                "Name?", {"type": "object", "properties": {"name": {"type": "string"}}}
            )
            return CallToolResult.text(f"{reply.text} / {answer.action} {answer.content}")

        steps = {"type": "object", "properties": {"steps": {"type": "integer"}}}
        for tool in (Tool("slow", steps, slow), Tool("chatty", EMPTY, chatty), Tool("ask", EMPTY, ask)):
            server.add_tool(tool)
        self.servers.append(server)
        return server


@pytest.fixture
async def ours() -> AsyncIterator[tuple[Sessions, McpHttpServer]]:
    sessions = Sessions()
    http = await McpHttpServer.bind(sessions, port=0)
    try:
        yield sessions, http
    finally:
        await http.close()


async def test_server_requests_logs_progress_and_the_standalone_stream(ours: tuple[Sessions, McpHttpServer]) -> None:
    sessions, http = ours
    logs: list[dict[str, Any]] = []
    unsolicited = asyncio.Event()

    def on_log(params: dict[str, Any]) -> None:
        logs.append(params)
        if params["data"] == "unsolicited":
            unsolicited.set()

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada"}}

    # A session: a standalone GET stream carries what is sent outside any request.
    client = StreamableHttpClient(
        http.endpoint, on_log=on_log, sampling_handler=sample, elicitation_handler=elicit, mode="session"
    )
    async with client:
        progress: list[Any] = []
        assert (await client.call_tool("slow", {"steps": 2}, on_progress=lambda *p: progress.append(p))).content
        assert progress == [(1, 2, "step 1"), (2, 2, "step 2")]
        result = await client.call_tool("ask")
        assert result.content[0].text == "4 / accept {'name': 'Ada'}"  # type: ignore[union-attr]
        await client.call_tool("chatty")
        # Sent outside any request: it travels on the standalone GET stream.
        await sessions.servers[0].log("info", "unsolicited")
        await asyncio.wait_for(unsolicited.wait(), WAIT)
    assert [entry["data"] for entry in logs] == ["from the tool", "unsolicited"]


async def test_cancellation_reaches_the_handler(ours: tuple[Sessions, McpHttpServer]) -> None:
    sessions, http = ours
    async with StreamableHttpClient(http.endpoint, mode="session") as client:
        call = asyncio.create_task(client.call_tool("slow", {"steps": 1000}, on_progress=lambda *p: None))
        await asyncio.wait_for(sessions.started.wait(), WAIT)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.wait_for(sessions.cancelled.wait(), WAIT)
        await client.ping()


async def test_a_deleted_session_is_reinitialized(ours: tuple[Sessions, McpHttpServer]) -> None:
    sessions, http = ours
    async with StreamableHttpClient(http.endpoint, mode="session") as client:
        old = client.transport.session_id
        async with httpx.AsyncClient() as raw:
            response = await raw.delete(http.endpoint, headers={"mcp-session-id": old or ""})
            assert response.status_code in (200, 204)
        assert (await client.call_tool("chatty")).content[0].text == "logged"  # type: ignore[union-attr]
        assert client.transport.session_id not in (None, old)
    assert len(sessions.servers) == 2


async def test_a_refused_request_carries_the_servers_json_rpc_error(ours: tuple[Sessions, McpHttpServer]) -> None:
    _, http = ours
    client = StreamableHttpClient(http.endpoint, headers={"Origin": "http://evil.example"})
    with pytest.raises(McpError) as raised:
        await client.initialize()
    assert raised.value.code == -32600
    assert "origin" in raised.value.message.lower()


async def test_the_server_closing_mid_call_fails_the_call(ours: tuple[Sessions, McpHttpServer]) -> None:
    sessions, http = ours
    async with StreamableHttpClient(http.endpoint, reconnect_delay=0.01, max_reconnect_attempts=1) as client:
        call = asyncio.create_task(client.call_tool("slow", {"steps": 1000}, on_progress=lambda *p: None))
        await asyncio.wait_for(sessions.started.wait(), WAIT)
        await http.close(deadline=0)
        # Our server says goodbye on the stream; a server that just dies is in test_http_sdk.
        with pytest.raises(McpError) as raised:
            await asyncio.wait_for(call, WAIT)
        assert raised.value.code == CONNECTION_CLOSED
        with pytest.raises(McpConnectionError, match="Cannot reach"):
            await client.ping()


async def test_a_restarted_server_gets_a_new_session_transparently() -> None:
    first = Sessions()
    http = await McpHttpServer.bind(first, port=0)
    port = http.port
    client = StreamableHttpClient(http.endpoint, reconnect_delay=0.01, mode="session")
    try:
        await client.initialize()
        old = client.transport.session_id
        await http.close(deadline=0)
        second = Sessions()
        http = await McpHttpServer.bind(second, port=port)  # same address, no sessions
        assert (await client.call_tool("chatty")).content[0].text == "logged"  # type: ignore[union-attr]
        assert client.transport.session_id not in (None, old)
        assert len(second.servers) == 1
    finally:
        await client.close()
        await http.close()
