"""Serving over stdio keeps the protocol stream to itself (transport/stdio_fds.py): a tool that prints,
logs to sys.stdout or writes to descriptor 1, children that write to the stdout they inherit (without
a final newline) or read the stdin they inherit, leave every answer of the session intact; whatever
they wrote comes out on stderr, and what they read is the end of the null device.

Each way of serving (``serve --stdio``, ``server.run()``, a ``StdioServerTransport`` made without
streams) is driven by our StdioClient and by the official SDK's stdio client."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from fixtures.commands import COMMAND_TIMEOUT
from fixtures.peers import python_env
from mcp_sse_server.client import StdioClient
from mcp_sse_server.engine.types import TextContent

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="descriptors and select() on pipes: POSIX")

SERVER = Path(__file__).with_name("noisy_stdio_server.py")

COMMANDS = {
    "cli": ["-m", "mcp_sse_server", "serve", f"{SERVER}:server", "--stdio"],
    "run": [str(SERVER)],
    "transport": [str(SERVER), "transport"],
}


def server_env() -> dict[str, str]:
    """As a client would start the server: stdout a pipe, so block-buffered (this test run's
    PYTHONUNBUFFERED turned off), and what the script prints before ``server.run()`` is still in
    ``sys.stdout``'s buffer when serving begins."""
    return {**python_env(), "PYTHONUNBUFFERED": ""}


# Each noisy tool and its answer; after each, the session must still answer plainly.
NOISY = {
    "prints": "printed",
    "writes_to_fd_1": "written",
    "logs": "logged",
    "child_writes": "child wrote",
    "child_shell_writes": "shell wrote",
    "child_reads_stdin": "b''",  # end of file at once: not the client's next request
    "reads_stdin": "''",
    "fakes_on_stderr": "faked",  # answers to the next requests, on stderr: never taken for the protocol
}
if sys.platform == "linux":
    NOISY["child_fds"] = "[0, 1, 2]"  # none of the protocol's private descriptors

# What the noisy tools wrote, which must come out on stderr.
ON_STDERR = [
    "importing the noisy server",
    *(f"printed line {number}" for number in range(6)),
    "printed without a newline",
    "written to fd 1 without a newline",
    "logged to a handler on sys.stdout",
    "child output with no newline",
    "shell output with no newline",
]

Call = Callable[[str, dict[str, str]], Awaitable[str]]


async def exercise(call: Call) -> None:
    """Every noisy tool, each followed by plain calls whose answers must arrive intact."""
    for tool, answer in NOISY.items():
        assert await call(tool, {}) == answer, tool
        for number in range(3):
            text = f"{tool} then {number}"
            assert await call("echo", {"text": text}) == text


@pytest.mark.parametrize("served_by", sorted(COMMANDS))
async def test_our_client(served_by: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    stderr: list[str] = []
    client = StdioClient(sys.executable, COMMANDS[served_by], env=server_env(), cwd=tmp_path, on_stderr=stderr.append)

    async def call(tool: str, arguments: dict[str, str]) -> str:
        result = await client.call_tool(tool, arguments)
        assert not result.is_error, result
        [content] = result.content
        assert isinstance(content, TextContent)
        return content.text

    with caplog.at_level(logging.WARNING, logger="mcp_sse_server.client"):
        async with asyncio.timeout(COMMAND_TIMEOUT), client:
            await exercise(call)
    assert not [record.message for record in caplog.records if "not JSON-RPC" in record.message]
    assert client.transport.starts == 1  # the probe was answered: nothing broke the first exchange
    said = "\n".join(stderr)
    for text in ON_STDERR:
        assert text in said, (text, said)


@pytest.mark.parametrize("served_by", sorted(COMMANDS))
async def test_the_sdks_client(served_by: str, tmp_path: Path) -> None:
    mcp = pytest.importorskip("mcp", reason="the official MCP SDK (test dependency mcp>=2) is not installed")
    from mcp.client.stdio import stdio_client

    parameters = mcp.StdioServerParameters(
        command=sys.executable, args=COMMANDS[served_by], env=server_env(), cwd=tmp_path
    )
    errlog = tmp_path / "stderr.txt"
    with errlog.open("w") as err:
        async with (
            asyncio.timeout(COMMAND_TIMEOUT),
            stdio_client(parameters, errlog=err) as (read, write),
            mcp.ClientSession(read, write) as session,
        ):
            await session.initialize()

            async def call(tool: str, arguments: dict[str, str]) -> str:
                result = await session.call_tool(tool, arguments)
                assert not result.is_error, result
                [content] = result.content
                return str(content.text)

            await exercise(call)
    said = errlog.read_text()
    for text in ON_STDERR:
        assert text in said, (text, said)


async def test_a_server_started_without_stderr_drops_what_goes_to_stdout() -> None:
    # Started with descriptor 2 closed, the first file the process opens takes number 2: stdout must
    # not be pointed there (nor at anything else of the process's), only at the null device.
    client = StdioClient("sh", ["-c", 'exec "$0" "$1" 2>&-', sys.executable, str(SERVER)], env=server_env())
    async with asyncio.timeout(COMMAND_TIMEOUT), client:
        for tool, answer in [("prints", "printed"), ("child_writes", "child wrote"), ("echo", "still here")]:
            result = await client.call_tool(tool, {"text": answer} if tool == "echo" else {})
            assert result.content == [TextContent(answer)], tool
