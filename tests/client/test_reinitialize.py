"""The seed's own usage: ``client = await initialize_mcp_server(config)`` then
``await client.initialize()`` again, and clients (pydantic-ai through fastmcp)
that re-send ``initialize`` on a live stdio process."""

from __future__ import annotations

import asyncio
import json
import sys

from fixtures.peers import MATH_STDIO, PYTHON, WAIT, python_env
from mcp_sse_server.client import StdioClient, initialize_mcp_server


async def test_initializing_an_initialized_in_memory_client_again_is_harmless() -> None:
    client = await initialize_mcp_server({"name": "math", "type": "inmemory", "command": "math"})
    try:
        first = client.server_info
        result = await client.initialize()
        assert result["serverInfo"] == first
        assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
    finally:
        await client.close()


async def test_initializing_an_initialized_stdio_client_again_keeps_the_process() -> None:
    client = StdioClient(PYTHON, [MATH_STDIO], env=python_env())
    await client.initialize()
    try:
        process = client.transport.process
        await client.initialize()
        assert client.transport.process is process and process is not None and process.returncode is None
        assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}
    finally:
        await client.close()


async def test_a_stdio_server_accepts_a_repeated_initialize() -> None:
    # What pydantic-ai does on its second Agent.run: the same process, initialize again.
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        MATH_STDIO,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=python_env(),
    )
    assert process.stdin is not None and process.stdout is not None

    async def ask(message: dict[str, object]) -> dict[str, object]:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(message).encode() + b"\n")
        await process.stdin.drain()
        if "id" not in message:
            return {}
        reply: dict[str, object] = json.loads(await asyncio.wait_for(process.stdout.readline(), WAIT))
        return reply

    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "agent", "version": "1"}}
    try:
        for run in range(2):
            reply = await ask({"jsonrpc": "2.0", "id": f"init-{run}", "method": "initialize", "params": init})
            assert "result" in reply, reply
            await ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
            call = {"name": "add", "arguments": {"a": run, "b": 1}}
            reply = await ask({"jsonrpc": "2.0", "id": f"call-{run}", "method": "tools/call", "params": call})
            assert reply["result"]["structuredContent"] == {"result": run + 1}  # type: ignore[index]
    finally:
        process.stdin.close()
        await asyncio.wait_for(process.wait(), WAIT)


async def test_a_stdio_server_speaks_2026_07_28_when_the_first_request_does() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, MATH_STDIO, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=python_env()
    )
    assert process.stdin is not None and process.stdout is not None
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}

    async def ask(message: dict[str, object]) -> dict[str, object]:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(message).encode() + b"\n")
        await process.stdin.drain()
        reply: dict[str, object] = json.loads(await asyncio.wait_for(process.stdout.readline(), WAIT))
        return reply

    try:
        found = await ask({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}})
        assert found["result"]["supportedVersions"] == ["2026-07-28"]  # type: ignore[index]
        call = {"_meta": meta, "name": "add", "arguments": {"a": 2, "b": 3}}
        added = await ask({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        assert added["result"]["structuredContent"] == {"result": 5}  # type: ignore[index]
        assert added["result"]["resultType"] == "complete"  # type: ignore[index]
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
        refused = await ask({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": init})
        assert refused["error"]["code"] == -32022  # type: ignore[index]  # the era is decided
    finally:
        process.stdin.close()
        await asyncio.wait_for(process.wait(), WAIT)
