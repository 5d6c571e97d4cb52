"""In-process `tools/call add` round trip through this project, two ways:

- `memory-transport`: raw JSON-RPC objects through `MemoryTransport.pair()`
  into the core (no client engine): send a request, await the response;
- `inmemory-client`: `mcp_sse_server.client.InMemoryClient.call_tool`.

    python bench/inmemory.py [CALLS=2000]

Prints one JSON line per way: {"name", "calls", "median_us", "p99_us"}, or
{"name", "skipped": why} when that part of the package does not exist yet,
or {"name", "invalid": why} when a call answered with an error. Plain
asyncio loop, as in bench/peers/peer_inmemory_latency.py.

Each way builds its own server, so this runs against older checkouts too
(run.py's --baseline), where `McpServer.connect` may be called only once
per server; the current one serves any number of clients.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ours import make_factory

WARMUP = 200
ARGS = {"name": "add", "arguments": {"a": 2, "b": 3}}
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


class CallFailed(Exception):
    """A call answered with an error or a tool error."""


def summary(name: str, samples_ns: list[int]) -> dict[str, Any]:
    ordered = sorted(samples_ns)
    return {"name": name, "calls": len(ordered), "median_us": round(statistics.median(ordered) / 1000, 2),
            "p99_us": round(ordered[int(len(ordered) * 0.99) - 1] / 1000, 2)}


async def timed(call: Callable[[], Awaitable[None]], calls: int) -> list[int]:
    for _ in range(WARMUP):
        await call()
    samples = []
    for _ in range(calls):
        t = time.perf_counter_ns()
        await call()
        samples.append(time.perf_counter_ns() - t)
    return samples


async def memory_transport(calls: int) -> dict[str, Any]:
    from mcp_sse_server import JsonRpcNotification, JsonRpcRequest, JsonRpcResponse
    from mcp_sse_server.transport.memory import MemoryTransport

    server = make_factory()()
    server_side, client_side = MemoryTransport.pair()
    await server.connect(server_side)
    replies = client_side.messages.__aiter__()
    await client_side.send(JsonRpcRequest(0, "initialize", INIT))
    await replies.__anext__()
    await client_side.send(JsonRpcNotification("notifications/initialized"))
    next_id = 0

    async def call() -> None:
        nonlocal next_id
        next_id += 1
        await client_side.send(JsonRpcRequest(next_id, "tools/call", ARGS))
        reply = await replies.__anext__()
        if not isinstance(reply, JsonRpcResponse) or reply.result.get("isError"):
            raise CallFailed(repr(reply)[:200])

    try:
        return summary("memory-transport", await timed(call, calls))
    finally:
        await server.close()


async def inmemory_client(calls: int) -> dict[str, Any]:
    from mcp_sse_server.client import InMemoryClient

    client = InMemoryClient(make_factory()())
    # Whichever way it opens: an async context manager, or initialize().
    if hasattr(client, "__aenter__"):
        await client.__aenter__()
    elif hasattr(client, "initialize"):
        await client.initialize()

    async def call() -> None:
        result = await client.call_tool("add", {"a": 2, "b": 3})
        is_error = result.get("isError") if isinstance(result, dict) else getattr(result, "is_error", False)
        if is_error:
            raise CallFailed(repr(result)[:200])

    try:
        return summary("inmemory-client", await timed(call, calls))
    finally:
        if hasattr(client, "__aexit__"):
            await client.__aexit__(None, None, None)
        elif hasattr(client, "close"):
            await client.close()


async def main(calls: int) -> None:
    for name, way in (("memory-transport", memory_transport), ("inmemory-client", inmemory_client)):
        try:
            line = await asyncio.wait_for(way(calls), timeout=120)
        except ImportError as exc:
            line = {"name": name, "skipped": f"{type(exc).__name__}: {exc}"}
        except (CallFailed, Exception) as exc:
            line = {"name": name, "invalid": f"{type(exc).__name__}: {exc}"[:300]}
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
