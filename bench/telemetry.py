"""What server telemetry (issue 39) costs a `tools/call add`, in process and over HTTP in process:

    PYTHONPATH=src python bench/telemetry.py [CALLS=3000]
    PYTHONPATH=src python bench/telemetry.py opcodes

One JSON line per transport and row: CPU microseconds per call (`time.process_time` over the
timed calls, client and server in this one process) and the median and p99 microseconds of a
call, after a warm-up:

- `off`: no telemetry (the default; the server runs the plain `Connection`);
- `noop`: `McpServer(telemetry=Telemetry())` and no SDK: the API's default (proxy, no-op)
  providers, what an application with the otel extra and no SDK configured gets;
- `sdk-off`: the SDK with the ALWAYS_OFF sampler (spans not recorded), metrics to an in-memory reader;
- `sdk`: the SDK recording every span into a `BatchSpanProcessor` whose exporter drops them,
  metrics into an `InMemoryMetricReader`;
- `otlp`: the SDK exporting for real: `BatchSpanProcessor(OTLPSpanExporter())` and a periodic
  OTLP metric reader (every second) posting to a local receiver (opentelemetry-test-utils'
  `OtlpProtoTestServer`, in a process of its own so that its CPU is not counted; the
  exporters' threads are this process's, and counted).

Transports: `memory` (InMemoryClient, 2026-07-28 requests: the server's dispatch in the caller's
task) and `asgi` (a 2026-07-28 POST through the whole ASGI app, driven in process as
bench/opcodes.py does: no socket). The client is never traced, so every difference is the
server's. `python bench/opcodes.py session|stateless` holds the `off` row to its opcode count.

`opcodes`: Python opcodes per call of the `off` and `noop` rows on both transports (`sys.settrace`
over 300 calls after the warm-up, this file's frames left out): a count the machine's load does
not move, for the "API installed, no SDK" bound when the timed rows are too noisy.
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType
from typing import Any

WARMUP = 300
COUNTED = 300
HERE = str(Path(__file__).resolve())
ROWS = ("off", "noop", "sdk-off", "sdk", "otlp")


RECEIVER = """
import sys, time
from opentelemetry.test._otlp_test_server import OtlpProtoTestServer
server = OtlpProtoTestServer().start()
print(server.port, flush=True)
while True:  # (what it received is dropped, so that its memory stays flat)
    server.drain_spans(); server.drain_metrics(); time.sleep(0.5)
"""
_receiver: list[Any] = []


def receiver_endpoint() -> str:
    """The local OTLP/HTTP receiver of the `otlp` row (started once, ended with this process)."""
    if not _receiver:
        import atexit
        import subprocess

        process = subprocess.Popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE, text=True)
        atexit.register(process.kill)
        assert process.stdout is not None
        _receiver.append(f"http://127.0.0.1:{int(process.stdout.readline())}")
    return str(_receiver[0])


def otlp_providers() -> dict[str, Any]:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    endpoint = receiver_endpoint()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=f"{endpoint}/v1/metrics"), export_interval_millis=1000
    )
    return {"tracer_provider": tracer_provider, "meter_provider": MeterProvider(metric_readers=[reader])}


_made: list[Any] = []  # the providers of the row running, shut down when it ends (their threads stop)


def shut_down() -> None:
    while _made:
        _made.pop().shutdown()


def providers(row: str) -> dict[str, Any]:
    """The ``Telemetry`` keywords of ``row`` (none: the global, no-op providers)."""
    made = _providers(row)
    _made.extend(made.values())
    return made


def _providers(row: str) -> dict[str, Any]:
    if row in ("off", "noop"):
        return {}
    if row == "otlp":
        return otlp_providers()
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON

    class Dropped(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider(sampler=ALWAYS_OFF if row == "sdk-off" else ALWAYS_ON)
    tracer_provider.add_span_processor(BatchSpanProcessor(Dropped()))
    return {
        "tracer_provider": tracer_provider,
        "meter_provider": MeterProvider(metric_readers=[InMemoryMetricReader()]),
    }


def build(row: str) -> Any:
    from mcp_sse_server import McpServer

    telemetry = None
    if row != "off":
        from mcp_sse_server.telemetry import Telemetry

        telemetry = Telemetry(**providers(row))
    server = McpServer("bench", telemetry=telemetry)

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    return server


async def count(call: Callable[[], Awaitable[None]], calls: int) -> dict[str, float]:
    """Opcodes per call (the `opcodes` mode; ``calls`` is ignored: COUNTED)."""
    for _ in range(WARMUP):
        await call()
    counts = [0]

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == HERE:
            return None  # the driver's frames are not the server's work
        frame.f_trace_opcodes = True
        if event == "opcode":
            counts[0] += 1
        return tracer

    sys.settrace(tracer)
    try:
        for _ in range(COUNTED):
            await call()
    finally:
        sys.settrace(None)
    return {"opcodes_per_call": round(counts[0] / COUNTED)}


async def measure(call: Callable[[], Awaitable[None]], calls: int) -> dict[str, float]:
    if MODE == "opcodes":
        return await count(call, calls)
    for _ in range(WARMUP):
        await call()
    gc.collect()
    samples: list[int] = []
    cpu = time.process_time()
    for _ in range(calls):
        start = time.perf_counter_ns()
        await call()
        samples.append(time.perf_counter_ns() - start)
    cpu = time.process_time() - cpu
    ordered = sorted(samples)
    return {
        "cpu_us": round(cpu / calls * 1e6, 2),
        "median_us": round(statistics.median(ordered) / 1000, 2),
        "p99_us": round(ordered[int(len(ordered) * 0.99) - 1] / 1000, 2),
    }


async def memory(row: str, calls: int) -> dict[str, float]:
    from mcp_sse_server import InMemoryClient

    async with InMemoryClient(build(row)) as client:

        async def call() -> None:
            await client.call_tool("add", {"a": 2, "b": 3})

        return await measure(call, calls)


async def asgi(row: str, calls: int) -> dict[str, float]:
    from mcp_sse_server.transport.http.app import McpHttpApp

    app = McpHttpApp(build(row))
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": meta},
        }
    ).encode()
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
        (b"mcp-protocol-version", b"2026-07-28"),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", b"add"),
        (b"content-length", str(len(body)).encode()),
    ]
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "POST",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "scheme": "http",
        "root_path": "",
    }
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    async def call() -> None:
        await app(dict(scope), receive, send)
        if status.pop() != 200:
            raise RuntimeError("the call failed")

    await app.start()
    try:
        return await measure(call, calls)
    finally:
        await app.shutdown()


MODE = "opcodes" if sys.argv[1:2] == ["opcodes"] else "time"


def main() -> None:
    calls = int(sys.argv[1]) if MODE == "time" and len(sys.argv) > 1 else 3000
    key = "cpu_us" if MODE == "time" else "opcodes_per_call"
    for transport, run in (("memory", memory), ("asgi", asgi)):
        base = None
        for row in ROWS if MODE == "time" else ROWS[:2]:
            result = asyncio.run(run(row, calls))
            shut_down()  # (an exporter thread left running would be counted in the next rows)
            base = base or result[key]
            print(
                json.dumps({"transport": transport, "row": row, **result, "vs_off": round(result[key] / base, 3)}),
                flush=True,
            )


if __name__ == "__main__":
    main()
