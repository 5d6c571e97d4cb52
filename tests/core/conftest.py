"""Fixtures that drive an McpServer with raw JSON-RPC messages over MemoryTransport.

``RawClient`` plays the client by hand: it sends exactly the messages a test
writes and records everything the server sends back, so tests can assert on
the wire shape (and on the absence of a message) without a client library in
between.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from mcp_sse_server import PROTOCOL_VERSION, McpServer, MemoryTransport
from mcp_sse_server.jsonrpc import (
    JsonRpcError,
    JsonRpcMessage,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    RequestId,
)

# A safety net so a broken server fails the test instead of hanging it; no
# test waits for this long when the code under test works.
WAIT = 5.0

Predicate = Callable[[JsonRpcMessage], bool]


class RawClient:
    """The client end of a MemoryTransport pair, driven message by message."""

    def __init__(self, server: McpServer, side: MemoryTransport) -> None:
        self.server = server
        self.side = side
        self.received: list[JsonRpcMessage] = []
        self._arrived = asyncio.Event()
        self._ids = itertools.count(1)
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self.side.messages:
            self.received.append(message)
            self._arrived.set()

    def next_id(self) -> int:
        return next(self._ids)

    async def send(self, message: JsonRpcMessage) -> None:
        await self.side.send(message)

    async def send_request(
        self, method: str, params: dict[str, Any] | None = None, *, id: RequestId | None = None
    ) -> RequestId:
        request_id = self.next_id() if id is None else id
        await self.side.send(JsonRpcRequest(request_id, method, params))
        return request_id

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self.side.send(JsonRpcNotification(method, params))

    async def wait_for(self, predicate: Predicate) -> JsonRpcMessage:
        """Take (remove and return) the first received message that matches."""
        async with asyncio.timeout(WAIT):
            while True:
                for index, message in enumerate(self.received):
                    if predicate(message):
                        return self.received.pop(index)
                self._arrived.clear()
                await self._arrived.wait()

    async def response(self, request_id: RequestId) -> JsonRpcResponse | JsonRpcError:
        message = await self.wait_for(lambda m: isinstance(m, JsonRpcResponse | JsonRpcError) and m.id == request_id)
        assert isinstance(message, JsonRpcResponse | JsonRpcError)
        return message

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, id: RequestId | None = None
    ) -> JsonRpcResponse | JsonRpcError:
        return await self.response(await self.send_request(method, params, id=id))

    async def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The result of a request that must succeed."""
        reply = await self.call(method, params)
        assert isinstance(reply, JsonRpcResponse), reply
        return reply.result

    async def error(self, method: str, params: dict[str, Any] | None = None) -> JsonRpcError:
        """The error of a request that must fail."""
        reply = await self.call(method, params)
        assert isinstance(reply, JsonRpcError), reply
        return reply

    async def server_request(self, method: str | None = None) -> JsonRpcRequest:
        """Take the next server-to-client request (of ``method``, if given)."""
        message = await self.wait_for(
            lambda m: isinstance(m, JsonRpcRequest) and (method is None or m.method == method)
        )
        assert isinstance(message, JsonRpcRequest)
        return message

    async def notification(self, method: str) -> JsonRpcNotification:
        message = await self.wait_for(lambda m: isinstance(m, JsonRpcNotification) and m.method == method)
        assert isinstance(message, JsonRpcNotification)
        return message

    async def sync(self) -> None:
        """A ping round trip: everything the server sent before answering it has arrived.

        Also lets background sends (list_changed) run first, so a test can then
        assert that a message was *not* sent.
        """
        for _ in range(3):
            await asyncio.sleep(0)
        reply = await self.call("ping")
        assert isinstance(reply, JsonRpcResponse)

    async def sync_modern(self) -> None:
        """``sync`` for a 2026-07-28 connection (no ping there): a server/discover round trip."""
        for _ in range(3):
            await asyncio.sleep(0)
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        await self.result("server/discover", {"_meta": meta})

    def notifications(self, method: str) -> list[JsonRpcNotification]:
        """Received, not yet taken notifications of ``method``."""
        return [m for m in self.received if isinstance(m, JsonRpcNotification) and m.method == method]

    async def initialize(
        self,
        *,
        capabilities: dict[str, Any] | None = None,
        protocol_version: str = PROTOCOL_VERSION,
        client_info: dict[str, Any] | None = None,
        initialized: bool = True,
    ) -> dict[str, Any]:
        """The handshake; with ``initialized`` also sends notifications/initialized."""
        result = await self.result(
            "initialize",
            {
                "protocolVersion": protocol_version,
                "capabilities": capabilities or {},
                "clientInfo": client_info or {"name": "raw-client", "version": "1.0.0"},
            },
        )
        if initialized:
            await self.notify("notifications/initialized")
            await self.sync()
        return result

    async def close(self) -> None:
        await self.side.close()
        self._reader.cancel()
        try:
            await self._reader
        except asyncio.CancelledError:
            pass


Connect = Callable[..., Awaitable[RawClient]]


class RecordingTransport(MemoryTransport):
    """A MemoryTransport that records what it sends and the ``related_request_id`` of each message."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[JsonRpcMessage, RequestId | None]] = []

    async def send(self, message: JsonRpcMessage, related_request_id: RequestId | None = None) -> None:
        self.sent.append((message, related_request_id))
        await super().send(message, related_request_id)

    def related(self, predicate: Predicate) -> list[RequestId | None]:
        """The related ids of the sent messages that match."""
        return [related for message, related in self.sent if predicate(message)]


@pytest.fixture
def server() -> McpServer:
    return McpServer("test-server", "1.2.3")


@pytest.fixture
async def connect() -> AsyncIterator[Connect]:
    """``await connect(server, initialize=True, capabilities=None, transport=MemoryTransport)`` -> a RawClient."""
    clients: list[RawClient] = []

    async def make(
        server: McpServer,
        *,
        initialize: bool = True,
        capabilities: dict[str, Any] | None = None,
        transport: type[MemoryTransport] = MemoryTransport,
    ) -> RawClient:
        server_side, client_side = transport.pair()
        await server.connect(server_side)
        client = RawClient(server, client_side)
        clients.append(client)
        if initialize:
            await client.initialize(capabilities=capabilities)
        return client

    yield make
    for client in clients:
        await client.close()


@pytest.fixture
async def client(server: McpServer, connect: Connect) -> RawClient:
    """An initialized client of the ``server`` fixture (register things first, or after: list_changed)."""
    return await connect(server)


def text_of(result: dict[str, Any]) -> str:
    """The text of a tool result's first content block."""
    block = result["content"][0]
    assert block["type"] == "text", block
    text = block["text"]
    assert isinstance(text, str)
    return text
