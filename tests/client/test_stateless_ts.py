"""StreamableHttpClient against the TypeScript SDK v2 (@modelcontextprotocol/server 2.4), whose
createMcpHandler({ legacy: "reject" }) serves 2026-07-28 only and refuses handshake clients
(tests/client/ts_stateless_peer.mjs): auto mode must get there by probing, and list, call, read,
prompt, progress, Mcp-Param headers, elicitation, sampling and roots through input_required,
and subscriptions/listen must work."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from fixtures.node import running_ts_stateless_peer
from fixtures.peers import WAIT
from mcp_sse_server.client import StreamableHttpClient
from mcp_sse_server.client.stateless import UnsupportedProtocolVersionError
from mcp_sse_server.engine.types import Root

MODERN = "2026-07-28"


@pytest.fixture(scope="module")
def ts_stateless() -> Iterator[str]:
    """The URL of a running ts_stateless_peer.mjs."""
    yield from running_ts_stateless_peer()


async def elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"colour": "blue"}}


async def sample(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"}


def client_for(url: str, **options: Any) -> StreamableHttpClient:
    return StreamableHttpClient(
        url, elicitation_handler=elicit, sampling_handler=sample, roots=[Root("file:///work")], **options
    )


def text(result: Any) -> str:
    return str(result.content[0].text)


async def test_auto_mode_speaks_2026_07_28_with_the_typescript_v2_server(ts_stateless: str) -> None:
    async with client_for(ts_stateless) as client:
        assert (client.era, client.protocol_version, client.transport.session_id) == ("stateless", MODERN, None)
        assert client.server_info == {"name": "ts-stateless-peer", "version": "2.4.0"}
        assert {"add", "confirm", "headed"} <= {tool.name for tool in await client.list_tools()}
        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert (text(added), added.structured_content) == ("5", {"result": 5})
        progress: list[Any] = []
        assert text(await client.call_tool("slow", {"steps": 3}, on_progress=lambda *p: progress.append(p))) == "done 3"
        assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        # The form's default is filled in, and the requestState came back as it was sent.
        confirmed = text(await client.call_tool("confirm"))
        assert confirmed == 'accept: {"colour":"blue","shade":"dark"} (state round-1)'
        assert text(await client.call_tool("ask_model")) == "model said: Paris"
        assert text(await client.call_tool("roots")) == "file:///work"
        assert text(await client.call_tool("headed", {"region": "eu-west"})) == "eu-west via eu-west"
        assert (await client.get_prompt("greet")).messages[0].content.text == "Hello!"  # type: ignore[union-attr]
        assert (await client.read_resource("memo://note")).contents[0].text == "a note"  # type: ignore[union-attr]


async def test_listen_receives_list_changed_after_its_ack(ts_stateless: str) -> None:
    async with client_for(ts_stateless) as client:
        async with client.listen(tools_list_changed=True) as subscription:
            assert await asyncio.wait_for(subscription.ready(), WAIT) == {"toolsListChanged": True}
            await client.call_tool("bump")
            notification = await asyncio.wait_for(subscription.__anext__(), WAIT)
        assert notification.method == "notifications/tools/list_changed"
        assert notification.params is not None
        assert notification.params["_meta"]["io.modelcontextprotocol/subscriptionId"] == subscription.request_id
        with pytest.raises(StopAsyncIteration):
            await subscription.__anext__()  # the block's end ended it


async def test_a_handshake_client_is_refused_with_the_supported_revisions(ts_stateless: str) -> None:
    with pytest.raises(UnsupportedProtocolVersionError) as caught:
        await StreamableHttpClient(ts_stateless, mode="session").initialize()
    assert MODERN in caught.value.supported
    assert MODERN in str(caught.value)
