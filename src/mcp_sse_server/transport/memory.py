"""An in-process transport pair: no sockets, no serialization."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable

from ..engine.jsonrpc import CONNECTION_CLOSED, JsonRpcError, JsonRpcMessage, JsonRpcRequest, RequestId
from ..engine.transport import Reply, Transport

__all__ = ["MemoryTransport"]


class MemoryTransport(Transport):
    """One end of an in-process connection; make both ends with ``pair()``.

    Messages pass as objects, so a round trip costs a few microseconds. An end
    is consumed either by a protocol engine (``McpServer.connect``,
    ``McpClient``) or by iterating ``messages`` directly:

    >>> server_side, client_side = MemoryTransport.pair()
    >>> # await server.connect(server_side)
    >>> # await client_side.send(JsonRpcRequest(1, "tools/list"))
    >>> # async for message in client_side.messages: ...

    ``close_stream`` (a server's ``context.close_sse_stream()``) awaits the other end's
    ``on_stream_closed`` with the request's id and returns its answer: an in-process connection
    has no stream to close, but its client may have one of its own (a proxy's front); False
    without one.
    """

    def __init__(self) -> None:
        self._peer: MemoryTransport | None = None
        self.on_stream_closed: Callable[[RequestId], Awaitable[bool]] | None = None
        self._closed = False
        self._buffer: deque[JsonRpcMessage] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._subscribed = False

    @classmethod
    def pair(cls) -> tuple[MemoryTransport, MemoryTransport]:
        """Two connected ends: ``(server_side, client_side)``."""
        a, b = cls(), cls()
        a._peer, b._peer = b, a
        return a, b

    @property
    def closed(self) -> bool:
        return self._closed

    async def send(self, message: JsonRpcMessage, related_request_id: RequestId | None = None) -> None:
        if self._closed or self._peer is None:
            raise ConnectionError("the in-memory connection is closed")
        self._peer._deliver(message)

    async def call(self, request: JsonRpcRequest) -> Reply | None:
        """Serve ``request`` on the peer's engine in the caller's task and return its reply.

        The direct path (``Dispatcher.dispatch``): no task and no hand-over, so
        an in-process round trip costs a few microseconds; cancelling the caller
        cancels the request. None when the request was cancelled.
        """
        peer = self._peer
        if self._closed or peer is None or peer.dispatcher is None:
            return JsonRpcError(request.id, CONNECTION_CLOSED, "Connection closed")
        return await peer.dispatcher.dispatch(request)

    async def close_stream(self, related_request_id: RequestId | None) -> bool:
        peer = self._peer
        hook = None if peer is None or self._closed else peer.on_stream_closed
        if hook is None or related_request_id is None:
            return False
        return await hook(related_request_id)

    def _deliver(self, message: JsonRpcMessage) -> None:
        if self.dispatcher is not None:
            self.dispatcher.on_message(message)
            return
        self._buffer.append(message)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    @property
    def messages(self) -> AsyncIterator[JsonRpcMessage]:
        """Inbound messages, for exactly one listener; those sent before it attaches are kept."""
        if self._subscribed:
            raise RuntimeError("messages is single-subscription: it already has a listener")
        if self.dispatcher is not None:
            raise RuntimeError("this end is connected to a protocol engine")
        self._subscribed = True
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[JsonRpcMessage]:
        while True:
            while self._buffer:
                yield self._buffer.popleft()
            if self._closed:
                return
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
            self._waiter = None

    async def close(self) -> None:
        for end in (self, self._peer):
            if end is None or end._closed:
                continue
            end._closed = True
            if end._waiter is not None and not end._waiter.done():
                end._waiter.set_result(None)
            if end.dispatcher is not None:
                end.dispatcher.on_close()
