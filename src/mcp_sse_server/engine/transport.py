"""The seam between transports and the engine: ``Transport`` below, ``Dispatcher`` above.

Both sides speak JSON-RPC messages only (method strings and dicts); neither
knows MCP. A transport moves messages; the engine it is attached to (the
``Dispatcher``, this package's ``Connection``) decides what they mean.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Protocol

from .jsonrpc import JsonRpcError, JsonRpcMessage, JsonRpcRequest, JsonRpcResponse, RequestId

__all__ = ["CallbackDispatcher", "Dispatcher", "Reply", "Transport"]

Reply = JsonRpcResponse | JsonRpcError
"""What a request ends with."""


class Dispatcher(Protocol):
    """What a transport drives: the JSON-RPC engine attached to it.

    - ``on_message`` takes any inbound message, synchronously; a request is
      then served in a task of the engine's own, and its reply comes back
      through ``Transport.send``.
    - ``dispatch`` serves one inbound request in the caller's task and
      returns its reply (None when it was cancelled). This is the *inline
      path*: a transport that holds a task per request anyway (an HTTP
      request's ASGI task, an in-process caller) saves a task and a hand-over
      per request by awaiting it. ``notifications/cancelled`` still cancels it.
    - ``on_close`` runs once when the transport ends.
    """

    def on_message(self, message: JsonRpcMessage) -> None: ...

    async def dispatch(self, request: JsonRpcRequest) -> Reply | None: ...

    def on_close(self) -> None: ...


class Transport(ABC):
    """A connection to one peer that carries JSON-RPC messages both ways.

    The engine calls ``attach`` once when it connects, then ``send`` for
    every outbound message. The transport hands every inbound message to the
    attached ``Dispatcher`` (``on_message``, or ``dispatch`` for a request it
    serves inline) and calls its ``on_close`` once when the connection ends.

    ``related_request_id`` names the inbound request an outbound message
    belongs to: a response's own id, or the id of the request whose handler
    emitted a notification or a server-to-client request. None means the
    message is unrelated to any request. Transports with several streams
    (Streamable HTTP) route by it; others ignore it.

    A transport that has to drop an outbound request (a full buffer, say)
    fails its caller by delivering ``JsonRpcError(id, CONNECTION_CLOSED, ...)``
    through ``on_message``, so nothing waits forever.
    """

    dispatcher: Dispatcher | None = None

    def attach(self, dispatcher: Dispatcher) -> None:
        """Connect the engine; a transport carries one engine for its life."""
        if self.dispatcher is not None:
            raise RuntimeError("this transport is already connected")
        self.dispatcher = dispatcher

    @abstractmethod
    async def send(self, message: JsonRpcMessage, related_request_id: RequestId | None = None) -> None:
        """Deliver one message to the peer."""

    @abstractmethod
    async def close(self) -> None:
        """End the connection; the dispatcher's ``on_close`` runs once."""

    async def close_stream(self, related_request_id: RequestId | None) -> bool:
        """End the stream carrying a request's messages while the request goes on, for
        transports whose streams the client can resume; False where they cannot."""
        return False


class CallbackDispatcher:
    """A ``Dispatcher`` for an engine that takes every message through a callback
    and answers through ``send``: the adapter between such an engine and a transport.

    The engine sends through this object's ``send``: a reply to a request
    being dispatched completes that ``dispatch`` call; anything else goes on
    to the transport. A request still unanswered when the transport closes
    ends with no reply.

    >>> adapter = CallbackDispatcher(transport, engine.receive, engine.closed)  # doctest: +SKIP
    >>> engine.send = adapter.send  # doctest: +SKIP
    """

    def __init__(
        self, transport: Transport, on_message: Callable[[JsonRpcMessage], None], on_close: Callable[[], None]
    ) -> None:
        self.transport = transport
        self._on_message = on_message
        self._on_close = on_close
        self._waiting: dict[RequestId, asyncio.Future[Reply | None]] = {}
        transport.attach(self)

    def on_message(self, message: JsonRpcMessage) -> None:
        self._on_message(message)

    async def dispatch(self, request: JsonRpcRequest) -> Reply | None:
        future: asyncio.Future[Reply | None] = asyncio.get_running_loop().create_future()
        self._waiting[request.id] = future
        try:
            self._on_message(request)
            return await future
        finally:
            if self._waiting.get(request.id) is future:
                del self._waiting[request.id]

    def on_close(self) -> None:
        waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_result(None)
        self._on_close()

    async def send(self, message: JsonRpcMessage, related_request_id: RequestId | None = None) -> None:
        """What the engine sends: replies to dispatched requests complete them, the rest goes out."""
        if isinstance(message, JsonRpcResponse | JsonRpcError) and message.id is not None:
            future = self._waiting.get(message.id)
            if future is not None and not future.done():
                future.set_result(message)
                return
        await self.transport.send(message, related_request_id)
