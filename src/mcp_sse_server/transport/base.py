"""The Transport interface: the only thing the protocol core needs from I/O."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

from ..jsonrpc import JsonRpcMessage, RequestId

__all__ = ["MessageSink", "Transport"]

MessageSink = Callable[[JsonRpcMessage], None]


class Transport(ABC):
    """A connection to one peer that carries JSON-RPC messages both ways.

    The protocol engine calls ``attach`` once when it connects, then ``send``
    for every outbound message. The transport calls ``on_message`` for every
    inbound message (synchronously: the engine schedules any work itself) and
    ``on_close`` once when the connection ends.

    ``related_request_id`` names the inbound request an outbound message
    belongs to: a response's own id, or the id of the request whose handler
    emitted a notification or a server-to-client request. None means the
    message is unrelated to any request. Transports with several streams
    (Streamable HTTP) route by it; others ignore it.

    A transport that has to drop an outbound request (a full buffer, say)
    fails its caller by delivering ``JsonRpcError(id, CONNECTION_CLOSED, ...)``
    through ``on_message``, so nothing waits forever.
    """

    on_message: MessageSink | None = None
    on_close: Callable[[], None] | None = None

    def attach(self, on_message: MessageSink, on_close: Callable[[], None]) -> None:
        if self.on_message is not None:
            raise RuntimeError("this transport is already connected")
        self.on_message = on_message
        self.on_close = on_close

    @abstractmethod
    async def send(self, message: JsonRpcMessage, related_request_id: RequestId | None = None) -> None:
        """Deliver one message to the peer."""

    @abstractmethod
    async def close(self) -> None:
        """End the connection; ``on_close`` runs once."""
