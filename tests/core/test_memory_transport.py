"""MemoryTransport: the seed's testing recipe, buffering, single subscription, closing."""

from __future__ import annotations

import asyncio

import pytest

from mcp_sse_server import CallToolResult, McpServer, MemoryTransport, Tool
from mcp_sse_server.engine.jsonrpc import JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse


async def _next_response(messages: object) -> JsonRpcResponse:
    async for message in messages:  # type: ignore[attr-defined]
        if isinstance(message, JsonRpcResponse):
            return message
    raise AssertionError("the stream ended without a response")


async def test_the_seed_recipe() -> None:
    server = McpServer("s", "1")
    server.add_tool(Tool("echo", {"type": "object"}, lambda args, ctx: CallToolResult.text("hi")))
    server_side, client_side = MemoryTransport.pair()
    await server.connect(server_side)
    messages = client_side.messages
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    await client_side.send(JsonRpcRequest(1, "initialize", init))
    assert (await _next_response(messages)).id == 1
    await client_side.send(JsonRpcNotification("notifications/initialized"))
    await client_side.send(JsonRpcRequest(2, "tools/list"))
    reply = await asyncio.wait_for(_next_response(messages), 5)
    assert [t["name"] for t in reply.result["tools"]] == ["echo"]
    await client_side.close()


async def test_messages_sent_before_the_listener_attaches_are_buffered_in_order() -> None:
    server_side, client_side = MemoryTransport.pair()
    sent: list[JsonRpcMessage] = [
        JsonRpcNotification("notifications/message", {"level": "info", "data": i}) for i in range(5)
    ]
    for message in sent:
        await server_side.send(message)
    await server_side.close()
    received = [message async for message in client_side.messages]
    assert received == sent


async def test_the_listener_receives_later_messages_too() -> None:
    server_side, client_side = MemoryTransport.pair()
    await server_side.send(JsonRpcNotification("early"))
    received: list[JsonRpcMessage] = []

    async def listen() -> None:
        async for message in client_side.messages:
            received.append(message)

    listener = asyncio.create_task(listen())
    await asyncio.sleep(0)
    await server_side.send(JsonRpcNotification("late"))
    await server_side.close()
    await asyncio.wait_for(listener, 5)
    assert [m.method for m in received if isinstance(m, JsonRpcNotification)] == ["early", "late"]


async def test_messages_is_single_subscription() -> None:
    _, client_side = MemoryTransport.pair()
    client_side.messages  # noqa: B018 - the first (and only) subscription
    with pytest.raises(RuntimeError, match="single-subscription"):
        client_side.messages  # noqa: B018


async def test_an_end_driven_by_an_engine_has_no_messages_stream() -> None:
    server_side, _ = MemoryTransport.pair()
    await McpServer("s", "1").connect(server_side)
    with pytest.raises(RuntimeError):
        server_side.messages  # noqa: B018


class _Recorder:
    """The smallest Dispatcher: records what the transport hands it."""

    def __init__(self, name: str, closes: list[str]) -> None:
        self.name = name
        self.closes = closes

    def on_message(self, message: JsonRpcMessage) -> None:
        pass

    async def dispatch(self, request: JsonRpcRequest) -> None:
        return None

    def on_close(self) -> None:
        self.closes.append(self.name)


async def test_attach_is_once_only() -> None:
    server_side, _ = MemoryTransport.pair()
    server_side.attach(_Recorder("a", []))
    with pytest.raises(RuntimeError):
        server_side.attach(_Recorder("a", []))


async def test_close_closes_both_ends_once() -> None:
    a, b = MemoryTransport.pair()
    closes: list[str] = []
    a.attach(_Recorder("a", closes))
    b.attach(_Recorder("b", closes))
    await b.close()
    await a.close()
    await b.close()
    assert sorted(closes) == ["a", "b"]
    assert a.closed and b.closed
    with pytest.raises(ConnectionError):
        await a.send(JsonRpcNotification("x"))
    with pytest.raises(ConnectionError):
        await b.send(JsonRpcNotification("x"))


async def test_a_listener_ends_when_the_connection_closes() -> None:
    server_side, client_side = MemoryTransport.pair()
    listener = asyncio.create_task(_drain(client_side))
    await asyncio.sleep(0)
    await server_side.close()
    assert await asyncio.wait_for(listener, 5) == []


async def _drain(end: MemoryTransport) -> list[JsonRpcMessage]:
    return [message async for message in end.messages]


async def test_messages_pass_as_objects_without_serialization() -> None:
    a, b = MemoryTransport.pair()
    params = {"k": [1, 2]}
    message = JsonRpcRequest(1, "x", params)
    await a.send(message)
    await a.close()
    (received,) = await _drain(b)
    assert received is message
