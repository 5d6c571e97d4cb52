"""Trace context across workers: two ``McpHttpServer`` workers in this process, each with its own
tracer provider (standing for two processes' SDKs), sharing a real redis-server. A
``notifications/cancelled`` that reaches worker B for a request worker A runs is a SERVER span on
B, whose context travels in the routed message: A's span of the cancelled request, in the same
trace, gets a ``cancel (routed)`` event and a link to B's span. Routed messages without the new
``trace`` field (older workers) still decode."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

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

from mcp_sse_server.stores.redis_routing import RoutedAnswer, RoutedCancel, decode_routed, encode_routed
from mcp_sse_server.stores.redis_setup import RedisBackend

TRACE_ID = "5b8aa5a2d2c872e8321cf37308d69df2"
CALL_PARENT = f"00-{TRACE_ID}-051581bf3cb55c13-01"
CANCEL_PARENT = f"00-{TRACE_ID}-0f8a4e4e6fd0a3b1-01"
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
