"""Server-to-client requests: sampling, roots, elicitation, ping; gating, timeouts, closing."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from fixtures.sessions import Connect, RecordingTransport, text_of
from mcp_sse_server import (
    CallToolResult,
    CreateMessageRequest,
    McpServer,
    ModelHint,
    ModelPreferences,
    RequestContext,
    SamplingMessage,
    ServerSession,
    Tool,
)
from mcp_sse_server.engine.jsonrpc import (
    CONNECTION_CLOSED,
    JsonRpcError,
    JsonRpcRequest,
    JsonRpcResponse,
    McpError,
)

ALL_CAPABILITIES = {"sampling": {}, "roots": {"listChanged": True}, "elicitation": {}}
FLAT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "environment": {"type": "string", "enum": ["staging", "prod"]},
        "replicas": {"type": "integer", "minimum": 1},
        "ratio": {"type": "number"},
        "confirm": {"type": "boolean", "default": False},
    },
    "required": ["environment"],
}


def _sampling_request() -> CreateMessageRequest:
    return CreateMessageRequest(
        [SamplingMessage.user("Summarize this changelog"), SamplingMessage.assistant("Sure.")],
        512,
        system_prompt="Be brief.",
        model_preferences=ModelPreferences([ModelHint("sonnet")], cost_priority=0.2, intelligence_priority=0.9),
        include_context="thisServer",
        temperature=0.5,
        stop_sequences=["END"],
        metadata={"k": "v"},
    )


async def test_create_message(server: McpServer, connect: Connect) -> None:
    client = await connect(server, capabilities=ALL_CAPABILITIES)
    task = asyncio.create_task(server.sessions[0].create_message(_sampling_request()))
    request = await client.server_request("sampling/createMessage")
    assert request.params == {
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "Summarize this changelog"}},
            {"role": "assistant", "content": {"type": "text", "text": "Sure."}},
        ],
        "maxTokens": 512,
        "systemPrompt": "Be brief.",
        "modelPreferences": {"hints": [{"name": "sonnet"}], "costPriority": 0.2, "intelligencePriority": 0.9},
        "includeContext": "thisServer",
        "temperature": 0.5,
        "stopSequences": ["END"],
        "metadata": {"k": "v"},
    }
    await client.send(
        JsonRpcResponse(
            request.id,
            {
                "role": "assistant",
                "content": {"type": "text", "text": "A summary."},
                "model": "m-1",
                "stopReason": "endTurn",
            },
        )
    )
    reply = await task
    assert (reply.role, reply.model, reply.stop_reason, reply.text) == ("assistant", "m-1", "endTurn", "A summary.")


async def test_a_minimal_sampling_request(server: McpServer, connect: Connect) -> None:
    client = await connect(server, capabilities=ALL_CAPABILITIES)
    task = asyncio.create_task(
        server.sessions[0].create_message(CreateMessageRequest([SamplingMessage.user("hi")], 10))
    )
    request = await client.server_request("sampling/createMessage")
    assert request.params == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 10,
    }
    await client.send(
        JsonRpcResponse(
            request.id, {"role": "assistant", "content": {"type": "image", "data": "", "mimeType": "x"}, "model": "m"}
        )
    )
    reply = await task
    assert reply.text is None
    assert reply.stop_reason is None


async def test_list_roots(server: McpServer, connect: Connect) -> None:
    client = await connect(server, capabilities=ALL_CAPABILITIES)
    task = asyncio.create_task(server.sessions[0].list_roots())
    request = await client.server_request("roots/list")
    assert request.params is None
    await client.send(
        JsonRpcResponse(request.id, {"roots": [{"uri": "file:///repo", "name": "repo"}, {"uri": "file:///tmp"}]})
    )
    roots = await task
    assert [(r.uri, r.name) for r in roots] == [("file:///repo", "repo"), ("file:///tmp", None)]


async def test_elicit(server: McpServer, connect: Connect) -> None:
    client = await connect(server, capabilities=ALL_CAPABILITIES)
    task = asyncio.create_task(server.sessions[0].elicit("Which environment?", FLAT_SCHEMA))
    request = await client.server_request("elicitation/create")
    # the raw client negotiates the latest revision, 2025-11-25: form mode is named
    assert request.params == {"mode": "form", "message": "Which environment?", "requestedSchema": FLAT_SCHEMA}
    await client.send(JsonRpcResponse(request.id, {"action": "accept", "content": {"environment": "prod"}}))
    answer = await task
    assert answer.accepted
    assert answer.content == {"environment": "prod"}


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_elicit_declined(server: McpServer, connect: Connect, action: str) -> None:
    client = await connect(server, capabilities=ALL_CAPABILITIES)
    task = asyncio.create_task(server.sessions[0].elicit("Which environment?", FLAT_SCHEMA))
    request = await client.server_request("elicitation/create")
    await client.send(JsonRpcResponse(request.id, {"action": action}))
    answer = await task
    assert not answer.accepted
    assert (answer.action, answer.content) == (action, None)


async def test_ping(server: McpServer, connect: Connect) -> None:
    client = await connect(server)
    task = asyncio.create_task(server.sessions[0].ping())
    request = await client.server_request("ping")
    await client.send(JsonRpcResponse(request.id, {}))
    assert await task is None


async def test_an_error_reply_raises_mcp_error(server: McpServer, connect: Connect) -> None:
    client = await connect(server, capabilities=ALL_CAPABILITIES)
    task = asyncio.create_task(server.sessions[0].list_roots())
    request = await client.server_request("roots/list")
    await client.send(JsonRpcError(request.id, -1, "User rejected"))
    with pytest.raises(McpError) as caught:
        await task
    assert (caught.value.code, caught.value.message) == (-1, "User rejected")


@pytest.mark.parametrize(
    ("call", "method", "result"),
    [
        ("sample", "sampling/createMessage", {"role": "robot", "content": {}, "model": "m"}),
        ("sample", "sampling/createMessage", {"role": "assistant", "model": "m"}),
        ("roots", "roots/list", {"roots": "nope"}),
        ("roots", "roots/list", {"roots": [{"name": "no uri"}]}),
        ("elicit", "elicitation/create", {"action": "maybe"}),
        ("elicit", "elicitation/create", {"action": "accept", "content": ["x"]}),
    ],
)
async def test_a_malformed_reply_raises_value_error(
    server: McpServer, connect: Connect, call: str, method: str, result: dict[str, Any]
) -> None:
    client = await connect(server, capabilities=ALL_CAPABILITIES)
    session = server.sessions[0]
    calls = {
        "sample": lambda: session.create_message(CreateMessageRequest([SamplingMessage.user("x")], 5)),
        "roots": session.list_roots,
        "elicit": lambda: session.elicit("x", FLAT_SCHEMA),
    }
    task = asyncio.create_task(calls[call]())
    request = await client.server_request(method)
    await client.send(JsonRpcResponse(request.id, result))
    with pytest.raises(ValueError):
        await task


# --- gating -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("capability", "call"),
    [
        ("sampling", lambda s: s.create_message(CreateMessageRequest([SamplingMessage.user("x")], 5))),
        ("roots", lambda s: s.list_roots()),
        ("elicitation", lambda s: s.elicit("x", FLAT_SCHEMA)),
    ],
)
async def test_a_missing_client_capability_raises_before_sending(
    server: McpServer, connect: Connect, capability: str, call: Any
) -> None:
    others = {k: v for k, v in ALL_CAPABILITIES.items() if k != capability}
    client = await connect(server, capabilities=others)
    with pytest.raises(RuntimeError, match=capability):
        await call(server.sessions[0])
    await client.sync()
    assert client.received == []


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.create_message(CreateMessageRequest([SamplingMessage.user("x")], 5)),
        lambda s: s.list_roots(),
        lambda s: s.elicit("x", FLAT_SCHEMA),
    ],
)
async def test_no_requests_before_notifications_initialized(server: McpServer, connect: Connect, call: Any) -> None:
    client = await connect(server, initialize=False)
    with pytest.raises(RuntimeError, match="initialized"):
        await call(server.sessions[0])
    await client.initialize(capabilities=ALL_CAPABILITIES, initialized=False)
    with pytest.raises(RuntimeError, match="initialized"):
        await call(server.sessions[0])
    await client.sync()
    assert client.received == []


async def test_ping_is_allowed_before_initialized(server: McpServer, connect: Connect) -> None:
    # The specification lets a server ping (and log) before notifications/initialized.
    client = await connect(server, initialize=False)
    task = asyncio.create_task(server.sessions[0].ping())
    request = await client.server_request("ping")
    await client.send(JsonRpcResponse(request.id, {}))
    await task


async def test_requests_need_a_connection() -> None:
    server = McpServer("s", "1")
    assert server.sessions == ()  # no session to send a request on
    with pytest.raises(RuntimeError, match="not connected"):
        _ = server.client_info
    with pytest.raises(RuntimeError, match="not connected"):
        _ = server.client_capabilities


async def test_requests_after_close_raise(server: McpServer, connect: Connect) -> None:
    await connect(server, capabilities=ALL_CAPABILITIES)
    session = server.sessions[0]
    await server.close()
    with pytest.raises(RuntimeError, match="the session is closed"):
        await session.list_roots()
    with pytest.raises(RuntimeError, match="not connected"):
        _ = server.client_capabilities


# --- elicitation schema ----------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}}},
        {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}},
        {"type": "object", "properties": {"x": {"type": "null"}}},
        {"type": "object", "properties": {"x": {}}},
        {"type": "object", "properties": {"x": "string"}},
        {"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}},
        {"type": "object"},
        {"type": "object", "properties": []},
        {"type": "array", "items": {"type": "string"}},
        {"properties": {"x": {"type": "string"}}},
        {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["y"]},
        {"type": "object", "properties": {"x": {"type": "string"}}, "required": "x"},
    ],
)
async def test_elicit_refuses_schemas_that_are_not_flat_objects_of_primitives(
    server: McpServer, connect: Connect, schema: dict[str, Any]
) -> None:
    client = await connect(server, capabilities=ALL_CAPABILITIES)
    with pytest.raises(ValueError):
        await server.sessions[0].elicit("x", schema)
    await client.sync()
    assert client.received == []


async def test_a_nested_object_names_the_property(server: McpServer, connect: Connect) -> None:
    await connect(server, capabilities=ALL_CAPABILITIES)
    schema = {"type": "object", "properties": {"address": {"type": "object"}}}
    with pytest.raises(ValueError, match="address"):
        await server.sessions[0].elicit("x", schema)


# --- timeouts and closing ------------------------------------------------------------------


def test_default_timeouts() -> None:
    for method in (ServerSession.create_message, ServerSession.list_roots, ServerSession.elicit):
        assert inspect.signature(method).parameters["timeout"].default == 300.0
    assert inspect.signature(ServerSession.ping).parameters["timeout"].default == 30.0


@pytest.mark.parametrize(
    ("method", "call"),
    [
        ("ping", lambda s: s.ping(timeout=0.01)),
        ("roots/list", lambda s: s.list_roots(timeout=0.01)),
        ("elicitation/create", lambda s: s.elicit("x", FLAT_SCHEMA, timeout=0.01)),
        (
            "sampling/createMessage",
            lambda s: s.create_message(CreateMessageRequest([SamplingMessage.user("x")], 5), timeout=0.01),
        ),
    ],
)
async def test_a_timeout_fails_the_call_and_cancels_it_at_the_client(
    server: McpServer, connect: Connect, method: str, call: Any
) -> None:
    client = await connect(server, capabilities=ALL_CAPABILITIES)
    with pytest.raises(TimeoutError):
        await call(server.sessions[0])
    request = await client.server_request(method)
    cancelled = await client.notification("notifications/cancelled")
    assert cancelled.params is not None
    assert cancelled.params["requestId"] == request.id
    assert "timed out" in cancelled.params["reason"]
    # A late answer is ignored rather than crashing anything.
    await client.send(JsonRpcResponse(request.id, {}))
    await client.sync()


async def test_timeout_none_waits(server: McpServer, connect: Connect) -> None:
    client = await connect(server, capabilities=ALL_CAPABILITIES)
    task = asyncio.create_task(server.sessions[0].list_roots(timeout=None))
    request = await client.server_request("roots/list")
    for _ in range(3):
        await client.sync()
    assert not task.done()
    await client.send(JsonRpcResponse(request.id, {"roots": []}))
    assert await task == []
    assert client.notifications("notifications/cancelled") == []


async def test_closing_the_transport_fails_a_pending_call(server: McpServer, connect: Connect) -> None:
    client = await connect(server, capabilities=ALL_CAPABILITIES)
    task = asyncio.create_task(server.sessions[0].list_roots(timeout=None))
    await client.server_request("roots/list")
    await client.side.close()
    with pytest.raises(McpError) as caught:
        await task
    assert caught.value.code == CONNECTION_CLOSED


async def test_closing_the_server_fails_a_pending_call(server: McpServer, connect: Connect) -> None:
    client = await connect(server, capabilities=ALL_CAPABILITIES)
    task = asyncio.create_task(server.sessions[0].elicit("x", FLAT_SCHEMA, timeout=None))
    await client.server_request("elicitation/create")
    await server.close()
    with pytest.raises(McpError) as caught:
        await task
    assert caught.value.code == CONNECTION_CLOSED


@pytest.mark.parametrize("timeout", [300.0, None])
async def test_a_cancelled_caller_cancels_the_request_at_the_client(
    server: McpServer, connect: Connect, timeout: float | None
) -> None:
    client = await connect(server, capabilities=ALL_CAPABILITIES)
    task = asyncio.create_task(server.sessions[0].list_roots(timeout=timeout))
    request = await client.server_request("roots/list")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    cancelled = await client.notification("notifications/cancelled")
    assert cancelled.params is not None and cancelled.params["requestId"] == request.id


# --- from inside a handler -------------------------------------------------------------------


async def test_a_tool_can_sample_and_the_request_belongs_to_the_call(server: McpServer, connect: Connect) -> None:
    async def summarize(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        reply = await context.session.create_message(CreateMessageRequest([SamplingMessage.user("sum")], 50))
        return CallToolResult.text(f"model said: {reply.text}")

    server.add_tool(Tool("summarize", {"type": "object"}, summarize))
    client = await connect(server, capabilities=ALL_CAPABILITIES, transport=RecordingTransport)
    call_id = await client.send_request("tools/call", {"name": "summarize"}, id="outer")
    request = await client.server_request("sampling/createMessage")
    await client.send(
        JsonRpcResponse(request.id, {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"})
    )
    reply = await client.response(call_id)
    assert isinstance(reply, JsonRpcResponse)
    assert text_of(reply.result) == "model said: ok"
    assert server.sessions[0].connection is not None
    transport = server.sessions[0].connection.transport
    assert isinstance(transport, RecordingTransport)
    assert transport.related(lambda m: isinstance(m, JsonRpcRequest)) == ["outer"]


async def test_requests_outside_a_handler_are_unrelated(server: McpServer, connect: Connect) -> None:
    client = await connect(server, transport=RecordingTransport)
    task = asyncio.create_task(server.sessions[0].ping())
    request = await client.server_request("ping")
    await client.send(JsonRpcResponse(request.id, {}))
    await task
    assert server.sessions[0].connection is not None
    transport = server.sessions[0].connection.transport
    assert isinstance(transport, RecordingTransport)
    assert transport.related(lambda m: isinstance(m, JsonRpcRequest)) == [None]


async def test_cancelling_a_tool_call_cancels_its_nested_client_request(server: McpServer, connect: Connect) -> None:
    async def ask(arguments: dict[str, Any], context: RequestContext) -> str:
        roots = await context.session.list_roots()
        return str(roots)

    server.add_tool(Tool("ask", {"type": "object"}, ask))
    client = await connect(server, capabilities=ALL_CAPABILITIES)
    call_id = await client.send_request("tools/call", {"name": "ask"})
    nested = await client.server_request("roots/list")
    await client.notify("notifications/cancelled", {"requestId": call_id})
    cancelled = await client.notification("notifications/cancelled")
    assert cancelled.params is not None and cancelled.params["requestId"] == nested.id
    await client.sync()
    assert not [m for m in client.received if getattr(m, "id", None) == call_id]
