"""What composition costs: CPU per `tools/call` in process, direct vs through a mount (one and three
levels deep) vs a transformed tool (issue 40: a mounted call at most 1.1x a direct one).

    cd bench && PYTHONPATH=../src ../.venv/bin/python composition.py [--calls 2000] [--rounds 7]

Each configuration is an `McpHttpApp` called in process through opcodes.py's minimal ASGI driver
(no socket, no uvicorn: their work is the same for every configuration), at 2025-06-18 in a
session and at 2026-07-28 stateless. The tool is `add` (`a + b`, async, a text result):
- `direct`: registered on the served server;
- `mounted`: registered on a child mounted under `m` (called `m_add`);
- `mounted-3`: three mounts deep (`c_b_a_add`);
- `transformed`: `transform(add, name="plus", args={"a": Arg(name="x"), "b": Arg(default=2)})`.
A round calls every configuration `--calls` times after a warm-up, in turn, so drift on the
shared machine spreads over all of them; a row is the median over the rounds of
`time.process_time()` per call. Prints a Markdown table (bench/README.md, "Composition") and
the bound: mounted at most 1.10x direct in both modes (exit status 1 when missed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any

from opcodes import ACCEPT, HOST, META, call
from ours import app_arguments

CONFIGS = ("direct", "mounted", "mounted-3", "transformed")
CALLED = {"direct": "add", "mounted": "m_add", "mounted-3": "c_b_a_add", "transformed": "plus"}
ARGUMENTS = {"transformed": {"x": 1}}
BOUND = 1.10


def build(kind: str) -> Any:
    from mcp_sse_server import CallToolResult, McpServer, Tool
    from mcp_sse_server.engine.transform import Arg, transform

    async def add(arguments: dict[str, Any], context: Any) -> CallToolResult:
        return CallToolResult.text(str(arguments["a"] + arguments["b"]))

    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    tool = Tool("add", schema, add)
    served = McpServer("bench-composition", "1.0.0")
    if kind == "direct":
        served.add_tool(tool)
    elif kind == "transformed":
        served.add_tool(transform(tool, name="plus", args={"a": Arg(name="x"), "b": Arg(default=2)}))
    elif kind == "mounted":
        child = McpServer("child")
        child.add_tool(tool)
        served.mount(child, namespace="m")
    else:
        leaf = McpServer("a")
        leaf.add_tool(tool)
        for name in ("b", "c"):
            holder = McpServer(name)
            holder.mount(leaf, namespace=leaf.name)
            leaf = holder
        served.mount(leaf, namespace="c")
        CALLED[kind] = "c_b_a_add"
    from mcp_sse_server.transport.http.app import McpHttpApp

    return McpHttpApp(served, **app_arguments(McpHttpApp, {"path": "/mcp"}))


async def prepare(app: Any, kind: str, mode: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    params = {"name": CALLED[kind], "arguments": ARGUMENTS.get(kind, {"a": 1, "b": 2})}
    if mode == "stateless":
        name = CALLED[kind].encode()
        routing = [(b"mcp-protocol-version", b"2026-07-28"), (b"mcp-method", b"tools/call"), (b"mcp-name", name)]
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**params, "_meta": META}}
        return HOST + ACCEPT + routing, json.dumps(body).encode()
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    opened = await call(
        app, HOST + ACCEPT, json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}).encode()
    )
    session = [
        (b"mcp-session-id", dict(opened[0]["headers"])[b"mcp-session-id"]),
        (b"mcp-protocol-version", b"2025-06-18"),
    ]
    await call(app, HOST + ACCEPT + session, b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return HOST + ACCEPT + session, json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    ).encode()


async def measure(calls: int, rounds: int) -> dict[tuple[str, str], list[float]]:
    points: dict[tuple[str, str], tuple[Any, list[tuple[bytes, bytes]], bytes]] = {}
    for mode in ("session", "stateless"):
        for kind in CONFIGS:
            app = build(kind)
            headers, body = await prepare(app, kind, mode)
            answer = await call(app, headers, body)
            if answer[0]["status"] != 200 or b'"3"' not in answer[-1]["body"]:
                raise SystemExit(f"{kind} {mode}: the call failed: {answer}")
            for _ in range(200):
                await call(app, headers, body)
            points[(mode, kind)] = (app, headers, body)
    samples: dict[tuple[str, str], list[float]] = {key: [] for key in points}
    for _ in range(rounds):
        for key, (app, headers, body) in points.items():
            start = time.process_time()
            for _ in range(calls):
                await call(app, headers, body)
            samples[key].append((time.process_time() - start) / calls * 1e6)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    samples = asyncio.run(measure(args.calls, args.rounds))
    median = {key: statistics.median(values) for key, values in samples.items()}
    print("| mode | configuration | CPU µs per `tools/call` (median) | rounds | vs direct |")
    print("|---|---|---:|---|---:|")
    for (mode, kind), value in median.items():
        spread = ", ".join(f"{v:.1f}" for v in samples[(mode, kind)])
        print(f"| {mode} | {kind} | {value:.1f} | {spread} | {value / median[(mode, 'direct')]:.3f}x |")
    failed = 0
    for mode in ("session", "stateless"):
        ratio = median[(mode, "mounted")] / median[(mode, "direct")]
        failed += ratio > BOUND
        print(f"{mode}: mounted / direct {ratio:.3f}x (bound {BOUND:.2f}x) {'ok' if ratio <= BOUND else 'MISSED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
