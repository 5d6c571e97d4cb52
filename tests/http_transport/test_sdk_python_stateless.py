"""The official Python SDK client at the stateless revision 2026-07-28 against our server:
pinned to it and in its default mode="auto" (which probes with server/discover and stays
stateless). Questions to the client travel as input_required rounds; no session is made. The
server is served both as one instance and by a factory of servers (``on_session``, what
``serve FILE:factory`` does)."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from typing import Any

import mcp.types as t
import pytest
from mcp import Client

from fixtures.http_app import Gate, build_server
from mcp_sse_server.transport.http import McpHttpServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(params=["instance", "factory"])
async def bound(request: pytest.FixtureRequest, gate: Gate) -> AsyncIterator[McpHttpServer]:
    if request.param == "instance":
        http = await McpHttpServer.bind(build_server(gate), port=0)
    else:
        http = await McpHttpServer.bind(lambda: build_server(gate), port=0)
    try:
        yield http
    finally:
        await http.close(deadline=1)


@pytest.mark.parametrize("mode", ["2026-07-28", "auto"])
async def test_the_sdk_client_speaks_2026_07_28_with_every_feature(bound: McpHttpServer, mode: str) -> None:
    asked: list[str] = []
    progress: list[float] = []

    async def sampling(context: Any, params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        asked.append("sampling")
        return t.CreateMessageResult(role="assistant", content=t.TextContent(type="text", text="forty-two"), model="m")

    async def elicitation(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        asked.append("elicitation")
        return t.ElicitResult(action="accept", content={"name": "Ada"})

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(
            bound.endpoint, mode=mode, sampling_callback=sampling, elicitation_callback=elicitation
        ) as sdk:
            assert sdk.protocol_version == "2026-07-28"
            assert [tool.name for tool in (await sdk.list_tools()).tools][:3] == ["add", "wait", "chatty"]
            assert (await sdk.call_tool("add", {"a": 20, "b": 22})).content[0].text == "42"  # type: ignore[union-attr]
            read = await sdk.read_resource("test://hello")
            assert read.contents[0].text == "Hello, world."  # type: ignore[union-attr]
            prompt = await sdk.get_prompt("greet", {"name": "Grace"})
            assert prompt.messages[0].content.text == "Say hello to Grace."  # type: ignore[union-attr]
            chatty = await sdk.call_tool("chatty", {}, progress_callback=on_progress)
            assert chatty.content[0].text == "chatty done" and progress == [1, 2]  # type: ignore[union-attr]
            sampled = await sdk.call_tool("sample", {"prompt": "meaning of life?"})
            assert sampled.content[0].text == "model said: forty-two"  # type: ignore[union-attr]
            elicited = await sdk.call_tool("elicit", {})
            assert elicited.content[0].text == "accept: Ada"  # type: ignore[union-attr]
    assert asked == ["sampling", "elicitation"]
    assert len(bound.app.live_sessions) == 0  # a stateless request never makes a session
