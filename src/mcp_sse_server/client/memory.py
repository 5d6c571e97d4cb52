"""InMemoryClient: talk to an McpServer in the same process, in microseconds."""

from __future__ import annotations

import asyncio
from typing import Any

from ..engine import versions
from ..engine.deadline import within_deadline
from ..engine.jsonrpc import CONNECTION_CLOSED, JsonRpcRequest, JsonRpcResponse, McpError
from ..engine.protocol import ProgressCallback
from ..engine.server import McpServer
from ..engine.session import ServerSession
from ..engine.transport import Transport
from ..transport.memory import MemoryTransport
from .base import MODE_AUTO, McpClient

__all__ = ["InMemoryClient"]


class InMemoryClient(McpClient):
    """A client wired to a server in this process: no sockets, no serialization.

    Each client is its own session of ``server``. Requests take the direct
    path of ``MemoryTransport.call`` and run in the caller's own task
    (cancelling it, or a timeout, cancels the handler); what the server sends
    on its own (progress, logs, sampling requests) comes back over the same
    in-memory transport. The handshake is the real one (the stateless revision once the server serves it).

    >>> async def demo() -> None:  # doctest: +SKIP
    ...     async with InMemoryClient(MemoryServerFactory.create_memory_server("math")) as client:
    ...         print((await client.call_tool("add", {"a": 2, "b": 3})).structured_content)
    """

    def __init__(self, server: McpServer, **options: Any) -> None:
        # The stateless revision only when this package's servers serve it (versions.STATELESS);
        # mode="2026-07-28" asks for it anyway, mode="session" never.
        options.setdefault("mode", "auto")
        super().__init__(**options)
        self.server = server
        self.session: ServerSession | None = None
        self._transport: MemoryTransport | None = None

    def _may_probe(self) -> bool:
        if self.mode == MODE_AUTO and not versions.STATELESS:
            return False  # the server in this process cannot speak it: no need to ask
        return super()._may_probe()

    async def _open(self) -> Transport:
        server_side, client_side = MemoryTransport.pair()
        self.session = await self.server.connect(server_side)
        self._transport = client_side
        return client_side

    async def _send_request(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, on_progress: ProgressCallback | None
    ) -> dict[str, Any]:
        client = self._live()
        transport = self._transport
        if transport is None or client.closed:
            raise McpError(CONNECTION_CLOSED, "Connection closed")
        request_id = client.next_request_id()
        if on_progress is not None:
            params = dict(params or {})
            params["_meta"] = {**(params.get("_meta") or {}), "progressToken": request_id}
            client.add_progress_handler(request_id, on_progress)
        request = JsonRpcRequest(request_id, method, params)
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
                client.remove_progress_handler(request_id)
        if type(reply) is JsonRpcResponse:
            return reply.result
        if reply is None:
            raise asyncio.CancelledError(f"{method} was cancelled")
        raise reply.to_exception()  # type: ignore[union-attr]
