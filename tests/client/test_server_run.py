"""``server.run()`` from a script, for real: over stdio driven by our StdioClient, and over HTTP
(``server.run("http", port=0)``) driven by our Streamable HTTP client, then stopped with SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest

from mcp_sse_server import McpServer
from mcp_sse_server.client import StdioClient, StreamableHttpClient

SCRIPT = """\
import sys
from mcp_sse_server import McpServer

server = McpServer("adder")


@server.tool
def add(a: int, b: int) -> int:
    \"\"\"Add two numbers.\"\"\"
    return a + b


if __name__ == "__main__":
    server.run(*sys.argv[1:2], **({"port": 0} if sys.argv[1:2] == ["http"] else {}))
"""

WAIT = 30.0


async def test_run_serves_stdio_by_default(tmp_path: Path) -> None:
    (tmp_path / "adder.py").write_text(SCRIPT)
    async with StdioClient(sys.executable, [str(tmp_path / "adder.py")]) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
    assert result.structured_content == {"result": 5}
    assert client.server_info is not None and client.server_info["version"] == "0.1.0"  # the default


async def test_run_http_serves_until_sigterm(tmp_path: Path) -> None:
    (tmp_path / "adder.py").write_text(SCRIPT)
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(tmp_path / "adder.py"), "http", stderr=asyncio.subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        line = (await asyncio.wait_for(process.stderr.readline(), WAIT)).decode()
        assert line.startswith("Serving adder at http://127.0.0.1:"), line
        async with StreamableHttpClient(line.split(" at ", 1)[1].strip()) as client:
            result = await client.call_tool("add", {"a": 20, "b": 22})
        assert result.structured_content == {"result": 42}
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), WAIT) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def test_run_refuses_an_unknown_transport_and_stdio_options() -> None:
    server = McpServer("x")
    with pytest.raises(ValueError, match="unknown transport 'websocket': use one of http, stdio"):
        server.run("websocket")
    with pytest.raises(ValueError, match="the stdio transport takes no options"):
        server.run("stdio", port=1)
