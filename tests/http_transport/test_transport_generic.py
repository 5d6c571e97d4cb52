"""SseTransport with an engine other than this package's Connection: one that takes every
message through a callback, attached with ``CallbackDispatcher``."""

from __future__ import annotations

import asyncio

from fixtures.asgi import AsgiCall, until
from fixtures.messages import notification, request
from mcp_sse_server.engine.jsonrpc import JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse
from mcp_sse_server.engine.transport import CallbackDispatcher
from mcp_sse_server.transport.http import SseTransport


class EchoEngine:
    """Answers each request after a progress notification; holds "hold" until released."""

    def __init__(self, transport: SseTransport) -> None:
        self.transport = transport
        self.received: list[JsonRpcMessage] = []
        self.release = asyncio.Event()
        self.closed = False
        self.tasks: set[asyncio.Task[None]] = set()
        self.adapter = CallbackDispatcher(transport, self.received_message, self.connection_closed)

    def received_message(self, message: JsonRpcMessage) -> None:
        self.received.append(message)
        if isinstance(message, JsonRpcRequest):
            task = asyncio.get_running_loop().create_task(self.answer(message))
            self.tasks.add(task)

    async def answer(self, message: JsonRpcRequest) -> None:
        send = self.adapter.send
        await send(JsonRpcNotification("notifications/progress", {"progress": 1}), message.id)
        if message.method == "hold":
            await self.release.wait()
            await send(JsonRpcNotification("notifications/message", {"data": "late"}), message.id)
        await send(JsonRpcResponse(message.id, {"echo": message.method}), message.id)

    def connection_closed(self) -> None:
        self.closed = True


async def test_requests_and_notifications_through_on_message() -> None:
    transport = SseTransport(session_id="generic-1")
    engine = EchoEngine(transport)
    reply = await AsgiCall(transport.handle_post, "POST", request(1, "initialize")).start().finish()
    assert reply.status == 200 and reply.headers["mcp-session-id"] == "generic-1"
    assert [m.get("method", "reply") for m in reply.messages] == ["notifications/progress", "reply"]
    assert reply.messages[-1]["result"] == {"echo": "initialize"}
    assert transport.initialized
    done = await AsgiCall(transport.handle_post, "POST", notification("notifications/initialized")).start().finish()
    assert done.status == 202
    assert isinstance(engine.received[-1], JsonRpcNotification)
    await transport.close()
    assert engine.closed


async def test_a_client_leaving_reroutes_later_messages_to_the_standalone_stream() -> None:
    transport = SseTransport(session_id="generic-2")
    engine = EchoEngine(transport)
    held = AsgiCall(transport.handle_post, "POST", request(7, "hold")).start()
    await held.events(1)
    held.disconnect()
    await until(lambda: transport.inflight == 0)
    engine.release.set()  # the engine carries on; its late notification has nowhere but the GET stream
    await asyncio.gather(*engine.tasks)
    await held.finish()
    stream = AsgiCall(transport.handle_get, "GET").start()
    events = await stream.events(1)
    assert events[0]["data"]["params"] == {"data": "late"}
    assert events[0]["id"] == "1"
    stream.disconnect()
    await stream.finish()
    await transport.close()
