"""StdioServerTransport, driven by hand over a real process's pipes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator

from fixtures.peers import MATH_STDIO, PYTHON, WAIT, python_env


@contextlib.asynccontextmanager
async def math_server() -> AsyncIterator[asyncio.subprocess.Process]:
    """Our math server over stdio in a process of its own, its pipes ours; killed if still running."""
    process = await asyncio.create_subprocess_exec(
        PYTHON,
        MATH_STDIO,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, **python_env()},
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_raw_lines_over_our_stdio_transport() -> None:
    async with math_server() as process:

        async def exchange(line: bytes) -> dict[str, object]:
            process.stdin.write(line)  # type: ignore[union-attr]
            return json.loads(await asyncio.wait_for(process.stdout.readline(), WAIT))  # type: ignore[union-attr, no-any-return]

        parse_error = await exchange(b"this is not json\n")
        assert parse_error["id"] is None and parse_error["error"]["code"] == -32700  # type: ignore[index]
        batch = await exchange(b"[]\n")
        assert batch["error"]["code"] == -32600 and "not initialized" in batch["error"]["message"]  # type: ignore[index]
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw"}},
        }
        reply = await exchange(b"\n  \n" + json.dumps(initialize).encode() + b"\r\n")  # blank lines are skipped
        assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "math"  # type: ignore[index]
        process.stdin.close()  # end of stdin ends the session and the process
        assert await asyncio.wait_for(process.wait(), WAIT) == 0


async def test_a_batch_line_on_a_2025_03_26_session_is_answered_with_one_array_line() -> None:
    async with math_server() as process:

        async def exchange(message: object) -> object:
            process.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]
            return json.loads(await asyncio.wait_for(process.stdout.readline(), WAIT))  # type: ignore[union-attr]

        def call(request_id: int, a: int, b: int) -> dict[str, object]:
            arguments = {"name": "add", "arguments": {"a": a, "b": b}}
            return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": arguments}

        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "raw"}},
        }
        assert (await exchange(initialize))["result"]["protocolVersion"] == "2025-03-26"  # type: ignore[index]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        answers = await exchange([initialized, call(2, 1, 2), {"bad": True}, call(3, 40, 2)])
        assert isinstance(answers, list) and [answer["id"] for answer in answers] == [2, None, 3]
        assert answers[0]["result"]["content"][0]["text"] == "3" and answers[2]["result"]["content"][0]["text"] == "42"
        assert answers[1]["error"]["code"] == -32600
        refused = await exchange([{**initialize, "id": 4}])
        assert "initialize must not be part of a batch" in refused["error"]["message"]  # type: ignore[index]
        process.stdin.close()
        assert await asyncio.wait_for(process.wait(), WAIT) == 0


async def test_a_batch_line_on_a_2025_06_18_session_is_refused_naming_its_revision() -> None:
    async with math_server() as process:
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw"}},
        }
        process.stdin.write(json.dumps(initialize).encode() + b"\n")
        await asyncio.wait_for(process.stdout.readline(), WAIT)
        process.stdin.write(b'[{"jsonrpc": "2.0", "id": 2, "method": "ping"}]\n')
        refused = json.loads(await asyncio.wait_for(process.stdout.readline(), WAIT))
        assert refused["id"] is None and "revision 2025-06-18 has none" in refused["error"]["message"]
        process.stdin.close()
        assert await asyncio.wait_for(process.wait(), WAIT) == 0
