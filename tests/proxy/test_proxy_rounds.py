"""A stateless (2026-07-28) front in front of a stateless backend connection: the backend's
``input_required`` rounds pass through as it gave them (proxy/server.py rule 5). The backend is
our conformance fixture in process; the front client is ours, making one raw round at a time
(``request_round``) to see what the proxy sends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from fixtures.conformance_server import build_server
from mcp_sse_server import CallToolResult, McpError, McpServer, Tool
from mcp_sse_server.client import InMemoryClient
from mcp_sse_server.proxy import ProxyServer, proxy
from mcp_sse_server.transport.http import McpHttpServer

BOUND = 30.0  # catches hangs only
ROOT = {"uri": "file:///front/root", "name": "front"}
NAME = {"action": "accept", "content": {"name": "Ada"}}
CAPITAL = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "front-model"}
EVERY = {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}


@pytest.fixture(params=["session", "pooled"])
async def front(request: pytest.FixtureRequest) -> AsyncIterator[ProxyServer]:
    server = proxy(build_server(), connections=request.param)
    try:
        yield server
    finally:
        await server.close()


async def first_round(
    client: InMemoryClient, tool: str, capabilities: dict[str, Any] = EVERY, **extra: Any
) -> dict[str, Any]:
    params = {"name": tool, "arguments": {}, **extra}
    return await asyncio.wait_for(client.request_round("tools/call", params, capabilities=capabilities), BOUND)


async def answered(
    client: InMemoryClient, tool: str, asked: dict[str, Any], answers: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    params = {"name": tool, "arguments": {}, "inputResponses": answers, "requestState": asked["requestState"]}
    return await asyncio.wait_for(client.request_round("tools/call", {**params, **extra}, capabilities=EVERY), BOUND)


def text(result: dict[str, Any]) -> str:
    assert result["resultType"] == "complete", result
    return str(result["content"][0]["text"])


async def test_a_question_keeps_the_name_the_backend_gave_it(front: ProxyServer) -> None:
    async with InMemoryClient(front, mode="2026-07-28") as client:
        asked = await first_round(client, "test_input_required_result_elicitation")
        assert asked["resultType"] == "input_required"
        assert list(asked["inputRequests"]) == ["user_name"]
        assert asked["inputRequests"]["user_name"]["method"] == "elicitation/create"
        done = await answered(client, "test_input_required_result_elicitation", asked, {"user_name": NAME})
        assert text(done) == "Hello, Ada!"


async def test_several_questions_of_one_round_reach_the_front_in_one_round(front: ProxyServer) -> None:
    async with InMemoryClient(front, mode="2026-07-28") as client:
        asked = await first_round(client, "test_input_required_result_multiple_inputs")
        methods = sorted(request["method"] for request in asked["inputRequests"].values())
        assert methods == ["elicitation/create", "roots/list", "sampling/createMessage"]
        by_method = {"elicitation/create": NAME, "sampling/createMessage": CAPITAL, "roots/list": {"roots": [ROOT]}}
        answers = {key: by_method[request["method"]] for key, request in asked["inputRequests"].items()}
        done = await answered(client, "test_input_required_result_multiple_inputs", asked, answers)
        assert text(done) == "name=Ada, greeting=Paris, roots=1"


async def test_roots_are_asked_through_a_pooled_connection(front: ProxyServer) -> None:
    # (The front client's handlers answer: the client drives the rounds itself here.)
    async with InMemoryClient(front, mode="2026-07-28", roots=[ROOT]) as client:
        result = await asyncio.wait_for(client.call_tool("test_input_required_result_list_roots"), BOUND)
        assert result.content[0].text == "Client roots: file:///front/root"  # type: ignore[union-attr]


async def test_roots_given_to_the_proxy_are_answered_by_it() -> None:
    front = proxy(build_server(), roots=[{"uri": "file:///configured"}])
    try:
        async with InMemoryClient(front, mode="2026-07-28") as client:
            result = await first_round(client, "test_input_required_result_list_roots", {})
            assert text(result) == "Client roots: file:///configured"
    finally:
        await front.close()


async def test_the_backend_sees_the_capabilities_the_front_request_declared(front: ProxyServer) -> None:
    async with InMemoryClient(front, mode="2026-07-28") as client:
        only = await first_round(client, "test_input_required_result_capabilities", {"sampling": {}})
        assert [request["method"] for request in only["inputRequests"].values()] == ["sampling/createMessage"]
        none = await first_round(client, "test_input_required_result_capabilities", {})
        assert text(none) == "The client declared no capability to ask with"
        with pytest.raises(McpError) as missing:  # the backend's own -32021, as it gave it
            await first_round(client, "test_missing_capability", {})
        assert missing.value.code == -32021
        assert missing.value.data == {"requiredCapabilities": {"sampling": {}}}


async def test_extra_params_and_answers_on_a_retry_are_ignored(front: ProxyServer) -> None:
    async with InMemoryClient(front, mode="2026-07-28") as client:
        asked = await first_round(client, "test_input_required_result_elicitation")
        answers = {"user_name": NAME, "nobody_asked": {"action": "decline"}}
        done = await answered(client, "test_input_required_result_elicitation", asked, answers, unexpected=1)
        assert text(done) == "Hello, Ada!"


async def test_a_tampered_front_state_is_refused(front: ProxyServer) -> None:
    async with InMemoryClient(front, mode="2026-07-28") as client:
        asked = await first_round(client, "test_input_required_result_elicitation")
        asked["requestState"] = asked["requestState"][:-4] + "AAAA"
        with pytest.raises(McpError) as refused:
            await answered(client, "test_input_required_result_elicitation", asked, {"user_name": NAME})
        assert refused.value.code == -32602


async def test_request_round_needs_the_stateless_revision() -> None:
    async with InMemoryClient(build_server(), mode="session") as client:
        with pytest.raises(RuntimeError):
            await client.request_round("tools/call", {"name": "test_simple_text", "arguments": {}})


async def test_a_round_on_a_url_backend_sends_the_mcp_param_headers_its_tool_needs() -> None:
    # The pooled connection never listed the tools: the backend's -32020 makes it list them and
    # send the round again, as any request of the client is (client/stateless_calls.py rule 2).
    back = McpServer("regional", "1.0.0")
    schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}

    async def where(arguments: dict[str, Any], context: Any) -> CallToolResult:
        answer = await context.session.elicit("Sure?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return CallToolResult.text(f"{arguments['region']}: {answer.action}")

    back.add_tool(Tool("where", schema, where))
    http = await McpHttpServer.bind(back, port=0)
    front = proxy(http.endpoint)
    try:
        async with InMemoryClient(front, mode="2026-07-28") as client:
            params = {"name": "where", "arguments": {"region": "eu-west"}}
            caps = {"elicitation": {"form": {}}}
            asked = await asyncio.wait_for(client.request_round("tools/call", params, capabilities=caps), BOUND)
            assert [request["method"] for request in asked["inputRequests"].values()] == ["elicitation/create"]
            key = next(iter(asked["inputRequests"]))
            retry = {**params, "inputResponses": {key: {"action": "accept"}}, "requestState": asked["requestState"]}
            done = await asyncio.wait_for(client.request_round("tools/call", retry, capabilities=caps), BOUND)
            assert text(done) == "eu-west: accept"
    finally:
        await front.close()
        await http.close(deadline=1)
