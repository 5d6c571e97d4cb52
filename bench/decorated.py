"""The cost of writing a tool the Python way: `@server.tool` against the same tool as `Tool(...)`.

    python bench/decorated.py [--seconds 5] [--calls 20000] [--rounds 2]

In process (`InMemoryClient.call_tool`, median µs per call), each pair serving the same wire result:

- `add -> int`: `async def add(a: int, b: int) -> int` against a `Tool` whose handler returns the
  same `structuredContent` {"result": a + b} and text block, with the same output schema;
- `add -> str`: a plain-text answer both ways;
- `model`: a pydantic-model parameter against a `Tool` handler reading the same dict;
- `sync def`: a plain `def` (run in a worker thread, the engine's rule) against a sync `Tool` handler.

Over HTTP: bench/ours.py's `add` (the one the peers serve) against `ours.py --decorated` (the same
tool as a typed function), each pinned to CPU 0 with wrk on CPU 1, 16 connections on one session;
the figure is server CPU-microseconds per request. The rounds alternate the two servers so drift
on a shared machine falls on both. Prints Markdown rows with the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from loadgen import cpu_seconds, wrk
from mcp_http import connect, open_session
from procs import Server, free_port
from pydantic import BaseModel

BENCH = Path(__file__).resolve().parent


class Point(BaseModel):
    x: float
    y: float


def servers() -> dict[str, tuple[Any, Any, str, dict[str, Any]]]:
    """name -> (the Tool-form server, the decorated server, tool name, arguments)."""
    from mcp_sse_server import CallToolResult, McpServer, RequestContext, Tool

    plain, typed = McpServer("tool-form"), McpServer("decorated")
    integer = {"type": "integer"}
    ints = {"type": "object", "properties": {"a": integer, "b": integer}, "required": ["a", "b"]}
    wrapped = {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}

    async def add_int(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        total = arguments["a"] + arguments["b"]
        return CallToolResult.structured({"result": total}, text=str(total))

    async def add_text(arguments: dict[str, Any], context: RequestContext) -> str:
        return str(arguments["a"] + arguments["b"])

    point = Point.model_json_schema()
    point.pop("title", None)
    models = {"type": "object", "properties": {"p": point}, "required": ["p"]}

    async def norm(arguments: dict[str, Any], context: RequestContext) -> str:
        p = arguments["p"]
        return str(abs(p["x"]) + abs(p["y"]))

    def add_sync(arguments: dict[str, Any], context: RequestContext) -> str:
        return str(arguments["a"] + arguments["b"])

    plain.add_tool(Tool("add_int", ints, add_int, output_schema=wrapped))
    plain.add_tool(Tool("add_text", ints, add_text))
    plain.add_tool(Tool("norm", models, norm))
    plain.add_tool(Tool("add_sync", ints, add_sync))

    @typed.tool
    async def add_int_typed(a: int, b: int) -> int:
        return a + b

    @typed.tool
    async def add_text_typed(a: int, b: int) -> str:
        return str(a + b)

    @typed.tool
    async def norm_typed(p: Point) -> str:
        return str(abs(p.x) + abs(p.y))

    @typed.tool
    def add_sync_typed(a: int, b: int) -> str:
        return str(a + b)

    ab = {"a": 2, "b": 3}
    return {
        "add -> int": (plain, typed, "add_int", ab),
        "add -> str": (plain, typed, "add_text", ab),
        "model": (plain, typed, "norm", {"p": {"x": 1.5, "y": -2}}),
        "sync def": (plain, typed, "add_sync", ab),
    }


async def median_us(server: Any, tool: str, arguments: dict[str, Any], calls: int) -> float:
    from mcp_sse_server.client import InMemoryClient

    async with InMemoryClient(server) as client:
        call: Callable[[], Awaitable[Any]] = lambda: client.call_tool(tool, arguments)  # noqa: E731
        first = await call()
        if first.is_error:
            raise RuntimeError(f"{tool} answered an error: {first}")
        for _ in range(min(calls // 10, 2000)):
            await call()
        samples = []
        for _ in range(calls):
            started = time.perf_counter_ns()
            await call()
            samples.append(time.perf_counter_ns() - started)
    return statistics.median(samples) / 1000


async def in_process(calls: int, rounds: int) -> list[tuple[str, float, float]]:
    rows = []
    for name, (plain, typed, tool, arguments) in servers().items():
        a: list[float] = []
        b: list[float] = []
        for _ in range(rounds):
            a.append(await median_us(plain, tool, arguments, calls))
            b.append(await median_us(typed, f"{tool}_typed", arguments, calls))
        rows.append((name, min(a), min(b)))
    return rows


def over_http(seconds: float, rounds: int) -> tuple[float, float]:
    """Server CPU µs per request: (Tool form, decorated), the best of `rounds` alternating points."""
    best: dict[bool, float] = {}
    with tempfile.TemporaryDirectory() as logs:
        for _ in range(rounds):
            for decorated in (False, True):
                port = free_port()
                argv = [sys.executable, str(BENCH / "ours.py"), str(port), *(["--decorated"] if decorated else [])]
                with Server("decorated" if decorated else "tool-form", argv, port, log_dir=Path(logs)) as server:
                    conn, sid = initialize_session(server.url)
                    before = cpu_seconds(server.pid)
                    load = wrk(server.url, connections=16, seconds=seconds, session=sid)
                    used = cpu_seconds(server.pid) - before
                    conn.close()
                if not load.ok:
                    raise RuntimeError(f"wrk: {load.invalid}")
                per = used / load.requests * 1e6
                best[decorated] = min(best.get(decorated, per), per)
    return best[False], best[True]


def initialize_session(url: str) -> tuple[Any, str]:
    conn, path = connect(url)
    return conn, open_session(conn, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="per HTTP point")
    parser.add_argument("--calls", type=int, default=20000, help="per in-process point")
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args()
    rows = asyncio.run(in_process(options.calls, options.rounds))
    print("| in process (InMemoryClient) | Tool(...) µs | @server.tool µs | ratio |")
    print("|---|---|---|---|")
    for name, a, b in rows:
        print(f"| {name} | {a:.2f} | {b:.2f} | {b / a:.2f}x |")
    a, b = over_http(options.seconds, options.rounds)
    print()
    print("| over HTTP, bench/ours.py add | Tool(...) server CPU µs/request | @server.tool | ratio |")
    print("|---|---|---|---|")
    print(f"| tools/call, 16 connections, one session | {a:.1f} | {b:.1f} | {b / a:.2f}x |")


if __name__ == "__main__":
    main()
