"""stdin ending right after a request: the request read before it is answered (up to EOF_GRACE),
then the session closes; one that cannot finish in time does not hold the server."""

from __future__ import annotations

import asyncio
import io
import json
import time
from typing import Any

from mcp_sse_server import CallToolResult, McpServer, Tool
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.transport.stdio import EOF_GRACE, StdioServerTransport

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def server() -> McpServer:
    built = McpServer("eof", "1.0.0")

    async def slow(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        await asyncio.sleep(arguments["s"])
        return CallToolResult.text("slept")

    schema = {"type": "object", "properties": {"s": {"type": "number"}}, "required": ["s"]}
    built.add_tool(Tool("slow", schema, slow))
    return built


async def served(seconds: float) -> tuple[list[dict[str, Any]], float]:
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {"s": seconds}},
        },
    ]
    stdin = io.BytesIO(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    stdout = io.BytesIO()
    transport = StdioServerTransport(stdin, stdout)
    await server().connect(transport)
    started = time.monotonic()
    await asyncio.wait_for(transport.run(), EOF_GRACE + 10)
    return [json.loads(line) for line in stdout.getvalue().splitlines()], time.monotonic() - started


async def test_a_request_read_before_the_end_of_stdin_is_answered() -> None:
    answers, _ = await served(0.2)  # still running when stdin ends
    assert [answer["id"] for answer in answers] == [1, 2]
    assert answers[1]["result"]["content"][0]["text"] == "slept"


async def test_one_that_cannot_finish_in_the_grace_does_not_hold_the_server() -> None:
    answers, took = await served(EOF_GRACE + 30)
    assert [answer["id"] for answer in answers] == [1]
    assert took < EOF_GRACE + 5
