"""What the client transports' connections share: their error types, and the bookkeeping that
fails an outstanding request with a precise error (``ClientConnection``)."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from ..engine.jsonrpc import (
    CONNECTION_CLOSED,
    JsonRpcError,
    JsonRpcMessage,
    JsonRpcRequest,
    JsonRpcResponse,
    McpError,
    RequestId,
)
from ..engine.transport import Transport
from .core import SessionExpiredError

__all__ = ["ClientConnection", "McpConnectionError", "SessionExpiredMcpError"]


class McpConnectionError(McpError, ConnectionError):
    """The server cannot be reached, or went away before answering.

    It is both an ``McpError`` (code -32000, CONNECTION_CLOSED) and a
    ``ConnectionError``, so either ``except`` clause catches it. The message is
    one line that names the server.
    """

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(CONNECTION_CLOSED, message, data)


class SessionExpiredMcpError(McpError, SessionExpiredError):
    """The server answered 404 for our session; ``McpClient`` re-initializes and retries once."""

    def __init__(self, message: str) -> None:
        super().__init__(CONNECTION_CLOSED, message)


class _Failure(JsonRpcError):
    """An error reply made on this side; the engine raises exactly ``error`` for it."""

    __slots__ = ("error",)

    def __init__(self, id: RequestId, error: McpError) -> None:
        super().__init__(id, error.code, error.message, error.data)
        self.error = error

    def to_exception(self) -> McpError:
        return self.error


class ClientConnection(Transport):
    """One connection a ``ClientTransport`` opened: an engine ``Transport`` that remembers which
    of its requests are unanswered, so a failure (a dead process, a dropped stream) reaches each
    caller with a message that says what happened instead of a bare "connection closed".

    ``close()`` is idempotent: subclasses say what to release in ``_release``.
    """

    def __init__(self) -> None:
        self._outstanding: dict[RequestId, str] = {}
        self._closed = False  # close() was called
        self._finished = False  # on_close has run

    def _track(self, message: JsonRpcMessage) -> None:
        """Remember ``message`` until it is answered, if it is a request."""
        if isinstance(message, JsonRpcRequest):
            self._outstanding[message.id] = message.method

    def _untrack(self, message: JsonRpcMessage) -> None:
        """Forget a request that will get no answer (it could not be sent, or nobody waits)."""
        if isinstance(message, JsonRpcRequest):
            self._outstanding.pop(message.id, None)

    def _is_outstanding(self, request_id: RequestId) -> bool:
        return request_id in self._outstanding

    def _deliver(self, message: JsonRpcMessage) -> None:
        if isinstance(message, JsonRpcResponse | JsonRpcError) and message.id is not None:
            self._outstanding.pop(message.id, None)
        if self.dispatcher is not None:
            self.dispatcher.on_message(message)

    def _fail(self, request_id: RequestId, error: McpError) -> None:
        """Answer one outstanding request with ``error`` (nothing if it was answered)."""
        if self._outstanding.pop(request_id, None) is not None and self.dispatcher is not None:
            self.dispatcher.on_message(_Failure(request_id, error))

    def _fail_all(self, error: McpError) -> None:
        for request_id in list(self._outstanding):
            self._fail(request_id, error)

    def _finish(self) -> None:
        """Run ``on_close`` exactly once."""
        if self._finished:
            return
        self._finished = True
        self._outstanding.clear()
        if self.dispatcher is not None:
            self.dispatcher.on_close()

    async def close(self) -> None:
        """Release the connection (on the first call only), then run ``on_close`` if it has not run."""
        if not self._closed:
            self._closed = True
            await self._release()
        self._finish()

    @abstractmethod
    async def _release(self) -> None:
        """Stop this transport's tasks and free what it holds; runs once, from the first ``close()``."""
