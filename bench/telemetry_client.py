"""What client telemetry (issue 39) costs an in-memory `call_tool("add")`, in both eras:

    PYTHONPATH=src python bench/telemetry_client.py opcodes [session|stateless]
    PYTHONPATH=bench/.baseline/<sha>/src python bench/telemetry_client.py opcodes ...   (before it)
    PYTHONPATH=src python bench/telemetry_client.py time [CALLS=3000]

`opcodes`: Python opcodes one call executes with telemetry off (`sys.settrace` over 300 calls
after a warm-up, the driver's frames left out): a count that does not move with the machine's
load, to hold "off costs one attribute test" against the commit before. On a tree that has client
telemetry it also counts `noop` (switched on, the API's no-op providers: no SDK configured).

`time`: one JSON line per era and row, median and p99 microseconds per call and CPU
microseconds per call (`time.process_time`):

- `off`: no telemetry (the default);
- `noop`: `telemetry=True` and no SDK: the API's default (proxy, no-op) providers;
- `sdk-off`: the SDK with the ALWAYS_OFF sampler (spans not recorded), metrics to an in-memory reader;
- `sdk`: the SDK recording every span into a `BatchSpanProcessor` whose exporter drops them, and
  metrics into an `InMemoryMetricReader`.

The server is in the same process and untraced, so every difference is the client's.
"""

from __future__ import annotations

import asyncio
import collections
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

HERE = str(Path(__file__).resolve())
WARMUP = 300
COUNTED = 300
ARGS = {"a": 2, "b": 3}


def make_server() -> Any:
    from mcp_sse_server import McpServer

    server = McpServer("bench")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Adds two numbers."""
        return a + b

    return server


@dataclass
class Settings:
    """``McpClient(telemetry=...)`` with this run's providers (None: the global, no-op ones)."""

    tracer_provider: Any = None
    meter_provider: Any = None


def telemetry(row: str) -> Any:
    """The ``telemetry=`` of a row (None: off)."""
    if row == "off":
        return None
    if row == "noop":
        return True
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON

    class Dropped(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider(sampler=ALWAYS_OFF if row == "sdk-off" else ALWAYS_ON)
    tracer_provider.add_span_processor(BatchSpanProcessor(Dropped()))
    return Settings(tracer_provider, MeterProvider(metric_readers=[InMemoryMetricReader()]))


def client_for(era: str, row: str) -> Any:
    from mcp_sse_server.client import InMemoryClient

    mode = "session" if era == "session" else "auto"
    options: dict[str, Any] = {"mode": mode}
    if row != "off":
        options["telemetry"] = telemetry(row)
    return InMemoryClient(make_server(), **options)


async def count_opcodes(era: str, row: str) -> int:
    counts: collections.Counter[str] = collections.Counter()

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == HERE:
            return None  # the driver's frames are not the client's work
        frame.f_trace_opcodes = True
        if event == "opcode":
            counts[frame.f_code.co_name] += 1
        return tracer

    async with client_for(era, row) as client:
        for _ in range(WARMUP):
            await client.call_tool("add", ARGS)
        sys.settrace(tracer)
        try:
            for _ in range(COUNTED):
                await client.call_tool("add", ARGS)
        finally:
            sys.settrace(None)
    return round(sum(counts.values()) / COUNTED)


async def timed(era: str, row: str, calls: int) -> dict[str, Any]:
    async with client_for(era, row) as client:
        for _ in range(WARMUP):
            await client.call_tool("add", ARGS)
        samples = []
        cpu = time.process_time()
        for _ in range(calls):
            started = time.perf_counter_ns()
            await client.call_tool("add", ARGS)
            samples.append(time.perf_counter_ns() - started)
        cpu = time.process_time() - cpu
    samples.sort()
    return {
        "era": era,
        "row": row,
        "calls": calls,
        "median_us": round(statistics.median(samples) / 1000, 2),
        "p99_us": round(samples[int(len(samples) * 0.99) - 1] / 1000, 2),
        "cpu_us_per_call": round(cpu / calls * 1e6, 2),
    }


def has_client_telemetry() -> bool:
    """True when the client takes ``telemetry=`` (not on a tree from before it)."""
    import inspect

    from mcp_sse_server.client.core import ClientCore

    return "telemetry" in inspect.signature(ClientCore.__init__).parameters


def main(argv: list[str]) -> None:
    what = argv[0] if argv else "time"
    if what == "opcodes":
        eras = argv[1:] or ["session", "stateless"]
        rows = ["off", "noop"] if has_client_telemetry() else ["off"]
        for era in eras:
            for row in rows:
                per_call = asyncio.run(count_opcodes(era, row))
                print(json.dumps({"era": era, "row": row, "opcodes_per_call": per_call}), flush=True)
        return
    if what != "time":
        sys.exit(f"usage: {sys.argv[0]} opcodes [session|stateless] | time [CALLS]")
    calls = int(argv[1]) if len(argv) > 1 else 3000
    for era in ("session", "stateless"):
        for row in ("off", "noop", "sdk-off", "sdk"):
            print(json.dumps(asyncio.run(timed(era, row, calls))), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
