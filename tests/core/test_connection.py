"""The shared JSON-RPC engine: duplicate ids, and Connection as a bare client of McpServer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from fixtures.sessions import Connect, text_of
from mcp_sse_server import CallToolResult, McpServer, MemoryTransport, RequestContext, Tool
from mcp_sse_server.engine.jsonrpc import (
    CONNECTION_CLOSED,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    JsonRpcError,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    McpError,
)
from mcp_sse_server.engine.protocol import Connection

# --- duplicate ids ----------------------------------------------------------------------


async def test_a_duplicate_in_flight_id_is_refused_and_the_first_still_answered(
    server: McpServer, connect: Connect
) -> None:
    gate = asyncio.Event()
    started = asyncio.Event()

    async def slow(arguments: dict[str, Any], context: RequestContext) -> str:
        started.set()
        await gate.wait()
        return "first"

    server.add_tool(Tool("slow", {"type": "object"}, slow))
    client = await connect(server)
    await client.send_request("tools/call", {"name": "slow"}, id=5)
    await started.wait()
    await client.send_request("ping", id=5)
    duplicate = await client.response(5)
    assert isinstance(duplicate, JsonRpcError)
    assert duplicate.code == INVALID_REQUEST
    assert "5" in duplicate.message
    gate.set()
    first = await client.response(5)
    assert isinstance(first, JsonRpcResponse)
    assert text_of(first.result) == "first"
    # Once answered, the id is free again.
    assert await client.call("ping", id=5) == JsonRpcResponse(5, {})


async def test_string_and_integer_ids_are_distinct(server: McpServer, connect: Connect) -> None:
    gate = asyncio.Event()

    async def slow(arguments: dict[str, Any], context: RequestContext) -> str:
        await gate.wait()
        return "slow"

    server.add_tool(Tool("slow", {"type": "object"}, slow))
    client = await connect(server)
    await client.send_request("tools/call", {"name": "slow"}, id=1)
    assert await client.call("ping", id="1") == JsonRpcResponse("1", {})
    gate.set()
    assert isinstance(await client.response(1), JsonRpcResponse)


async def test_dispatch_refuses_a_duplicate_id_too(server: McpServer, connect: Connect) -> None:
    gate = asyncio.Event()

    async def slow(arguments: dict[str, Any], context: RequestContext) -> str:
        await gate.wait()
        return "slow"

    server.add_tool(Tool("slow", {"type": "object"}, slow))
    await connect(server)
    connection = server.sessions[0].connection
    first = asyncio.create_task(connection.dispatch(JsonRpcRequest(9, "tools/call", {"name": "slow"})))
    await asyncio.sleep(0)
    second = await connection.dispatch(JsonRpcRequest(9, "ping"))
    assert isinstance(second, JsonRpcError) and second.code == INVALID_REQUEST
    gate.set()
    assert isinstance(await first, JsonRpcResponse)


# --- Connection as a bare client ------------------------------------------------------------


class BareClient:
    """The smallest ConnectionOwner: answers roots/list and records notifications."""

    def __init__(self) -> None:
        self.notifications: list[JsonRpcNotification] = []
        self.closed = False

    async def handle_request(self, request: JsonRpcRequest, context: RequestContext) -> dict[str, Any]:
        if request.method == "roots/list":
            return {"roots": [{"uri": "file:///work"}]}
        if request.method == "ping":
            return {}
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {request.method}")

    def handle_notification(self, notification: JsonRpcNotification) -> None:
        self.notifications.append(notification)

    def connection_closed(self) -> None:
        self.closed = True


@pytest.fixture
async def engine(server: McpServer) -> AsyncIterator[tuple[Connection, BareClient]]:
    server_side, client_side = MemoryTransport.pair()
    await server.connect(server_side)
    owner = BareClient()
    connection = Connection(client_side, owner)
    yield connection, owner
    await connection.close()


async def _handshake(connection: Connection, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await connection.request(
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": capabilities or {}, "clientInfo": {"name": "bare"}},
    )
    await connection.notify("notifications/initialized")
    await connection.request("ping")  # lets the server see notifications/initialized
    return result


async def test_a_bare_connection_talks_to_the_server(server: McpServer, engine: tuple[Connection, BareClient]) -> None:
    connection, _ = engine
    server.add_tool(Tool("add", {"type": "object"}, lambda args, ctx: CallToolResult.text(str(args["a"] + args["b"]))))
    result = await _handshake(connection)
    assert result["serverInfo"]["name"] == "test-server"
    tools = await connection.request("tools/list")
    assert [t["name"] for t in tools["tools"]] == ["add"]
    call = await connection.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}})
    assert text_of(call) == "42"


async def test_an_error_response_raises_mcp_error(server: McpServer, engine: tuple[Connection, BareClient]) -> None:
    connection, _ = engine
    await _handshake(connection)
    with pytest.raises(McpError) as caught:
        await connection.request("tools/call", {"name": "ghost"})
    assert caught.value.code in (INVALID_PARAMS, METHOD_NOT_FOUND)
    with pytest.raises(McpError) as caught:
        await connection.request("no/such/method")
    assert caught.value.code == METHOD_NOT_FOUND


async def test_the_server_calls_back_into_a_bare_client(
    server: McpServer, engine: tuple[Connection, BareClient]
) -> None:
    connection, owner = engine
    await _handshake(connection, {"roots": {}})
    roots = await server.sessions[0].list_roots()
    assert [r.uri for r in roots] == ["file:///work"]
    await server.sessions[0].ping()
    server.add_tool(Tool("t", {"type": "object"}, lambda args, ctx: ""))
    await connection.request("ping")
    assert [n.method for n in owner.notifications] == ["notifications/tools/list_changed"]


async def test_progress_is_routed_to_the_callers_callback(
    server: McpServer, engine: tuple[Connection, BareClient]
) -> None:
    connection, owner = engine

    async def work(arguments: dict[str, Any], context: RequestContext) -> str:
        for step in (1, 2, 3):
            await context.report_progress(step, total=3, message=f"step {step}")
        return "done"

    server.add_tool(Tool("work", {"type": "object"}, work))
    await _handshake(connection)
    seen: list[tuple[float, float | None, str | None]] = []
    result = await connection.request(
        "tools/call", {"name": "work"}, on_progress=lambda p, t, m: seen.append((p, t, m))
    )
    assert text_of(result) == "done"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    # Routed progress does not also reach the owner as a plain notification.
    assert not [n for n in owner.notifications if n.method == "notifications/progress"]


async def test_a_client_timeout_cancels_the_handler_on_the_server(
    server: McpServer, engine: tuple[Connection, BareClient]
) -> None:
    connection, _ = engine
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def forever(arguments: dict[str, Any], context: RequestContext) -> str:
        context.on_cancelled(cancelled.set)
        started.set()
        await asyncio.Event().wait()
        return "never"

    server.add_tool(Tool("forever", {"type": "object"}, forever))
    await _handshake(connection)
    with pytest.raises(TimeoutError):
        await connection.request("tools/call", {"name": "forever"}, timeout=0.01)
    await asyncio.wait_for(cancelled.wait(), 5)
    assert started.is_set()
    assert server.sessions[0].connection is not None
    await connection.request("ping")
    assert server.sessions[0].connection.inflight_count == 0


async def test_a_cancelled_client_call_cancels_the_handler_on_the_server(
    server: McpServer, engine: tuple[Connection, BareClient]
) -> None:
    connection, _ = engine
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def forever(arguments: dict[str, Any], context: RequestContext) -> str:
        context.on_cancelled(cancelled.set)
        started.set()
        await asyncio.Event().wait()
        return "never"

    server.add_tool(Tool("forever", {"type": "object"}, forever))
    await _handshake(connection)
    call = asyncio.create_task(connection.request("tools/call", {"name": "forever"}, timeout=None))
    await started.wait()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await asyncio.wait_for(cancelled.wait(), 5)


async def test_closing_fails_pending_calls_and_later_ones(
    server: McpServer, engine: tuple[Connection, BareClient]
) -> None:
    connection, owner = engine
    gate = asyncio.Event()

    async def slow(arguments: dict[str, Any], context: RequestContext) -> str:
        gate.set()
        await asyncio.Event().wait()
        return "never"

    server.add_tool(Tool("slow", {"type": "object"}, slow))
    await _handshake(connection)
    call = asyncio.create_task(connection.request("tools/call", {"name": "slow"}, timeout=None))
    await gate.wait()
    await connection.close()
    with pytest.raises(McpError) as caught:
        await call
    assert caught.value.code == CONNECTION_CLOSED
    with pytest.raises(McpError) as caught:
        await connection.request("ping")
    assert caught.value.code == CONNECTION_CLOSED
    assert owner.closed
    assert server.sessions == ()  # the server forgot the closed session
    # Notifications after close are dropped quietly.
    await connection.notify("notifications/initialized")


async def test_a_response_to_an_unknown_id_is_ignored(server: McpServer, engine: tuple[Connection, BareClient]) -> None:
    connection, _ = engine
    await _handshake(connection)
    assert server.sessions[0].connection is not None
    # The client answers a request the server never sent; the server shrugs it off.
    await connection.transport.send(JsonRpcResponse(424242, {}))
    await connection.transport.send(JsonRpcError(None, -32700, "peer could not parse something"))
    assert await connection.request("ping") == {}
