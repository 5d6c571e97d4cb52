"""The official Python SDK 2.3 client, with OpenTelemetry of its own, calling our server over a
real socket: its ``MCP send tools/call add`` CLIENT span is the parent of our SERVER span (its
dispatcher injects ``traceparent`` into ``_meta``), so the call is one trace across both, in both
eras (a 2025-11-25 session and 2026-07-28 requests).

The SDK client reads the global tracer provider: it runs in a subprocess that installs one and
prints its spans, so this process's globals stay untouched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from server_otel import Otel

from mcp_sse_server import McpServer
from mcp_sse_server.transport.http import McpHttpServer

pytest.importorskip("mcp")

CLIENT = textwrap.dedent(
    """
    import asyncio, json, sys, warnings
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    from mcp import Client


    async def main() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with Client(sys.argv[1], mode=sys.argv[2]) as client:
                await client.call_tool("add", {"a": 1, "b": 2})


    asyncio.run(main())
    print(json.dumps([
        {"name": s.name, "trace_id": s.context.trace_id, "span_id": s.context.span_id}
        for s in exporter.get_finished_spans()
    ]))
    """
)


@pytest.fixture
async def served(otel: Otel) -> AsyncIterator[McpHttpServer]:
    server = McpServer("traced", telemetry=otel.telemetry())

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    http = await McpHttpServer.bind(server, port=0)
    try:
        yield http
    finally:
        await http.close()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_official_client_and_our_server_make_one_trace(
    served: McpHttpServer, otel: Otel, mode: str, tmp_path: Path
) -> None:
    import asyncio

    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        served.endpoint,
        mode,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    spans = json.loads(out.decode().strip().splitlines()[-1])
    sends = [span for span in spans if "tools/call" in span["name"]]
    assert len(sends) == 1, spans
    (ours,) = [span for span in otel.server_spans() if span.name == "tools/call add"]
    assert ours.context.trace_id == sends[0]["trace_id"]
    assert ours.parent is not None and ours.parent.span_id == sends[0]["span_id"]
