"""Server spans over HTTP (a real socket on 127.0.0.1): Streamable HTTP sessions, stateless
2026-07-28 POSTs and the 2024-11-05 HTTP+SSE transport; network attributes, the trace headers as
fallback parent and as link, and the refusals counted below JSON-RPC."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest
from opentelemetry.trace import SpanKind
from server_otel import Otel

from mcp_sse_server import McpServer
from mcp_sse_server.client import SseClient, StreamableHttpClient
from mcp_sse_server.transport.http import HttpLimits, HttpSettings, McpHttpServer

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
HEADER_PARENT = f"00-{TRACE_ID}-b7ad6b7169203331-01"
META_PARENT = "00-11111111111111111111111111111111-2222222222222222-01"
STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2026-07-28",
}


@pytest.fixture
async def served(otel: Otel) -> AsyncIterator[McpHttpServer]:
    server = McpServer("traced-http", telemetry=otel.telemetry())

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    settings = HttpSettings(limits=HttpLimits(max_request_bytes=2048))
    http = await McpHttpServer.bind(server, port=0, settings=settings)
    try:
        yield http
    finally:
        await http.close()


def call(request_id: int, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": {**STATELESS_META, **(meta or {})}},
    }


def headers_for(request: dict[str, Any], **extra: str) -> dict[str, str]:
    return {**HEADERS, "mcp-method": "tools/call", "mcp-name": "add", **extra}


async def test_a_stateless_post_takes_its_parent_from_the_headers_or_meta(served: McpHttpServer, otel: Otel) -> None:
    async with httpx.AsyncClient() as http:
        first = call(1)
        reply = await http.post(served.endpoint, json=first, headers=headers_for(first, traceparent=HEADER_PARENT))
        assert reply.status_code == 200, reply.text
        second = call(2, {"traceparent": META_PARENT})
        reply = await http.post(served.endpoint, json=second, headers=headers_for(second, traceparent=HEADER_PARENT))
        assert reply.status_code == 200, reply.text
    by_id = {dict(s.attributes or {})["jsonrpc.request.id"]: s for s in otel.server_spans()}
    header_child, meta_child = by_id["1"], by_id["2"]
    assert header_child.parent is not None and header_child.context.trace_id == int(TRACE_ID, 16)
    assert not header_child.links
    # _meta wins; the header's different context is a link.
    assert meta_child.context.trace_id == int("1" * 32, 16)
    assert [link.context.trace_id for link in meta_child.links] == [int(TRACE_ID, 16)]
    attributes = dict(header_child.attributes or {})
    assert attributes["network.transport"] == "tcp" and attributes["network.protocol.name"] == "http"
    assert attributes["network.protocol.version"] == "1.1"
    assert attributes["client.address"] == "127.0.0.1" and isinstance(attributes["client.port"], int)
    assert "mcp.session.id" not in attributes


async def test_a_streamable_http_session_and_a_legacy_sse_session(served: McpHttpServer, otel: Otel) -> None:
    async with StreamableHttpClient(served.endpoint, mode="session") as client:
        await client.call_tool("add", {"a": 1, "b": 2})
    async with SseClient(urljoin(served.endpoint, "/sse")) as legacy:
        await legacy.call_tool("add", {"a": 2, "b": 3})
    calls = [s for s in otel.server_spans() if s.name == "tools/call add"]
    assert len(calls) == 2
    assert len({dict(s.attributes or {})["mcp.session.id"] for s in calls}) == 2
    for span in calls:
        attributes = dict(span.attributes or {})
        assert attributes["mcp.session.id"] and attributes["network.transport"] == "tcp"
        assert attributes["client.address"] == "127.0.0.1"
    for _ in range(200):  # (a stream's end reaches the server a moment after the client closed it)
        ended = sum(point.count for point in otel.points("mcp.server.session.duration"))
        if ended == 2:
            break
        await asyncio.sleep(0.05)
    assert ended == 2  # both sessions ended (DELETE, the legacy stream's end)


async def test_refusals_below_json_rpc_are_counted(served: McpHttpServer, otel: Otel) -> None:
    async with httpx.AsyncClient() as http:
        body = call(1)
        evil = await http.post(
            served.endpoint, json=body, headers={**headers_for(body), "origin": "https://evil.example"}
        )
        assert evil.status_code == 403
        unknown = await http.post(
            served.endpoint,
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={**HEADERS, "mcp-protocol-version": "2025-11-25", "mcp-session-id": "no-such-session"},
        )
        assert unknown.status_code == 404
        big = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * 4096}}
        too_big = await http.post(served.endpoint, json=big, headers={**HEADERS, "mcp-protocol-version": "2025-11-25"})
        assert too_big.status_code == 413
    counts = {p.attributes["mcp_sse_server.reason"]: p.value for p in otel.points("mcp_sse_server.requests.rejected")}
    assert counts == {"origin": 1, "session_not_found": 1, "size": 1}
    assert not [s for s in otel.spans() if s.kind is SpanKind.SERVER]  # no MCP span for any of them


async def test_a_factory_given_telemetry_by_instrument_has_it_at_the_http_layer_too(otel: Otel) -> None:
    from mcp_sse_server.telemetry import instrument

    def build() -> McpServer:
        server = McpServer("per-session")

        @server.tool()
        def add(a: int, b: int) -> int:
            return a + b

        return server

    http = await McpHttpServer.bind(instrument(build, otel.telemetry()), port=0)
    try:
        async with StreamableHttpClient(http.endpoint, mode="session") as client:
            await client.call_tool("add", {"a": 1, "b": 2})
        async with httpx.AsyncClient() as raw:
            gone = await raw.post(
                http.endpoint,
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={**HEADERS, "mcp-protocol-version": "2025-11-25", "mcp-session-id": "gone"},
            )
        assert gone.status_code == 404
    finally:
        await http.close()
    (span,) = [s for s in otel.server_spans() if s.name == "tools/call add"]
    attributes = dict(span.attributes or {})
    assert attributes["client.address"] == "127.0.0.1" and attributes["network.protocol.version"] == "1.1"
    refused = [(dict(p.attributes), p.value) for p in otel.points("mcp_sse_server.requests.rejected")]
    assert refused == [({"mcp_sse_server.reason": "session_not_found"}, 1)]
