"""Trace context across workers: two ``McpHttpServer`` workers in this process, each with its own
tracer provider (standing for two processes' SDKs), sharing a real redis-server. A
``notifications/cancelled`` that reaches worker B for a request worker A runs is a SERVER span on
B, whose context travels in the routed message: A's span of the cancelled request, in the same
trace, gets a ``cancel (routed)`` event and a link to B's span. A 2024-11-05 POST that reaches B
for a stream A holds carries its HTTP origin (trace headers, peer) to A, whose span of its
request takes them as if it had been posted there. Routed messages without the new ``trace``
or ``origin`` fields (older workers) still decode."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from server_otel import Otel

from mcp_sse_server import McpServer
from mcp_sse_server.transport.http import McpHttpServer

pytest.importorskip("redis")

from mcp_sse_server.engine.observe import HttpOrigin
from mcp_sse_server.stores.redis_routing import RoutedAnswer, RoutedCancel, RoutedPost, decode_routed, encode_routed
from mcp_sse_server.stores.redis_setup import RedisBackend

TRACE_ID = "5b8aa5a2d2c872e8321cf37308d69df2"
CALL_PARENT = f"00-{TRACE_ID}-051581bf3cb55c13-01"
CANCEL_PARENT = f"00-{TRACE_ID}-0f8a4e4e6fd0a3b1-01"
POST_PARENT = f"00-{TRACE_ID}-3c3d3e3f40414243-01"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def new_otel() -> Otel:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    return Otel(provider, MeterProvider(metric_readers=[reader]), exporter, reader)


@pytest.fixture
def two() -> Iterator[tuple[Otel, Otel]]:
    pair = (new_otel(), new_otel())
    yield pair
    for otel in pair:
        otel.tracer_provider.shutdown()
        otel.meter_provider.shutdown()


@pytest.fixture
async def workers(two: tuple[Otel, Otel], redis_server: Any, redis_prefix: str) -> AsyncIterator[list[Any]]:
    started = asyncio.Event()
    served: list[Any] = []
    for otel in two:
        server = McpServer("routed", telemetry=otel.telemetry())

        @server.tool()
        async def slow() -> str:
            started.set()
            await asyncio.sleep(30)
            return "late"

        @server.tool()
        def add(a: int, b: int) -> int:
            return a + b

        backend = RedisBackend.from_url(redis_server.url, prefix=redis_prefix)
        served.append(await McpHttpServer.bind(server, port=0, backend=backend))
    try:
        yield [*served, started]
    finally:
        for http in served:
            await http.close()


async def test_a_cancel_routed_to_the_worker_running_the_call_joins_its_trace(
    workers: list[Any], two: tuple[Otel, Otel]
) -> None:
    a, b, started = workers
    otel_a, otel_b = two
    async with httpx.AsyncClient(timeout=30) as http:
        opened = await http.post(
            a.endpoint,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            },
            headers=HEADERS,
        )
        assert opened.status_code == 200, opened.text
        session = {**HEADERS, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        done = await http.post(
            a.endpoint, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session
        )
        assert done.status_code == 202
        call = asyncio.create_task(
            http.post(
                a.endpoint,
                json={
                    "jsonrpc": "2.0",
                    "id": 7,
                    "method": "tools/call",
                    "params": {"name": "slow", "arguments": {}, "_meta": {"traceparent": CALL_PARENT}},
                },
                headers=session,
            )
        )
        await asyncio.wait_for(started.wait(), 20)
        cancel = {"requestId": 7, "reason": "enough", "_meta": {"traceparent": CANCEL_PARENT}}
        sent = await http.post(
            b.endpoint, json={"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}, headers=session
        )
        assert sent.status_code == 202, sent.text
        await asyncio.wait_for(call, 20)
    (forwarded,) = [s for s in otel_b.spans() if s.name == "notifications/cancelled"]
    assert forwarded.context.trace_id == int(TRACE_ID, 16)
    assert forwarded.parent is not None and forwarded.parent.span_id == int("0f8a4e4e6fd0a3b1", 16)
    (running,) = [s for s in otel_a.spans() if s.name == "tools/call slow"]
    assert running.context.trace_id == int(TRACE_ID, 16)  # one trace, spans from both workers
    assert "cancel (routed)" in [event.name for event in running.events]
    assert forwarded.context.span_id in [link.context.span_id for link in running.links]
    assert not [s for s in otel_a.spans() if s.name == "notifications/cancelled"]
    routed = otel_a.points("mcp_sse_server.routed.messages")
    assert [(dict(p.attributes), p.value) for p in routed] == [({"mcp_sse_server.message.type": "cancel"}, 1)]


async def _next_data(lines: AsyncIterator[str]) -> tuple[str, str]:
    """The next event of a raw 2024-11-05 stream: (event name, data)."""
    event, data = "message", list[str]()
    async for line in lines:
        if not line:
            if data:
                return event, "\n".join(data)
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    raise EOFError("the stream ended")


async def test_a_legacy_post_routed_to_the_worker_holding_its_stream_keeps_its_trace_headers(
    workers: list[Any], two: tuple[Otel, Otel]
) -> None:
    a, b, _ = workers
    otel_a, otel_b = two
    async with (
        httpx.AsyncClient(timeout=30) as http,
        http.stream("GET", urljoin(a.endpoint, "/sse"), headers={"accept": "text/event-stream"}) as stream,
    ):
        assert stream.status_code == 200
        lines = stream.aiter_lines()
        kind, path = await asyncio.wait_for(_next_data(lines), 20)
        assert kind == "endpoint" and path.startswith("/messages/?session_id=")
        on_a, on_b = urljoin(a.endpoint, path), urljoin(b.endpoint, path)
        init = {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        posted = await http.post(on_a, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert posted.status_code == 202, posted.text
        assert json.loads((await asyncio.wait_for(_next_data(lines), 20))[1])["id"] == 1
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(on_a, json=initialized)).status_code == 202
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 2, "b": 3}},
        }
        posted = await http.post(on_b, json=call, headers={"traceparent": POST_PARENT})  # to B: routed to A
        assert posted.status_code == 202, posted.text
        reply = json.loads((await asyncio.wait_for(_next_data(lines), 20))[1])
        assert reply["id"] == 2 and reply["result"]["content"][0]["text"] == "5", reply
    (served,) = [s for s in otel_a.spans() if s.name == "tools/call add"]
    assert served.context.trace_id == int(TRACE_ID, 16)  # the trace the POST's header named, on A
    assert served.parent is not None and served.parent.span_id == int("3c3d3e3f40414243", 16)
    assert served.attributes is not None and served.attributes["client.address"] == "127.0.0.1"
    assert not [s for s in otel_b.spans() if s.name == "tools/call add"]  # checked on B, served on A only


def test_routed_messages_with_and_without_trace_context_decode() -> None:
    trace = {"traceparent": CANCEL_PARENT}
    assert decode_routed(encode_routed(RoutedCancel("s", {"requestId": 1}, trace))) == RoutedCancel(
        "s", {"requestId": 1}, trace
    )
    old = {"type": "answer", "session": "s", "message": "{}"}  # what a worker of an older version sends
    assert decode_routed(old) == RoutedAnswer("s", "{}", None)
    assert encode_routed(RoutedAnswer("s", "{}")) == old  # and what it is sent without telemetry
    mangled = {**old, "trace": {"traceparent": 5, 3: "x"}}
    assert decode_routed(mangled) == RoutedAnswer("s", "{}", None)
    origin = HttpOrigin("127.0.0.1", 50123, "1.1", {"traceparent": POST_PARENT})
    assert decode_routed(encode_routed(RoutedPost("s", "{}", origin))) == RoutedPost("s", "{}", origin)
    old_post = {"type": "post", "session": "s", "message": "{}"}
    assert decode_routed(old_post) == RoutedPost("s", "{}", None)
    assert encode_routed(RoutedPost("s", "{}")) == old_post
    for bad in ({"client_address": 1, "client_port": 1, "http_version": "1.1", "headers": {}}, {"headers": []}, "x"):
        assert decode_routed({**old_post, "origin": bad}) == RoutedPost("s", "{}", None)
    odd_headers = {"client_address": None, "client_port": None, "http_version": "2", "headers": {"a": 1, "b": "c"}}
    assert decode_routed({**old_post, "origin": odd_headers}) == RoutedPost(
        "s", "{}", HttpOrigin(None, None, "2", {"b": "c"})
    )
