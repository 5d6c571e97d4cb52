"""Fixtures that drive an McpServer with raw JSON-RPC messages over MemoryTransport: ``connect``
and ``client`` give a ``RawClient`` (tests/fixtures/sessions.py), which plays the client by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from fixtures.sessions import Connect, RawClient
from mcp_sse_server import McpServer, MemoryTransport


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
