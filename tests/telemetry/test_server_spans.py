"""Server spans and metrics over the in-process transports (RawClient's task path and
InMemoryClient's direct path), with the SDK's in-memory exporters: names, attributes, error
classification, parents and links, cardinality, cancellation, metrics, logs and modes."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode
from server_otel import Otel, raw

from fixtures.sessions import RawClient
from mcp_sse_server import InMemoryClient, McpServer, MemoryTransport
from mcp_sse_server.engine import versions
from mcp_sse_server.engine.jsonrpc import INTERNAL_ERROR, JsonRpcError, JsonRpcResponse, McpError
from mcp_sse_server.engine.types import CallToolResult, TextContent
from mcp_sse_server.telemetry.conventions import DURATION_BUCKETS

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def make_server(otel: Otel, **options: Any) -> McpServer:
    server = McpServer("traced", telemetry=otel.telemetry(**options))

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    def broken() -> str:
        raise RuntimeError("secret detail that must not reach a span description")

    @server.tool()
    def refuse() -> str:
        raise McpError(INTERNAL_ERROR, "backend unavailable")

    @server.tool()
    def soft_fail() -> CallToolResult:
        return CallToolResult([TextContent("no")], is_error=True)

    @server.prompt()
    def greet(name: str) -> str:
        return f"hello {name}"

    async def explode(params: dict[str, Any], context: Any) -> dict[str, Any]:
        raise RuntimeError("secret detail that must not reach a span description")

    server.handlers.register("custom/explode", explode)
    return server


def with_meta(params: dict[str, Any], revision: str | None, **meta: Any) -> dict[str, Any]:
    """``params`` with the stateless envelope (for 2026-07-28) and ``meta`` in ``_meta``."""
    merged = dict(STATELESS_META) if revision is None else {}
    merged.update(meta)
    return {**params, "_meta": merged} if merged else params


SESSION_REVISIONS = [revision.name for revision in versions.SERVED if revision.handshake]


@pytest.mark.parametrize("revision", [*SESSION_REVISIONS, None], ids=[*SESSION_REVISIONS, "2026-07-28"])
async def test_every_revision_names_and_attributes_its_spans(otel: Otel, revision: str | None) -> None:
    client = await raw(make_server(otel), revision)
    try:
        reply = await client.call("tools/call", with_meta({"name": "add", "arguments": {"a": 1, "b": 2}}, revision))
        assert isinstance(reply, JsonRpcResponse)
        await client.call("prompts/get", with_meta({"name": "greet", "arguments": {"name": "x"}}, revision))
        await client.call("tools/list", with_meta({}, revision))
    finally:
        await client.close()
    call = otel.span("tools/call add")
    assert call.kind is SpanKind.SERVER and call.status.status_code is StatusCode.UNSET
    attributes = dict(call.attributes or {})
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "add" and attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["jsonrpc.request.id"] == str(reply.id)
    assert attributes["mcp.protocol.version"] == (revision or "2026-07-28")
    assert "network.transport" not in attributes  # in memory: no network
    if revision is None:  # a stateless request has no session (digest 1.6)
        assert "mcp.session.id" not in attributes
    else:
        assert "mcp.session.id" in attributes or client.server.sessions == ()  # (memory sessions have no id)
    assert dict(otel.span("prompts/get greet").attributes or {})["gen_ai.prompt.name"] == "greet"
    assert "gen_ai.tool.name" not in dict(otel.span("tools/list").attributes or {})
    if revision is not None:
        initialize = dict(otel.span("initialize").attributes or {})
        assert initialize["mcp.protocol.version"] == revision


async def test_a_session_with_an_id_puts_it_on_spans_but_never_on_metrics(otel: Otel) -> None:
    from mcp_sse_server.engine.records import SessionRecord

    server = make_server(otel)
    server_side, client_side = MemoryTransport.pair()
    await server.connect(server_side, record=SessionRecord("session-1"))
    client = RawClient(server, client_side)
    try:
        await client.initialize(protocol_version="2025-11-25")
        await client.result("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    finally:
        await client.close()
    assert dict(otel.span("tools/call add").attributes or {})["mcp.session.id"] == "session-1"
    points = otel.points("mcp.server.operation.duration")
    assert points and all(
        "mcp.session.id" not in p.attributes and "jsonrpc.request.id" not in p.attributes for p in points
    )
    sessions = otel.points("mcp.server.session.duration")
    assert [dict(p.attributes) for p in sessions] == [{"mcp.protocol.version": "2025-11-25"}]


async def test_the_error_table(otel: Otel) -> None:
    server = make_server(otel)
    async with InMemoryClient(server) as client:
        for name in ("refuse", "nope"):
            with pytest.raises(McpError):
                await client.call_tool(name, {})
        with pytest.raises(McpError) as raised:
            await client.request("custom/explode", {})
        assert raised.value.message == "Internal error"  # the wire never says more
        for name in ("soft_fail", "broken"):  # a tool's exception is its isError result
            assert (await client.call_tool(name, {})).is_error
    explode = otel.span("custom/explode")
    assert explode.status.status_code is StatusCode.ERROR
    assert explode.status.description == "Internal error"
    assert dict(explode.attributes or {})["error.type"] == "RuntimeError"
    assert dict(explode.attributes or {})["rpc.response.status_code"] == "-32603"
    assert [event.name for event in explode.events] == ["exception"]  # record_exceptions
    assert all("secret" not in (span.status.description or "") for span in otel.spans())
    broken = otel.span("tools/call broken")
    assert dict(broken.attributes or {})["error.type"] == "tool_error"
    refuse = otel.span("tools/call refuse")
    assert refuse.status.status_code is StatusCode.ERROR
    assert dict(refuse.attributes or {})["error.type"] == "-32603"
    # An unknown tool is the caller's fault (-32602): not a server error; and not a span name.
    unknown = otel.span("tools/call")
    assert unknown.status.status_code is StatusCode.UNSET
    assert dict(unknown.attributes or {})["rpc.response.status_code"] == "-32602"
    assert "error.type" not in dict(unknown.attributes or {})
    assert dict(unknown.attributes or {})["gen_ai.tool.name"] == "_OTHER"
    assert all("nope" not in span.name for span in otel.spans())
    soft = otel.span("tools/call soft_fail")
    assert soft.status.status_code is StatusCode.ERROR and dict(soft.attributes or {})["error.type"] == "tool_error"
    errors = {
        p.attributes.get("gen_ai.tool.name"): p.attributes.get("error.type")
        for p in otel.points("mcp.server.operation.duration")
    }
    assert errors["_OTHER"] is None and errors["soft_fail"] == "tool_error" and errors["refuse"] == "-32603"


async def test_an_unknown_method_is_other(otel: Otel) -> None:
    client = await raw(make_server(otel), "2025-11-25")
    try:
        reply = await client.call("made/up", {})
        assert isinstance(reply, JsonRpcError)
    finally:
        await client.close()
    span = otel.span("_OTHER")
    assert dict(span.attributes or {})["mcp_sse_server.method.original"] == "made/up"
    assert span.status.status_code is StatusCode.UNSET  # -32601: the caller's fault


async def test_parent_from_meta_beats_the_ambient_span_which_becomes_a_link(otel: Otel) -> None:
    server = make_server(otel)
    tracer = otel.tracer_provider.get_tracer("test")
    seen: list[Any] = []

    @server.tool()
    def where() -> str:
        seen.append(trace.get_current_span().get_span_context())
        return "ok"

    async with InMemoryClient(server) as client:  # the direct path: the caller's context is ambient
        with tracer.start_as_current_span("ambient") as ambient:
            await client.request(
                "tools/call", {"name": "where", "arguments": {}, "_meta": {"traceparent": TRACEPARENT}}
            )
            await client.request("tools/call", {"name": "where", "arguments": {}})
            await client.request("tools/call", {"name": "where", "arguments": {}, "_meta": {"traceparent": "00-bad"}})
    first, second, third = [s for s in otel.server_spans() if s.name == "tools/call where"]
    assert first.context.trace_id == int(TRACE_ID, 16) and first.parent is not None
    assert first.parent.span_id == int(PARENT_ID, 16) and first.parent.is_remote
    assert [link.context.span_id for link in first.links] == [ambient.get_span_context().span_id]
    # No _meta context: the ambient span is the parent, and no link.
    assert second.parent is not None and second.parent.span_id == ambient.get_span_context().span_id
    assert not second.links
    # An invalid traceparent is ignored.
    assert third.parent is not None and third.parent.span_id == ambient.get_span_context().span_id
    # The handler ran inside the server span.
    assert seen[0].span_id == first.context.span_id


async def test_a_cancelled_request_is_an_event_not_an_error(otel: Otel) -> None:
    server = make_server(otel)
    started = asyncio.Event()

    @server.tool()
    async def slow() -> str:
        started.set()
        await asyncio.sleep(30)
        return "late"

    client = await raw(server, "2025-11-25")
    try:
        request_id = await client.send_request("tools/call", {"name": "slow", "arguments": {}})
        await asyncio.wait_for(started.wait(), 10)
        await client.notify("notifications/cancelled", {"requestId": request_id, "reason": "user"})
        await client.sync()
    finally:
        await client.close()
    span = otel.span("tools/call slow")
    assert span.status.status_code is StatusCode.UNSET
    names = [event.name for event in span.events]
    assert names.count("cancelled") == 2  # the notification (with its reason), and the end with no reply
    assert dict(span.events[0].attributes or {}) == {"mcp_sse_server.reason": "user"}


async def test_the_operation_histogram_has_the_conventions_buckets(otel: Otel) -> None:
    async with InMemoryClient(make_server(otel)) as client:
        await client.call_tool("add", {"a": 1, "b": 2})
    points = [p for p in otel.points("mcp.server.operation.duration") if p.attributes.get("gen_ai.tool.name") == "add"]
    assert len(points) == 1 and points[0].count == 1
    assert tuple(points[0].explicit_bounds) == DURATION_BUCKETS
    assert dict(points[0].attributes) == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "add",
        "gen_ai.operation.name": "execute_tool",
        "mcp.protocol.version": "2026-07-28",
    }


async def test_metrics_without_spans_and_propagation_only(otel: Otel) -> None:
    server = make_server(otel, spans=False)
    async with InMemoryClient(server) as client:
        await client.call_tool("add", {"a": 1, "b": 2})
    assert otel.spans() == [] and otel.points("mcp.server.operation.duration")

    quiet = make_server(otel, mode="propagation_only")
    seen: list[Any] = []

    @quiet.tool()
    def where() -> str:
        seen.append(trace.get_current_span().get_span_context())
        return "ok"

    async with InMemoryClient(quiet) as client:
        await client.request("tools/call", {"name": "where", "arguments": {}, "_meta": {"traceparent": TRACEPARENT}})
    assert otel.spans() == []
    assert seen[0].trace_id == int(TRACE_ID, 16) and seen[0].span_id == int(PARENT_ID, 16)


async def test_log_records_inside_a_request_carry_the_span_ids(otel: Otel, caplog: pytest.LogCaptureFixture) -> None:
    from mcp_sse_server.telemetry.logs import remove_log_correlation

    server = make_server(otel)
    try:
        with caplog.at_level(logging.ERROR, logger="mcp_sse_server"):
            async with InMemoryClient(server) as client:
                await client.call_tool("broken", {})
        record = next(r for r in caplog.records if "broken failed" in r.getMessage())
        span = otel.span("tools/call broken")
        assert record.otelTraceID == trace.format_trace_id(span.context.trace_id)  # type: ignore[attr-defined]
        assert record.otelSpanID == trace.format_span_id(span.context.span_id)  # type: ignore[attr-defined]
    finally:
        remove_log_correlation()
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="mcp_sse_server"):
        async with InMemoryClient(make_server(otel, logs=False)) as client:
            await client.call_tool("broken", {})
    record = next(r for r in caplog.records if "broken failed" in r.getMessage())
    assert not hasattr(record, "otelTraceID")


async def test_a_batch_entry_gets_a_span_each(otel: Otel) -> None:
    from mcp_sse_server.engine.jsonrpc import JsonRpcRequest

    client = await raw(make_server(otel), "2025-03-26")
    try:
        for request_id in (101, 102):  # (a batch is split into entries before dispatch: each is one request)
            await client.send(
                JsonRpcRequest(request_id, "tools/call", {"name": "add", "arguments": {"a": 1, "b": request_id}})
            )
        for request_id in (101, 102):
            await client.response(request_id)
    finally:
        await client.close()
    ids = sorted(
        str(dict(s.attributes or {})["jsonrpc.request.id"]) for s in otel.spans() if s.name == "tools/call add"
    )
    assert ids == ["101", "102"]


async def test_a_rate_limit_refusal_is_counted(otel: Otel) -> None:
    from mcp_sse_server.middleware.rate_limit import RateLimit

    server = make_server(otel)
    server.add_middleware(RateLimit(rate=0.001, burst=1))
    refused = 0
    async with InMemoryClient(server) as client:  # (its discovery may take the one token)
        for _ in range(3):
            try:
                await client.call_tool("add", {"a": 1, "b": 2})
            except McpError as error:
                assert error.code == -32029
                refused += 1
    assert refused >= 2
    counted = otel.points("mcp_sse_server.requests.rejected")
    assert [(dict(p.attributes), p.value) for p in counted] == [({"mcp_sse_server.reason": "rate_limit"}, refused)]


@pytest.mark.parametrize("capture", [False, True])
async def test_content_is_captured_only_when_asked_and_cut_to_the_limit(otel: Otel, capture: bool) -> None:
    server = make_server(otel, capture_content=capture, max_attribute_bytes=12)
    client = await raw(server, "2025-11-25")
    try:
        await client.result("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        await client.result("prompts/get", {"name": "greet", "arguments": {"name": "Ada Lovelace, Countess"}})
    finally:
        await client.close()
    call = dict(otel.span("tools/call add").attributes or {})
    prompt = dict(otel.span("prompts/get greet").attributes or {})
    if not capture:  # the default: nothing of the content
        assert not [key for key in {**call, **prompt} if key.startswith(("gen_ai.tool.call.", "gen_ai.prompt.var"))]
        return
    assert call["gen_ai.tool.call.arguments"] == '{"a":2,"b":3}'[:12]
    assert call["gen_ai.tool.call.result"] == '{"result":5}'  # structuredContent, 12 bytes: not cut
    assert prompt["gen_ai.prompt.variable.name"] == "Ada Lovelace"
    for point in otel.points("mcp.server.operation.duration"):  # never on a metric
        assert not [key for key in dict(point.attributes) if key.startswith("gen_ai.tool.call.")]


@pytest.mark.parametrize("client_traced", [True, False])
async def test_what_the_server_asks_its_client_is_a_client_span_of_the_asking_call(
    otel: Otel, client_traced: bool
) -> None:
    from mcp_sse_server.engine.context import RequestContext

    server = McpServer("asker", telemetry=otel.telemetry())
    schema = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}
    seen: list[dict[str, Any]] = []

    @server.tool()
    async def ask(ctx: RequestContext) -> str:
        answer = await ctx.session.elicit("Favourite colour?", schema)
        refused = "none"
        try:
            await ctx.session.elicit("And again?", schema)
        except McpError as error:  # the client's handler failed: an error on that CLIENT span
            refused = str(error.code)
        return f"{(answer.content or {}).get('colour')} {refused}"

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(dict(params.get("_meta") or {}))
        if len(seen) > 1:
            raise McpError(INTERNAL_ERROR, "no more questions")
        return {"action": "accept", "content": {"colour": "teal"}}

    telemetry = otel.telemetry() if client_traced else None
    async with InMemoryClient(server, mode="session", telemetry=telemetry, elicitation_handler=elicit) as client:
        result = await client.call_tool("ask")
    assert result.content[0].text == "teal -32603"  # type: ignore[union-attr]
    call = next(s for s in otel.server_spans() if s.name == "tools/call ask")
    asked, refused = [s for s in otel.spans() if s.name == "elicitation/create" and s.kind is SpanKind.CLIENT]
    if client_traced:  # the client answers in a SERVER span of its own, the server's CLIENT span its parent
        answered = [s for s in otel.spans() if s.name == "elicitation/create" and s.kind is SpanKind.SERVER]
        assert [s.parent.span_id if s.parent else None for s in answered] == [
            asked.context.span_id,
            refused.context.span_id,
        ]
    else:
        assert not [s for s in otel.spans() if s.kind is not SpanKind.SERVER and s.name != "elicitation/create"]
        assert {s.name for s in otel.server_spans()} == {"initialize", "tools/call ask"}  # the client makes none
    assert asked.status.status_code is StatusCode.UNSET
    assert asked.parent is not None and asked.parent.span_id == call.context.span_id
    assert asked.context.trace_id == call.context.trace_id
    attributes = dict(asked.attributes or {})
    assert attributes["mcp.method.name"] == "elicitation/create" and attributes["mcp.protocol.version"]
    assert seen[0]["traceparent"].split("-")[2] == f"{asked.context.span_id:016x}"  # its context went along
    assert refused.status.status_code is StatusCode.ERROR  # (a CLIENT span: every error code is an error)
    assert dict(refused.attributes or {})["error.type"] == "-32603"


async def test_the_rounds_of_a_stateless_call_link_to_its_first(otel: Otel) -> None:
    from mcp_sse_server.engine.context import RequestContext

    server = McpServer("asker", telemetry=otel.telemetry())
    schema = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}

    @server.tool()
    async def ask(ctx: RequestContext) -> str:
        first = await ctx.session.elicit("Favourite colour?", schema)
        second = await ctx.session.elicit("Second favourite?", schema)
        return f"{(first.content or {}).get('colour')} {(second.content or {}).get('colour')}"

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"colour": "teal"}}

    async with InMemoryClient(server, elicitation_handler=elicit) as client:
        assert client.era == "stateless"
        result = await client.call_tool("ask")
    assert result.content[0].text == "teal teal"  # type: ignore[union-attr]
    rounds = [s for s in otel.server_spans() if s.name == "tools/call ask"]
    assert len(rounds) == 3  # asked, asked again, answered
    first = rounds[0]
    assert [event.name for event in first.events] == ["input_required"] and not first.links
    for number, later in enumerate(rounds[1:], start=1):
        (event,) = [e for e in later.events if e.name == "input_required round"]
        assert dict(event.attributes or {}) == {"mcp_sse_server.round": number}
        assert [link.context.span_id for link in later.links] == [first.context.span_id]


async def test_sessions_active_counts_the_sessions_served_until_they_end(otel: Otel) -> None:
    server = make_server(otel)
    clients = [await raw(server, "2025-11-25"), await raw(server, "2025-06-18")]

    def active() -> dict[str, int]:
        points = otel.points("mcp_sse_server.sessions.active")
        return {str(p.attributes["mcp.protocol.version"]): p.value for p in points}

    await clients[0].result("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert active() == {"2025-11-25": 1, "2025-06-18": 1}  # (counted from initialize: once each)
    stateless = await raw(server, None)
    await stateless.result("tools/call", with_meta({"name": "add", "arguments": {"a": 1, "b": 2}}, None))
    assert sum(active().values()) == 2  # a stateless request is no session
    for client in [*clients, stateless]:
        await client.close()
    for _ in range(100):  # (the server sees the transport close a moment later)
        if sum(active().values()) == 0:
            break
        await asyncio.sleep(0.01)
    assert active() == {"2025-11-25": 0, "2025-06-18": 0}
