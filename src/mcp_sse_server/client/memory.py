"""The in-memory transport: talk to an McpServer in the same process, in microseconds.

``InMemoryClientTransport(server)`` opens each connection as a session of its own of ``server``
(``MemoryTransport.pair``). Requests take the direct path of ``MemoryTransport.call`` and run in
the caller's own task (cancelling it, or a timeout, cancels the handler); what the server sends
on its own (progress, logs, sampling requests) comes back over the same in-memory transport.
The handshake is the real one (the stateless revision once the server serves it).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..engine import versions
from ..engine.deadline import within_deadline
from ..engine.jsonrpc import CONNECTION_CLOSED, JsonRpcRequest, JsonRpcResponse, McpError
from ..engine.protocol import Connection, ProgressCallback
from ..engine.server import McpServer
from ..engine.session import ServerSession
from ..engine.transport import Transport
from ..transport.memory import MemoryTransport
from .base import McpClient
from .transport import ClientTransport, StreamClosed, stream_closed

__all__ = ["InMemoryClient", "InMemoryClientTransport"]


class InMemoryClientTransport(ClientTransport):
    """A client's way to ``server``, in this process: no sockets, no serialization.

    ``session`` is the server's session of the connection opened last. A request sent with
    ``stream_closed`` set hears the server's ``context.close_sse_stream()`` through it
    (``client/transport.py`` rule 4).
    """

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self.session: ServerSession | None = None
        self._end: MemoryTransport | None = None  # the client's end of the connection opened last
        self._closing: dict[Any, StreamClosed] = {}  # stream_closed of the requests in flight, by id

    @property
    def can_be_stateless(self) -> bool:
        return bool(versions.STATELESS)  # only once this package's servers serve it

    async def connect(self) -> Transport:
        server_side, client_side = MemoryTransport.pair()
        self.session = await self.server.connect(server_side)
        client_side.on_stream_closed = self._stream_closed
        self._end = client_side
        return client_side

    async def _stream_closed(self, request_id: Any) -> bool:
        closed = self._closing.get(request_id)
        return False if closed is None else await closed()

    async def request(
        self,
        connection: Connection,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        on_progress: ProgressCallback | None,
    ) -> dict[str, Any]:
        """The direct path: the server serves the request in the caller's task."""
        transport = self._end  # connection.transport: the client speaks over the connection opened last
        if transport is None or connection.closed:
            raise McpError(CONNECTION_CLOSED, "Connection closed")
        request_id = connection.next_request_id()
        if on_progress is not None:
            params = dict(params or {})
            params["_meta"] = {**(params.get("_meta") or {}), "progressToken": request_id}
            connection.add_progress_handler(request_id, on_progress)
        request = JsonRpcRequest(request_id, method, params)
        closed = stream_closed.get()
        if closed is not None:
            # (Cleared for the handler, which runs in this task: its own clients' requests are not ours.)
            self._closing[request_id] = closed
            cleared = stream_closed.set(None)
        try:
            if timeout is None:
                reply = await transport.call(request)
            else:
                try:
                    reply = await within_deadline(transport.call(request), timeout)
                except TimeoutError:
                    raise TimeoutError(f"{method} got no response within {timeout:g} s") from None
        finally:
            if on_progress is not None:
                connection.remove_progress_handler(request_id)
            if closed is not None:
                del self._closing[request_id]
                stream_closed.reset(cleared)
        if type(reply) is JsonRpcResponse:
            return reply.result
        if reply is None:
            raise asyncio.CancelledError(f"{method} was cancelled")
        raise reply.to_exception()  # type: ignore[union-attr]


class InMemoryClient(McpClient):
    """``McpClient(InMemoryClientTransport(server), **options)``: each client is its own session
    of ``server``, served in the caller's task (see the module).

    >>> async def demo() -> None:  # doctest: +SKIP
    ...     async with InMemoryClient(MemoryServerFactory.create_memory_server("math")) as client:
    ...         print((await client.call_tool("add", {"a": 2, "b": 3})).structured_content)
    """

    transport: InMemoryClientTransport

    def __init__(self, server: McpServer, **options: Any) -> None:
        super().__init__(InMemoryClientTransport(server), **options)
