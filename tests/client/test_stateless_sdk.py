"""Our clients against the official Python SDK 2.3.0 server, which serves 2026-07-28 and the
handshake revisions on one endpoint: in auto mode they must land on 2026-07-28, over
Streamable HTTP and over stdio, and everything must work there — listing, calls, resources,
prompts, progress, logs (when a level is stamped), and elicitation, sampling and roots
through input_required rounds (the peer's resolver tools)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from fixtures.peers import PYTHON, SDK_PEER, WAIT, Peer
from mcp_sse_server.client import StdioClient, StreamableHttpClient
from mcp_sse_server.client.base import McpClient
from mcp_sse_server.engine.types import Root

MODERN = "2026-07-28"


async def elicit(params: dict[str, Any]) -> dict[str, Any]:
    # The profile form: only the name is answered, the other fields keep their defaults.
    if "name" in params["requestedSchema"].get("properties", {}):
        return {"action": "accept", "content": {"name": "Ada"}}
    return {"action": "accept", "content": {"colour": "blue"}}


async def sample(params: dict[str, Any]) -> dict[str, Any]:
    question = params["messages"][0]["content"]["text"]
    return {"role": "assistant", "content": {"type": "text", "text": f"{question} Paris"}, "model": "m"}


OPTIONS: dict[str, Any] = {
    "elicitation_handler": elicit,
    "sampling_handler": sample,
    "roots": [Root("file:///work", "work")],
}


def text(result: Any) -> str:
    return str(result.content[0].text)


async def exercise(client: McpClient) -> None:
    """What both transports must do at 2026-07-28."""
    async with client:
        assert (client.era, client.protocol_version) == ("stateless", MODERN)
        assert client.server_info is not None and client.server_info["name"] == "sdk-peer"
        assert {"add", "resolve_all"} <= {tool.name for tool in await client.list_tools()}
        assert text(await client.call_tool("add", {"a": 2, "b": 3})) == "5"
        progress: list[Any] = []
        result = await client.call_tool("slow", {"steps": 3}, on_progress=lambda *p: progress.append(p))
        assert text(result) == "done 3"
        assert [step for step, _, _ in progress] == [1, 2, 3]
        assert text(await client.call_tool("resolve_user")) == "accept: blue"
        assert text(await client.call_tool("resolve_profile")) == 'accept: {"name":"Ada","age":30,"verified":true}'
        assert text(await client.call_tool("resolve_model", {"question": "Capital?"})) == "model said: Capital? Paris"
        combined = await client.call_tool("resolve_all", {"question": "Q"})
        assert text(combined) == "blue / Q Paris / file:///work"
        prompt = await client.get_prompt("greet", {"name": "Ada"})
        assert prompt.messages[0].content.text == "Hello, Ada!"  # type: ignore[union-attr]
        note = await client.read_resource("memo://note")
        assert note.contents[0].text == "a note"  # type: ignore[union-attr]
        logs: list[dict[str, Any]] = []
        client.on_log = logs.append
        # A log handler stamps "info" on every request: the server sends logs without set_log_level.
        await client.call_tool("chatty")
        assert [entry["level"] for entry in logs] == ["info", "warning"]
        await client.set_log_level("warning")
        await client.call_tool("chatty")
        assert [entry["level"] for entry in logs] == ["info", "warning", "warning"]
        await client.ping()  # served by server/discover at 2026-07-28


async def test_http_auto_mode_speaks_2026_07_28_to_the_sdk_server(sdk_http: Peer) -> None:
    client = StreamableHttpClient(f"{sdk_http.base}/mcp", **OPTIONS)
    await exercise(client)
    assert client.transport.session_id is None


async def test_http_json_replies_at_2026_07_28(sdk_http_json: Peer) -> None:
    async with StreamableHttpClient(f"{sdk_http_json.base}/mcp", **OPTIONS) as client:
        assert client.protocol_version == MODERN
        assert text(await client.call_tool("resolve_all", {"question": "Q"})) == "blue / Q Paris / file:///work"


async def test_stdio_auto_mode_speaks_2026_07_28_to_the_sdk_server() -> None:
    await exercise(StdioClient(PYTHON, [SDK_PEER, "stdio"], on_stderr=lambda line: None, **OPTIONS))


async def test_the_same_tools_work_by_handshake(sdk_http: Peer) -> None:
    """The resolver tools send real server requests on a 2025-11-25 session."""
    async with StreamableHttpClient(f"{sdk_http.base}/mcp", mode="session", **OPTIONS) as client:
        assert (client.era, client.protocol_version) == ("session", "2025-11-25")
        assert text(await client.call_tool("resolve_all", {"question": "Q"})) == "blue / Q Paris / file:///work"


async def test_a_missing_handler_is_a_missing_capability(sdk_http: Peer) -> None:
    """Capabilities are declared per request from the handlers set: without an elicitation
    handler the server refuses with -32021 instead of asking."""
    async with StreamableHttpClient(f"{sdk_http.base}/mcp") as client:
        with pytest.raises(Exception, match="elicitation") as caught:
            await client.call_tool("resolve_user")
    assert getattr(caught.value, "code", None) == -32021


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_listen_is_acknowledged_and_ends_cleanly(sdk_http: Peer, transport: str) -> None:
    """The SDK acknowledges the filter first; leaving the block ends the listen (HTTP: its
    stream is closed; stdio: notifications/cancelled) and the connection goes on serving."""
    if transport == "http":
        client: McpClient = StreamableHttpClient(f"{sdk_http.base}/mcp")
    else:
        client = StdioClient(PYTHON, [SDK_PEER, "stdio"], on_stderr=lambda line: None)
    async with client:
        async with client.listen(tools_list_changed=True, resource_subscriptions=["memo://note"]) as subscription:
            honoured = await asyncio.wait_for(subscription.ready(), WAIT)
        assert honoured["toolsListChanged"] is True
        assert text(await client.call_tool("add", {"a": 1, "b": 1})) == "2"
