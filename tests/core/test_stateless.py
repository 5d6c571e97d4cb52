"""The stateless revision 2026-07-28 in the engine (a connection whose first request is modern,
as over stdio): envelope rules, stamping, caching hints, input_required rounds with a sealed
requestState, capabilities per request, logs only when asked, server/discover."""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.sessions import Connect, RawClient
from mcp_sse_server import CallToolResult, McpServer, Resource, Tool
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.engine.request_state import KEYS_VARIABLE, RequestStateSealer, deployment_sealer, ring_from
from mcp_sse_server.engine.stateless_meta import CachePolicy

MODERN = "2026-07-28"
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def envelope(capabilities: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        **extra,
    }
    return {"_meta": meta}


def build(**options: Any) -> McpServer:
    server = McpServer("stateless", "2.0.0", instructions="Be brief.", **options)

    async def greet(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        await context.log("info", "greeting")
        first = await context.session.elicit("Your name?", NAME_SCHEMA)
        second = await context.session.elicit("Your surname?", NAME_SCHEMA)
        return CallToolResult.text(f"hello {first.content['name']} {second.content['name']}")  # type: ignore[index]

    server.add_tool(Tool("greet", {"type": "object", "properties": {"x": {"type": "integer"}}}, greet))
    server.add_resource(Resource.text("test://a", "a", "A"))
    return server


async def modern_client(connect: Connect, server: McpServer) -> RawClient:
    return await connect(server, initialize=False)


async def test_discover_and_stamped_cacheable_lists(connect: Connect) -> None:
    server = build(cache=CachePolicy(ttl_ms=60_000, scope="public"))
    client = await modern_client(connect, server)
    found = await client.result("server/discover", envelope())
    assert found["supportedVersions"] == [MODERN] and found["instructions"] == "Be brief."
    assert found["resultType"] == "complete" and found["ttlMs"] == 60_000 and found["cacheScope"] == "public"
    assert found["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "stateless", "version": "2.0.0"}
    tools = await client.result("tools/list", envelope())
    assert [tool["name"] for tool in tools["tools"]] == ["greet"] and tools["cacheScope"] == "public"
    assert len(server.sessions) == 1 and not server.sessions[0].initialized  # nothing negotiated, nothing kept


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({}, -32602),
        ({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}, -32602),
        (envelope(**{"io.modelcontextprotocol/logLevel": "loud"}), -32602),
        ({"_meta": {**envelope()["_meta"], "io.modelcontextprotocol/protocolVersion": "2099-01-01"}}, -32022),
    ],
)
async def test_a_bad_envelope_is_refused(connect: Connect, params: dict[str, Any], code: int) -> None:
    client = await modern_client(connect, build())
    await client.result("server/discover", envelope())  # the connection is modern
    error = await client.error("tools/list", params)
    assert error.code == code
    if code == -32022:
        assert error.data == {"supported": [MODERN], "requested": "2099-01-01"}


async def test_removed_methods_are_not_found_and_initialize_is_the_wrong_era(connect: Connect) -> None:
    client = await modern_client(connect, build())
    for method in ("ping", "logging/setLevel", "resources/subscribe"):
        assert (await client.error(method, envelope())).code == -32601
    refused = await client.error("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert refused.code == -32022 and refused.data["supported"] == [MODERN]  # type: ignore[index]
    assert (await client.error("resources/read", {**envelope(), "uri": "test://none"})).code == -32602


async def test_questions_become_input_required_rounds_with_a_sealed_state(connect: Connect) -> None:
    client = await modern_client(connect, build())
    caps = {"elicitation": {"form": {}}}
    call = {**envelope(caps), "name": "greet", "arguments": {"x": 1}}
    first = await client.result("tools/call", call)
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["q1"]
    assert first["inputRequests"]["q1"]["method"] == "elicitation/create"
    answer = {"action": "accept", "content": {"name": "Ada"}}
    second = await client.result(
        "tools/call", {**call, "inputResponses": {"q1": answer}, "requestState": first["requestState"]}
    )
    assert list(second["inputRequests"]) == ["q2"]  # the first answer travels in the state
    done = await client.result(
        "tools/call",
        {
            **call,
            "inputResponses": {"q2": {"action": "accept", "content": {"name": "Lovelace"}}, "extra": {}},
            "requestState": second["requestState"],
        },
    )
    assert done["resultType"] == "complete" and done["content"][0]["text"] == "hello Ada Lovelace"
    # The state is bound to its request: other arguments, a changed byte, another key: refused.
    for state, arguments in (
        (second["requestState"], {"x": 2}),
        (second["requestState"][:-2] + ("AA" if second["requestState"][-2:] != "AA" else "BB"), {"x": 1}),
    ):
        refused = await client.error(
            "tools/call", {**call, "arguments": arguments, "inputResponses": {}, "requestState": state}
        )
        assert refused.code == -32602 and refused.data == {"reason": "invalid_request_state"}


async def test_a_state_from_another_key_ring_or_past_its_ttl_is_refused(connect: Connect) -> None:
    clock = [1000.0]
    server = build(request_state=RequestStateSealer([b"k" * 32], ttl=60, clock=lambda: clock[0]))
    client = await modern_client(connect, server)
    call = {**envelope({"elicitation": {}}), "name": "greet", "arguments": {}}
    first = await client.result("tools/call", call)
    clock[0] += 61
    late = await client.error("tools/call", {**call, "requestState": first["requestState"]})
    assert late.code == -32602
    other = RequestStateSealer([b"z" * 32]).seal(
        {"answers": {}, "asked": []}, method="tools/call", target="greet", arguments={}
    )
    assert (await client.error("tools/call", {**call, "requestState": other})).code == -32602


async def test_servers_of_one_process_open_each_others_states(connect: Connect) -> None:
    """The key ring is the deployment's: a round sealed by one server (a session factory's, say)
    is opened by another server of the process."""
    first_server, second_server = build(), build()
    assert first_server.request_state is second_server.request_state is deployment_sealer()
    call = {**envelope({"elicitation": {"form": {}}}), "name": "greet", "arguments": {}}
    first = await (await modern_client(connect, first_server)).result("tools/call", call)
    answer = {"action": "accept", "content": {"name": "Ada"}}
    second = await (await modern_client(connect, second_server)).result(
        "tools/call", {**call, "inputResponses": {"q1": answer}, "requestState": first["requestState"]}
    )
    assert list(second["inputRequests"]) == ["q2"]


def test_the_deployments_ring_comes_from_the_environment() -> None:
    assert ring_from({}) is None
    assert ring_from({KEYS_VARIABLE: " new-secret-of-16-bytes , old-secret-of-16-bytes "}) == [
        "new-secret-of-16-bytes",
        "old-secret-of-16-bytes",
    ]
    for refused in ("", " , ", "short"):
        with pytest.raises(ValueError):
            ring_from({KEYS_VARIABLE: refused})


async def test_a_capability_the_request_did_not_declare_is_32021(connect: Connect) -> None:
    client = await modern_client(connect, build())
    error = await client.error("tools/call", {**envelope(), "name": "greet", "arguments": {}})
    assert error.code == -32021 and error.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}


async def test_logs_only_when_the_request_set_a_level(connect: Connect) -> None:
    client = await modern_client(connect, build())
    caps = {"elicitation": {}}
    await client.result("tools/call", {**envelope(caps), "name": "greet", "arguments": {}})
    await client.sync_modern()
    assert not client.notifications("notifications/message")
    await client.result(
        "tools/call",
        {**envelope(caps, **{"io.modelcontextprotocol/logLevel": "info"}), "name": "greet", "arguments": {}},
    )
    logged = await client.notification("notifications/message")
    assert logged.params is not None and logged.params["data"] == "greeting"


async def test_a_legacy_connection_stays_legacy(connect: Connect) -> None:
    server = build()
    client = await connect(server)  # initialize first
    listed = await client.result("tools/list", envelope())
    assert "resultType" not in listed  # served as the session's revision says


async def test_a_tool_added_from_a_worker_thread_is_announced_on_the_loop(connect: Connect) -> None:
    server = build()

    def grow(arguments: dict[str, Any], context: RequestContext) -> str:  # sync: runs in a worker thread
        server.add_tool(Tool("grown", {"type": "object"}, grow))
        return "grown"

    server.add_tool(Tool("grow", {"type": "object"}, grow))
    client = await connect(server)
    await client.result("tools/call", {"name": "grow", "arguments": {}})
    await client.notification("notifications/tools/list_changed")


async def test_questions_may_name_their_keys_and_take_answers_from_the_retry(connect: Connect) -> None:
    server = McpServer("keys", "1")

    async def ask(arguments: dict[str, Any], context: RequestContext) -> str:
        answer = await context.session.elicit("Name?", NAME_SCHEMA, key="user_name")
        return str((answer.content or {}).get("name"))

    server.add_tool(Tool("ask", {"type": "object"}, ask))
    client = await modern_client(connect, server)
    call = {**envelope({"elicitation": {}}), "name": "ask", "arguments": {}}
    first = await client.result("tools/call", call)
    assert list(first["inputRequests"]) == ["user_name"]
    answered = {"user_name": {"action": "accept", "content": {"name": "Alice"}}, "unknown": {}}
    done = await client.result("tools/call", {**call, "inputResponses": answered})  # no state needed for it
    assert done["content"][0]["text"] == "Alice"
    bad = await client.error("tools/call", {**call, "inputResponses": {"user_name": 12345}})
    assert bad.code == -32602
