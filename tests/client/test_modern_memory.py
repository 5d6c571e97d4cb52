"""InMemoryClient and the revision choice, and listen() on a handshake session: this
package's servers do not serve 2026-07-28 yet (versions.MODERN is empty), so auto mode goes
straight to the handshake without asking, and listen() falls back to resources/subscribe
plus the session's notifications."""

from __future__ import annotations

import asyncio

import pytest

from mcp_sse_server import versions
from mcp_sse_server.client import InMemoryClient
from mcp_sse_server.jsonrpc import McpError
from mcp_sse_server.servers import MemoryServerFactory
from mcp_sse_server.types import Resource

from .conftest import WAIT


@pytest.mark.skipif(bool(versions.MODERN), reason="the server side serves 2026-07-28 now: auto mode probes")
async def test_auto_mode_uses_the_handshake_while_the_server_cannot_speak_2026_07_28() -> None:
    async with InMemoryClient(MemoryServerFactory.create_memory_server("math")) as client:
        assert (client.era, client.protocol_version) == ("legacy", versions.CLIENT_OFFERS)


@pytest.mark.skipif(bool(versions.MODERN), reason="the server side serves 2026-07-28 now")
async def test_forcing_2026_07_28_on_a_server_that_does_not_serve_it_fails() -> None:
    with pytest.raises(McpError):
        await InMemoryClient(MemoryServerFactory.create_memory_server("math"), mode="2026-07-28").initialize()


async def test_listen_on_a_handshake_session_subscribes_and_filters() -> None:
    server = MemoryServerFactory.create_memory_server("math")
    server.add_resource(Resource.text("memo://a", "a", "A"))
    server.add_resource(Resource.text("memo://b", "b", "B"))
    async with InMemoryClient(server, mode="legacy") as client:
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
        assert client.session is not None and not client.session.is_subscribed("memo://a")
