"""StdioServerTransport, driven by hand over a real process's pipes."""

from __future__ import annotations

import asyncio
import json
import os

from fixtures.peers import MATH_STDIO, PYTHON, WAIT, python_env


async def test_raw_lines_over_our_stdio_transport() -> None:
    process = await asyncio.create_subprocess_exec(
        PYTHON,
        MATH_STDIO,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, **python_env()},
    )
    assert process.stdin is not None and process.stdout is not None
    try:

        async def exchange(line: bytes) -> dict[str, object]:
            process.stdin.write(line)  # type: ignore[union-attr]
            return json.loads(await asyncio.wait_for(process.stdout.readline(), WAIT))  # type: ignore[union-attr, no-any-return]

        parse_error = await exchange(b"this is not json\n")
        assert parse_error["id"] is None and parse_error["error"]["code"] == -32700  # type: ignore[index]
        batch = await exchange(b"[]\n")
        assert batch["error"]["code"] == -32600 and "not served over stdio" in batch["error"]["message"]  # type: ignore[index]
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
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
