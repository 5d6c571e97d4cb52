"""The stateless revision 2026-07-28 over HTTP: routing by the version header, the routing
headers (-32020), statuses, no session, subscriptions/listen, and cancellation by closing."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.asgi import AsgiCall, open_session, until
from fixtures.http_app import Gate, build_server
from fixtures.messages import notification, request
from mcp_sse_server import McpServer, Tool
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.transport.http import McpHttpApp

pytestmark = pytest.mark.deployments("local", "redis")

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def modern(method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
    return request(request_id, method, {"_meta": META, **(params or {})})


def headers(method: str, name: str | None = None, **extra: str) -> dict[str, str]:
    values = {"mcp-protocol-version": MODERN, "mcp-method": method, **extra}
    if name is not None:
        values["mcp-name"] = name
    return values


async def post(app: McpHttpApp, body: Any, head: dict[str, str]) -> AsgiCall:
    return await AsgiCall(app, "POST", body, head).start().finish()


async def test_a_modern_call_is_served_without_a_session(app: McpHttpApp) -> None:
    reply = await post(
        app, modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}), headers("tools/call", "add")
    )
    assert reply.status == 200 and "mcp-session-id" not in reply.headers
    result = reply.messages[-1]["result"]
    assert result["resultType"] == "complete" and result["content"] == [{"type": "text", "text": "5"}]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "http-test"
    assert len(app.live_sessions) == 0


@pytest.mark.parametrize(
    ("body", "head", "status", "code"),
    [
        (modern("tools/list"), {"mcp-protocol-version": MODERN}, 400, -32020),  # no Mcp-Method
        (modern("tools/list"), headers("tools/call"), 400, -32020),  # Mcp-Method unlike the body
        (modern("tools/call", {"name": "add", "arguments": {}}), headers("tools/call", "other"), 400, -32020),
        (modern("tools/call", {"name": "add", "arguments": {}}), headers("tools/call"), 400, -32020),  # no Mcp-Name
        (request(1, "tools/list", {}), headers("tools/list"), 400, -32602),  # no envelope
        (modern("ping"), headers("ping"), 404, -32601),  # a removed method
        (modern("initialize"), headers("initialize"), 404, -32601),
    ],
)
async def test_refusals_carry_their_code_and_status(
    app: McpHttpApp, body: dict[str, Any], head: dict[str, str], status: int, code: int
) -> None:
    reply = await post(app, body, head)
    assert reply.status == status and reply.json["error"]["code"] == code, reply.body
    assert reply.json["id"] == 1


async def test_the_header_and_the_envelope_must_name_the_same_version(app: McpHttpApp) -> None:
    body = request(1, "tools/list", {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}})
    reply = await post(app, body, headers("tools/list"))
    assert reply.status == 400 and reply.json["error"]["code"] == -32020
    both = await post(app, body, {**headers("tools/list"), "mcp-protocol-version": "2099-01-01"})
    assert both.status == 400 and both.json["error"]["code"] == -32022
    assert both.json["error"]["data"] == {"supported": [MODERN], "requested": "2099-01-01"}


async def test_names_travel_base64_encoded_when_not_plain_ascii(app: McpHttpApp) -> None:
    encoded = "=?base64?" + base64.b64encode(b"test://items/\xc3\xa9").decode() + "?="
    reply = await post(app, modern("resources/read", {"uri": "test://items/é"}), headers("resources/read", encoded))
    assert reply.status == 200 and reply.messages[-1]["result"]["contents"][0]["text"] == "item é"


async def test_a_repeated_routing_header_is_refused(app: McpHttpApp) -> None:
    call = AsgiCall(app, "POST", modern("tools/list"), headers("tools/list"))
    call.scope["headers"].append((b"mcp-method", b"tools/list"))
    reply = await call.start().finish()
    assert reply.status == 400 and reply.json["error"]["code"] == -32020


async def test_other_methods_and_notifications(app: McpHttpApp) -> None:
    assert (await AsgiCall(app, "GET", b"", {"mcp-protocol-version": MODERN}).start().finish()).status == 405
    accepted = await post(app, notification("notifications/initialized"), headers("notifications/initialized"))
    assert accepted.status == 202
    # A modern request without its version header: a modern error, so probing clients stay modern.
    bare = await post(app, modern("tools/list"), {})
    assert bare.status == 400 and bare.json["error"]["code"] == -32020


async def test_mirrored_argument_headers_are_checked(make_app: Any) -> None:
    server = build_server(Gate())

    async def route(arguments: dict[str, Any], context: RequestContext) -> str:
        return f"{arguments['region']}/{arguments.get('shard')}"

    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "shard": {"type": "integer", "x-mcp-header": "Shard"},
        },
        "required": ["region"],
    }
    server.add_tool(Tool("route", schema, route))
    app = make_app(server)
    body = modern("tools/call", {"name": "route", "arguments": {"region": "eu", "shard": 7}})
    ok = await post(app, body, headers("tools/call", "route", **{"mcp-param-region": "eu", "mcp-param-shard": "07"}))
    assert ok.status == 200 and ok.messages[-1]["result"]["content"][0]["text"] == "eu/7"
    for bad in ({"mcp-param-region": "us", "mcp-param-shard": "7"}, {"mcp-param-shard": "7"}):
        refused = await post(app, body, headers("tools/call", "route", **bad))
        assert refused.status == 400 and refused.json["error"]["code"] == -32020
    without_shard = modern("tools/call", {"name": "route", "arguments": {"region": "eu"}})
    extra = await post(
        app, without_shard, headers("tools/call", "route", **{"mcp-param-region": "eu", "mcp-param-shard": "1"})
    )
    assert extra.status == 400


async def test_closing_the_stream_cancels_the_request(app: McpHttpApp, gate: Gate) -> None:
    call = AsgiCall(app, "POST", modern("tools/call", {"name": "wait", "arguments": {}}), headers("tools/call", "wait"))
    call.start()
    await asyncio.wait_for(gate.entered.wait(), 5)
    app.keepalive.tick()
    app.keepalive.tick()  # the silent request's stream is opened (a keep-alive), so its client is watched
    await call.wait_until(lambda: b": keepalive" in call.body)
    call.disconnect()
    await asyncio.wait_for(gate.cancelled.wait(), 5)


async def test_listen_acknowledges_then_sends_what_was_asked(app: McpHttpApp) -> None:
    listen = AsgiCall(
        app,
        "POST",
        modern("subscriptions/listen", {"notifications": {"toolsListChanged": True, "promptsListChanged": False}}, 9),
        headers("subscriptions/listen"),
    ).start()
    events = await listen.events(1)
    ack = events[0]["data"]
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"] == {
        "_meta": {"io.modelcontextprotocol/subscriptionId": 9},
        "notifications": {"toolsListChanged": True},
    }
    server = app.server
    assert server is not None
    server.add_tool(Tool("late", {"type": "object"}, lambda arguments, context: "late"))
    events = await listen.events(2)
    changed = events[-1]["data"]
    assert changed["method"] == "notifications/tools/list_changed"
    assert changed["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 9}
    assert all(e["data"]["method"] != "notifications/prompts/list_changed" for e in events if "data" in e)
    listen.disconnect()  # closing the stream ends the subscription
    await until(lambda: server.event_bus.subscribers == 0)  # type: ignore[attr-defined]


async def test_a_message_sent_after_a_stateless_request_ends_is_dropped(app: McpHttpApp) -> None:
    from mcp_sse_server.engine.jsonrpc import JsonRpcNotification, JsonRpcRequest
    from mcp_sse_server.transport.http.stateless_transport import StatelessTransport

    transport = StatelessTransport()
    sent: list[object] = []

    async def send(message: object) -> None:
        sent.append(message)

    # Related to no request in flight (the request is over), unrelated, or a server request:
    # this revision has no standalone stream, so nothing may carry them, and nothing is written.
    await transport.send(JsonRpcNotification("notifications/message", {"data": "late"}), 99)
    await transport.send(JsonRpcNotification("notifications/message", {"data": "unrelated"}))
    await transport.send(JsonRpcRequest(5, "ping", None))
    assert sent == [] and transport.live_streams() == ()


# --- a server per session (on_session): the stateless requests' one server --------------------


def asking_factory(built: list[McpServer]) -> Callable[[], McpServer]:
    """A factory of servers with `ask` (one question, then the answer) and `grow` (adds a tool to
    the server serving it); each server it builds is appended to ``built``."""

    async def ask(arguments: dict[str, Any], context: RequestContext) -> str:
        answer = await context.session.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        return f"Hello, {answer.content['name']}!"  # type: ignore[index]

    def grow(arguments: dict[str, Any], context: RequestContext) -> str:
        context.server.add_tool(Tool("grown", {"type": "object"}, lambda arguments, context: "grown"))
        return "grew"

    def factory() -> McpServer:
        server = McpServer("per-session", "1.0.0")
        server.add_tool(Tool("ask", {"type": "object"}, ask))
        server.add_tool(Tool("grow", {"type": "object"}, grow))
        built.append(server)
        return server

    return factory


async def test_a_factory_builds_one_server_for_every_stateless_request(make_app: Any) -> None:
    built: list[McpServer] = []
    app = make_app(asking_factory(built))
    replies = await asyncio.gather(
        *(post(app, modern("tools/list", request_id=i), headers("tools/list")) for i in range(8))
    )
    assert all(reply.status == 200 for reply in replies)
    assert len(built) == 1  # concurrent first requests waited for one build
    await post(app, modern("tools/list"), headers("tools/list"))
    assert len(built) == 1


async def test_an_input_required_round_crosses_requests_on_a_factory_app(make_app: Any) -> None:
    app = make_app(asking_factory([]))
    caps = {**META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
    call = {"_meta": caps, "name": "ask", "arguments": {}}
    first = (await post(app, request(1, "tools/call", call), headers("tools/call", "ask"))).messages[-1]["result"]
    assert first["resultType"] == "input_required"
    (key,) = first["inputRequests"]
    answer = {"action": "accept", "content": {"name": "Ada"}}
    retry = {**call, "inputResponses": {key: answer}, "requestState": first["requestState"]}
    second = await post(app, request(2, "tools/call", retry), headers("tools/call", "ask"))
    result = second.messages[-1]["result"]
    assert result["resultType"] == "complete" and result["content"] == [{"type": "text", "text": "Hello, Ada!"}]


async def test_a_change_made_through_one_stateless_request_reaches_a_listen_stream_on_a_factory_app(
    make_app: Any,
) -> None:
    app = make_app(asking_factory([]))
    listen = AsgiCall(
        app,
        "POST",
        modern("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, 9),
        headers("subscriptions/listen"),
    ).start()
    assert (await listen.events(1))[0]["data"]["method"] == "notifications/subscriptions/acknowledged"
    grew = await post(app, modern("tools/call", {"name": "grow", "arguments": {}}), headers("tools/call", "grow"))
    assert grew.messages[-1]["result"]["content"] == [{"type": "text", "text": "grew"}]
    changed = (await listen.events(2))[-1]["data"]
    assert changed["method"] == "notifications/tools/list_changed"
    listed = await post(app, modern("tools/list", request_id=3), headers("tools/list"))
    assert "grown" in {tool["name"] for tool in listed.messages[-1]["result"]["tools"]}
    listen.disconnect()


async def test_sessions_still_get_a_server_each_beside_the_stateless_one(make_app: Any) -> None:
    built: list[McpServer] = []
    app = make_app(asking_factory(built))
    await post(app, modern("tools/list"), headers("tools/list"))
    for _ in range(2):
        await open_session(app)
    assert len(built) == 3 and len({id(server) for server in built}) == 3
