"""What a proxy costs in process: CPU per `tools/call add` through `proxy(server)` against the
same call made to `server` directly, both with `InMemoryClient`.

    python bench/proxy.py [--calls 3000] [--rounds 5] [--mode session|2026-07-28]

One process, one event loop; the backend is an in-process `McpServer` with one tool, `add`,
registered as a `Tool` with a plain handler (so the row measures the request path, not typed
argument conversion). `direct` is `InMemoryClient(server)`; `proxied` is
`InMemoryClient(proxy(server))`, whose backend connection is itself an `InMemoryClient`: the
proxied path is the direct path plus one more client-server trip inside the front's handler.
Each round times `--calls` calls of each way in turn (after a warm-up) with
`time.process_time_ns` (this process's CPU: everything runs here), so drift on a shared machine
spreads over both; each row is the median of its rounds. The bound (issue 40): proxied at most
2.2x direct. Prints a Markdown table (bench/README.md, "Proxy") and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

WARMUP = 300
BOUND = 2.2


def backend() -> Any:
    from mcp_sse_server import CallToolResult, McpServer, Tool

    server = McpServer("bench", "1.0.0")

    async def add(arguments: dict[str, Any], context: Any) -> CallToolResult:
        return CallToolResult.text(str(arguments["a"] + arguments["b"]))

    schema = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}
    server.add_tool(Tool("add", schema, add, run_in_thread=False))
    return server


async def cpu_per_call(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    """Microseconds of this process's CPU per call, over ``calls`` calls."""
    started = time.process_time_ns()
    for _ in range(calls):
        await call()
    return (time.process_time_ns() - started) / calls / 1000


async def main(calls: int, rounds: int, mode: str) -> int:
    from mcp_sse_server.client import InMemoryClient
    from mcp_sse_server.proxy import proxy

    server = backend()
    arguments = {"a": 2, "b": 3}
    samples: dict[str, list[float]] = {"direct": [], "proxied": []}
    async with InMemoryClient(server, mode=mode) as direct, InMemoryClient(proxy(server), mode=mode) as proxied:
        ways = {"direct": direct, "proxied": proxied}
        for name, client in ways.items():
            result = await client.call_tool("add", arguments, raw=True)
            if result.get("isError") or result["content"][0]["text"] != "5":
                print(f"{name}: the call failed: {result}", file=sys.stderr)
                return 2
            for _ in range(WARMUP):
                await client.call_tool("add", arguments, raw=True)
        for _ in range(rounds):
            for name, client in ways.items():

                def call(client: Any = client) -> Awaitable[Any]:
                    return client.call_tool("add", arguments, raw=True)

                samples[name].append(await cpu_per_call(call, calls))
    direct_us = statistics.median(samples["direct"])
    proxied_us = statistics.median(samples["proxied"])
    ratio = proxied_us / direct_us
    print(f"| way ({mode}) | CPU µs per `tools/call` | rounds | vs direct |")
    print("|---|---:|---|---:|")
    for name, median in (("direct", direct_us), ("proxied", proxied_us)):
        spread = ", ".join(f"{sample:.0f}" for sample in samples[name])
        print(f"| {name} | {median:.1f} | {spread} | {median / direct_us:.3f}x |")
    print(f"\nproxied / direct = {ratio:.3f}x (bound {BOUND}x): {'held' if ratio <= BOUND else 'MISSED'}")
    return 0 if ratio <= BOUND else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--mode", default="session", choices=("session", "2026-07-28"))
    options = parser.parse_args()
    sys.exit(asyncio.run(main(options.calls, options.rounds, options.mode)))
