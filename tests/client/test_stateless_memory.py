"""InMemoryClient and the revision choice: this package's servers serve 2026-07-28, so auto
mode speaks it (and "session" keeps the handshake); listen() on a session falls back to
resources/subscribe plus the session's notifications."""

from __future__ import annotations

import asyncio

import pytest

from fixtures.peers import WAIT
from mcp_sse_server.client import InMemoryClient
from mcp_sse_server.engine import versions
from mcp_sse_server.engine.jsonrpc import McpError
from mcp_sse_server.engine.types import Resource, Root
from mcp_sse_server.servers import MemoryServerFactory


async def test_auto_mode_speaks_2026_07_28_with_our_server() -> None:
    server = MemoryServerFactory.create_memory_server("math")
    async with InMemoryClient(server) as client:
        assert (client.era, client.protocol_version) == ("stateless", versions.STATELESS[-1].name)
        assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
        assert not server.sessions[0].initialized  # no handshake happened
    async with InMemoryClient(server, mode="session") as client:
        assert (client.era, client.protocol_version) == ("session", versions.CLIENT_OFFERS)


async def test_the_mode_names_and_the_stateless_capabilities() -> None:
    server = MemoryServerFactory.create_memory_server("math")
    async with InMemoryClient(server, mode="session") as client:
        assert (client.mode, client.era, client.stateless) == ("session", "session", False)
    async with InMemoryClient(server, roots=[Root("file:///tmp")]) as client:
        assert (client.era, client.stateless) == ("stateless", True)
        assert client.stateless_capabilities == {"roots": {}}
    for gone in ("modern", "legacy"):  # the names before "stateless" and "session" are gone
        with pytest.raises(ValueError, match="mode must be one of auto, session, 2026-07-28"):
            InMemoryClient(server, mode=gone)
    assert not hasattr(client, "modern") and not hasattr(client, "modern_capabilities")


async def test_forcing_2026_07_28_asks_no_handshake() -> None:
    server = MemoryServerFactory.create_memory_server("math")
    async with InMemoryClient(server, mode="2026-07-28") as client:
        assert [tool.name for tool in await client.list_tools()][:2] == ["add", "subtract"]
        with pytest.raises(McpError) as unknown:
            await client.call_tool("nope")
        assert unknown.value.code == -32602


async def test_listen_on_a_session_subscribes_and_filters() -> None:
    server = MemoryServerFactory.create_memory_server("math")
    server.add_resource(Resource.text("memo://a", "a", "A"))
    server.add_resource(Resource.text("memo://b", "b", "B"))
    async with InMemoryClient(server, mode="session") as client:
        async with client.listen(tools_list_changed=True, resource_subscriptions=["memo://a"]) as subscription:
            assert await subscription.ready() == {"toolsListChanged": True, "resourceSubscriptions": ["memo://a"]}
            await server.notify_resource_updated("memo://b")  # not subscribed: never sent
            await server.notify_resource_updated("memo://a")
            await server.notify_resource_list_changed()  # not asked for: not delivered
            server.remove_tool("add")
            first = await asyncio.wait_for(subscription.__anext__(), WAIT)
            second = await asyncio.wait_for(subscription.__anext__(), WAIT)
        assert (first.method, first.params) == ("notifications/resources/updated", {"uri": "memo://a"})
        assert second.method == "notifications/tools/list_changed"
        # The block's end unsubscribed: a later update is not sent to this session.
        session = client.transport.session
        assert session is not None and not session.is_subscribed("memo://a")
