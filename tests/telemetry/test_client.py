"""Client telemetry (telemetry/client.py and its hook points in client/): a CLIENT span per request
sent, named and attributed by the conventions, its context injected into a copy of ``_meta`` (and
the HTTP headers); one span per logical 2026-07-28 call across its ``input_required`` rounds and
retries; a SERVER span when the client answers what the server asked; both client histograms.
Real transports (in memory, Streamable HTTP on a socket, stdio to a child process), both eras, the
SDK's in-memory exporter and metric reader passed in through ``Telemetry`` (the ``otel`` fixture),
never set globally."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode
from server_otel import Otel  # (the otel fixture: tests/telemetry/conftest.py)

from client.asgi_server import serve
from client.hooked_server import build
from client.test_stateless_scripted import Reply, Server, error
from mcp_sse_server import McpServer
from mcp_sse_server.client import InMemoryClient, McpClient, SseClient, StdioClient, StreamableHttpClient
from mcp_sse_server.client.hooks import RequestEvent
from mcp_sse_server.engine.jsonrpc import JsonRpcRequest, McpError
from mcp_sse_server.engine.types import CallToolResult, TextContent
from mcp_sse_server.transport.http import McpHttpServer

HERE = Path(__file__).parent
REPO = HERE.parents[1]
HOOKED = REPO / "tests" / "client" / "hooked_server.py"  # add, ask (elicits), whoami: its build()
SRC = str(REPO / "src")


def traceparent_of(span: ReadableSpan) -> str:
    """The ``traceparent`` a span's context goes out as, without its flags."""
    context = span.get_span_context()
    assert context is not None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}"


def parent_sent(meta: dict[str, Any]) -> str:
    """The ``traceparent`` in ``meta``, without its flags."""
    return str(meta["traceparent"]).rpartition("-")[0]


class Wire:
    """The requests a client sent, as its event hooks saw them (after telemetry injected), and the
    HTTP headers of each POST (an httpx event hook on the client's own ``http_client``)."""

    def __init__(self) -> None:
        self.requests: list[RequestEvent] = []
        self.posts: list[httpx.Headers] = []

    def hooks(self) -> dict[str, list[Any]]:
        return {"request": [self.requests.append]}

    async def on_http(self, request: httpx.Request) -> None:
        if request.method == "POST":
            self.posts.append(request.headers)

    def sent(self, method: str) -> list[dict[str, Any]]:
        return [event.params or {} for event in self.requests if event.method == method]


async def elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"colour": "teal"}}


@contextlib.asynccontextmanager
async def client_over(transport: str, wire: Wire, **options: Any) -> AsyncIterator[McpClient]:
    """A client of the hooked server over ``transport``, its requests recorded on ``wire``."""
    options.setdefault("request_timeout", 30.0)
    options["event_hooks"] = wire.hooks()
    if transport == "inmemory":
        async with InMemoryClient(build(), **options) as client:
            yield client
    elif transport == "stdio":
        async with StdioClient(sys.executable, [str(HOOKED)], {"PYTHONPATH": SRC}, **options) as client:
            yield client
    else:
        http = await McpHttpServer.bind(build, port=0)
        try:
            async with (
                httpx.AsyncClient(event_hooks={"request": [wire.on_http]}) as http_client,
                StreamableHttpClient(http.endpoint, http_client=http_client, **options) as client,
            ):
                yield client
        finally:
            await http.close()


NETWORK = {"inmemory": None, "streamable": "tcp", "stdio": "pipe"}


@pytest.mark.parametrize("mode", ["auto", "session"])
@pytest.mark.parametrize("transport", ["inmemory", "streamable", "stdio"])
async def test_a_call_is_one_client_span_its_context_on_the_wire(otel: Otel, transport: str, mode: str) -> None:
    wire = Wire()
    async with client_over(transport, wire, mode=mode, telemetry=otel.telemetry()) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
        era, version = client.era, client.protocol_version
    assert result.structured_content == {"result": 5}
    assert era == ("stateless" if mode == "auto" else "session")

    span = otel.span("tools/call add")
    assert span.kind is SpanKind.CLIENT and span.status.status_code is StatusCode.UNSET
    attributes = dict(span.attributes or {})
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "add" and attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["mcp.protocol.version"] == version
    assert attributes.get("network.transport") == NETWORK[transport]
    if transport == "streamable":
        assert attributes["server.address"] == "127.0.0.1" and isinstance(attributes["server.port"], int)
        assert ("mcp.session.id" in attributes) is (era == "session")
    if era == "session":
        assert attributes["jsonrpc.request.id"] == str(wire.requests[-1].id)
    else:
        assert "jsonrpc.request.id" not in attributes  # one logical call, whatever its wire ids

    # Its context went out in _meta, and over HTTP in the header too.
    (sent,) = wire.sent("tools/call")
    assert parent_sent(sent["_meta"]) == traceparent_of(span)
    if transport == "streamable":
        assert wire.posts[-1]["traceparent"] == sent["_meta"]["traceparent"]

    # The handshake is traced too: initialize, or the server/discover probe.
    assert {item.name for item in otel.spans()} >= {"initialize" if era == "session" else "server/discover"}

    (point,) = [
        p for p in otel.points("mcp.client.operation.duration") if p.attributes["mcp.method.name"] == "tools/call"
    ]
    assert point.count == 1 and point.attributes["gen_ai.tool.name"] == "add"
    assert "mcp.session.id" not in point.attributes and "jsonrpc.request.id" not in point.attributes
    assert point.explicit_bounds[:3] == (0.01, 0.02, 0.05)
    sessions = otel.points("mcp.client.session.duration")
    assert len(sessions) == (1 if era == "session" else 0)
    if sessions:
        assert sessions[0].attributes["mcp.protocol.version"] == version and "error.type" not in sessions[0].attributes


async def test_the_legacy_sse_transport_sends_the_context_in_meta_and_headers(otel: Otel) -> None:
    wire = Wire()
    http = await McpHttpServer.bind(build, port=0)
    try:
        async with (
            httpx.AsyncClient(event_hooks={"request": [wire.on_http]}) as http_client,
            SseClient(
                http.endpoint.rpartition("/")[0] + "/sse",
                http_client=http_client,
                telemetry=otel.telemetry(),
                event_hooks=wire.hooks(),
            ) as client,
        ):
            await client.call_tool("add", {"a": 2, "b": 3})
            version = client.protocol_version
    finally:
        await http.close()
    span = otel.span("tools/call add")
    attributes = dict(span.attributes or {})
    assert attributes["network.transport"] == "tcp" and attributes["mcp.protocol.version"] == version
    (sent,) = wire.sent("tools/call")
    assert parent_sent(sent["_meta"]) == traceparent_of(span)
    carried = [headers["traceparent"] for headers in wire.posts if "traceparent" in headers]
    assert carried[-1] == sent["_meta"]["traceparent"]


async def test_a_session_the_server_ends_is_measured_with_an_error(otel: Otel) -> None:
    async with StdioClient(
        sys.executable, [str(HOOKED)], {"PYTHONPATH": SRC}, mode="session", telemetry=otel.telemetry()
    ) as client:
        await client.call_tool("add", {"a": 1, "b": 1})
        process = client.transport.process
        assert process is not None
        process.kill()  # the server goes away under the session
        await asyncio.wait_for(process.wait(), 30)
        with pytest.raises(McpError):
            await client.call_tool("add", {"a": 1, "b": 1})
    (ended,) = otel.points("mcp.client.session.duration")
    assert ended.attributes["error.type"] == "-32000" and ended.count == 1


async def test_the_callers_meta_is_never_changed(otel: Otel) -> None:
    wire = Wire()
    params = {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": {"mine": True}}
    for mode in ("auto", "session"):
        async with client_over("inmemory", wire, mode=mode, telemetry=otel.telemetry()) as client:
            await client.request("tools/call", params)
    assert params == {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": {"mine": True}}
    assert all(sent["_meta"]["mine"] is True and "traceparent" in sent["_meta"] for sent in wire.sent("tools/call"))


async def test_a_stateless_call_with_an_input_round_is_one_span(otel: Otel) -> None:
    wire = Wire()
    async with client_over("inmemory", wire, telemetry=otel.telemetry(), elicitation_handler=elicit) as client:
        result = await client.call_tool("ask", {})
        assert client.era == "stateless"
    assert isinstance(result.content[0], TextContent) and result.content[0].text == "you said teal"

    call = otel.span("tools/call ask")
    rounds = wire.sent("tools/call")
    assert len(rounds) == 2  # the first ask, and the retry with the answer
    assert {parent_sent(sent["_meta"]) for sent in rounds} == {traceparent_of(call)}
    assert [event.name for event in call.events] == ["mcp_sse_server.input_required"]
    assert call.events[0].attributes == {
        "mcp_sse_server.round": 1,
        "mcp_sse_server.input.methods": ("elicitation/create",),
    }
    # The client answering the question: a SERVER span inside the call's span.
    answered = otel.span("elicitation/create")
    assert answered.kind is SpanKind.SERVER and answered.parent is not None
    assert answered.parent.span_id == call.context.span_id
    assert "jsonrpc.request.id" not in (answered.attributes or {})  # an inputRequests key is no id
    assert (
        len(
            [p for p in otel.points("mcp.client.operation.duration") if p.attributes["mcp.method.name"] == "tools/call"]
        )
        == 1
    )


async def test_a_stateless_calls_retries_are_events_of_its_one_span(otel: Otel) -> None:
    """A scripted 2026-07-28 server: the call's first tools/call meets -32020 (its tools/list is
    stale), the retry -32022 naming a revision both speak, the third is answered."""
    refusals = [
        lambda message: error(message, -32020, "Mcp-Param-Region header does not match"),
        lambda message: error(message, -32022, "Unsupported protocol version", {"supported": ["2026-07-28"]}),
    ]

    def script(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        return refusals.pop(0)(message) if message["method"] == "tools/call" and refusals else None

    server = Server(script)
    async with serve(server.app) as base, StreamableHttpClient(f"{base}/mcp", telemetry=otel.telemetry()) as client:
        await client.call_tool("add", {})
    call = otel.span("tools/call add")
    assert [(event.name, dict(event.attributes or {})) for event in call.events] == [
        ("mcp_sse_server.retry", {"mcp_sse_server.reason": "header_mismatch"}),
        ("mcp_sse_server.retry", {"mcp_sse_server.reason": "unsupported_protocol_version"}),
    ]
    assert call.status.status_code is StatusCode.UNSET  # the call succeeded in the end
    sent = [headers["traceparent"].rpartition("-")[0] for headers, _ in server.posted("tools/call")]
    assert sent == [traceparent_of(call)] * 3
    # The tools/list the retry needed is a span of its own, inside the call's.
    (relisted,) = [span for span in otel.spans() if span.name == "tools/list" and span.parent is not None]
    assert relisted.parent is not None and relisted.parent.span_id == call.context.span_id
    assert server.posted("tools/list")[-1][0]["traceparent"].rpartition("-")[0] == traceparent_of(relisted)


async def test_a_server_request_on_a_session_is_a_server_span_parented_by_its_meta(otel: Otel) -> None:
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

    async def sample(request: Any) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

    async with InMemoryClient(build(), mode="session", telemetry=otel.telemetry(), sampling_handler=sample) as client:
        # What a traced server sends: the request with its CLIENT span's context in _meta.
        handler = client.handle_request
        meta = {"traceparent": parent}
        request = JsonRpcRequest(7, "sampling/createMessage", {"messages": [], "maxTokens": 5, "_meta": meta})
        answer = await handler(request, None)  # type: ignore[arg-type]
        assert answer["model"] == "m"
        with pytest.raises(McpError):  # no roots: -32601, the caller's fault, not an error here
            await handler(JsonRpcRequest(8, "roots/list", {}), None)  # type: ignore[arg-type]
    sampled = otel.span("sampling/createMessage")
    assert sampled.kind is SpanKind.SERVER and sampled.parent is not None
    assert f"{sampled.context.trace_id:032x}" == parent.split("-")[1]
    assert f"{sampled.parent.span_id:016x}" == parent.split("-")[2]
    assert dict(sampled.attributes or {})["jsonrpc.request.id"] == "7"
    refused = otel.span("roots/list")
    assert refused.status.status_code is StatusCode.UNSET
    assert dict(refused.attributes or {})["rpc.response.status_code"] == "-32601"


@pytest.mark.parametrize("mode", ["auto", "session"])
async def test_errors_are_classified(otel: Otel, mode: str) -> None:
    server = McpServer("failing")

    @server.tool()
    def broken() -> str:
        raise RuntimeError("secret detail")

    @server.tool()
    async def slow() -> str:
        await asyncio.sleep(30)
        return "late"

    @server.tool()
    def refused() -> CallToolResult:
        return CallToolResult([TextContent("no")], is_error=True)

    async with InMemoryClient(server, mode=mode, telemetry=otel.telemetry()) as client:
        with pytest.raises(McpError):
            await client.request("tools/call", {"name": "missing", "arguments": {}})
        assert (await client.call_tool("refused", {})).is_error
        with pytest.raises(TimeoutError):
            await client.call_tool("slow", {}, timeout=0.2)
        with contextlib.suppress(McpError):  # a tool's exception: an error result, or -32603
            await client.call_tool("broken", {})

    missing = otel.span("tools/call missing")
    assert missing.status.status_code is StatusCode.ERROR
    assert dict(missing.attributes or {})["error.type"] == dict(missing.attributes or {})["rpc.response.status_code"]
    assert dict(otel.span("tools/call refused").attributes or {})["error.type"] == "tool_error"
    timed_out = otel.span("tools/call slow")
    assert dict(timed_out.attributes or {})["error.type"] == "timeout"
    assert timed_out.status.status_code is StatusCode.ERROR
    for span in otel.spans():
        assert "secret detail" not in (span.status.description or "")
    failures = {p.attributes.get("error.type") for p in otel.points("mcp.client.operation.duration")}
    assert {"tool_error", "timeout"} <= failures


async def test_spans_off_keeps_metrics_and_propagation_only_keeps_the_context(otel: Otel) -> None:
    from opentelemetry import trace

    wire = Wire()
    no_spans = otel.telemetry(spans=False)
    async with client_over("inmemory", wire, mode="session", telemetry=no_spans) as client:
        await client.call_tool("add", {"a": 1, "b": 2})
    assert otel.spans() == []
    assert len(otel.points("mcp.client.operation.duration")) == 2  # initialize, tools/call

    outer_tracer = otel.tracer_provider.get_tracer("app")
    only = otel.telemetry(mode="propagation_only")
    wire = Wire()
    async with client_over("inmemory", wire, mode="session", telemetry=only) as client:
        with outer_tracer.start_as_current_span("agent step") as outer:
            await client.call_tool("add", {"a": 1, "b": 2})
    assert [span.name for span in otel.spans()] == ["agent step"]
    (sent,) = wire.sent("tools/call")
    context = outer.get_span_context()
    assert parent_sent(sent["_meta"]) == f"00-{context.trace_id:032x}-{context.span_id:016x}"
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing left attached


async def test_a_span_is_a_child_of_the_callers_and_the_clients_telemetry_can_be_switched(otel: Otel) -> None:
    tracer = otel.tracer_provider.get_tracer("app")
    async with InMemoryClient(build(), mode="session") as client:
        assert client.telemetry is None
        await client.call_tool("add", {"a": 1, "b": 2})
        assert otel.spans() == []
        client.telemetry = otel.telemetry()
        with tracer.start_as_current_span("agent step") as outer:
            await client.call_tool("add", {"a": 1, "b": 2})
        client.telemetry = None
        await client.call_tool("add", {"a": 1, "b": 2})
    call = otel.span("tools/call add")
    assert call.parent is not None and call.parent.span_id == outer.get_span_context().span_id


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, cwd=REPO
    )


def test_telemetry_off_imports_no_opentelemetry() -> None:
    done = _run(
        f"""
        import asyncio, sys
        sys.path.insert(0, {str(HOOKED.parent)!r})
        from hooked_server import build
        from mcp_sse_server.client import InMemoryClient, StdioClient
        from mcp_sse_server.transport.http import McpHttpServer
        from mcp_sse_server.client import StreamableHttpClient

        async def main():
            for mode in ("auto", "session"):
                async with InMemoryClient(build(), mode=mode) as client:
                    await client.call_tool("add", {{"a": 1, "b": 2}})
                http = await McpHttpServer.bind(build, port=0)
                async with StreamableHttpClient(http.endpoint, mode=mode) as client:
                    await client.call_tool("add", {{"a": 1, "b": 2}})
                await http.close()
                stdio = StdioClient(sys.executable, [{str(HOOKED)!r}], {{"PYTHONPATH": {SRC!r}}}, mode=mode)
                async with stdio as client:
                    await client.call_tool("add", {{"a": 1, "b": 2}})
        asyncio.run(main())
        print(sorted(name for name in sys.modules if name.startswith("opentelemetry")))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("mode", ["auto", "session"])
async def test_content_is_captured_on_the_client_span_only_when_asked(otel: Otel, mode: str) -> None:
    wire = Wire()
    async with client_over("inmemory", wire, mode=mode, telemetry=otel.telemetry(capture_content=True)) as client:
        await client.call_tool("add", {"a": 2, "b": 3})
    attributes = dict(otel.span("tools/call add").attributes or {})
    assert attributes["gen_ai.tool.call.arguments"] == '{"a":2,"b":3}'
    assert attributes["gen_ai.tool.call.result"] == '{"result":5}'
    otel.exporter.clear()
    async with client_over("inmemory", wire, mode=mode, telemetry=otel.telemetry()) as client:
        await client.call_tool("add", {"a": 2, "b": 3})
    assert "gen_ai.tool.call.arguments" not in dict(otel.span("tools/call add").attributes or {})
