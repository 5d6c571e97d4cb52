"""StdioClient against real stdio servers: the official Python SDK's, ours
(StdioServerTransport serving the math server), and a misbehaving toy."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fixtures.node import node_peer
from fixtures.peers import MATH_STDIO, PYTHON, SDK_PEER, TS_PEER, WAIT, python_env
from mcp_sse_server.client import McpConnectionError, StdioClient
from mcp_sse_server.engine.jsonrpc import CONNECTION_CLOSED, McpError

HERE = Path(__file__).parent
TOY = str(HERE / "toy_stdio_server.py")


def sdk_client(**options: Any) -> StdioClient:
    # The handshake revisions (ctx.elicit, unasked logs); test_stateless_sdk.py covers 2026-07-28.
    options.setdefault("mode", "session")
    return StdioClient(PYTHON, [SDK_PEER, "stdio"], **options)


async def test_sdk_server_tools_progress_and_logs() -> None:
    logs: list[dict[str, Any]] = []
    async with sdk_client(on_log=logs.append, on_stderr=lambda line: None) as client:
        assert client.server_info is not None and client.server_info["name"] == "sdk-peer"
        assert client.protocol_version == "2025-11-25"  # the SDK serves what we offer
        names = {tool.name for tool in await client.list_tools()}
        assert {"add", "divide", "slow", "chatty", "ask_model", "ask_user"} <= names

        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result.structured_content == {"result": 5} and not result.is_error

        progress: list[tuple[float, float | None, str | None]] = []
        result = await client.call_tool("slow", {"steps": 3}, on_progress=lambda *p: progress.append(p))
        assert result.content[0].text == "done 3"  # type: ignore[union-attr]
        assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]

        result = await client.call_tool("chatty")
        assert result.content[0].text == "logged"  # type: ignore[union-attr]
        assert [(entry["level"], entry["data"], entry.get("logger")) for entry in logs] == [
            ("info", "first", "peer"),
            ("warning", {"n": 2}, "peer"),
        ]
        process = client.transport.process
    assert process is not None and process.returncode is not None  # ended on close


async def test_sdk_server_sampling_and_elicitation_are_answered() -> None:
    asked: list[dict[str, Any]] = []

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "test-model"}

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"colour": "blue"}}

    async with sdk_client(sampling_handler=sample, elicitation_handler=elicit, on_stderr=lambda line: None) as client:
        result = await client.call_tool("ask_model", {"question": "meaning of life?"})
        assert result.content[0].text == "model said: 42"  # type: ignore[union-attr]
        result = await client.call_tool("ask_user")
        assert result.content[0].text == "accept: blue"  # type: ignore[union-attr]
    assert asked[0]["messages"][0]["content"]["text"] == "meaning of life?"
    assert asked[1]["message"] == "Favourite colour?"


async def test_cancelling_a_call_reaches_the_sdk_server_and_stderr_passes_through() -> None:
    cancelled_on_server = asyncio.Event()
    lines: list[str] = []

    def on_stderr(line: str) -> None:
        lines.append(line)
        if "SLOW-CANCELLED" in line:
            cancelled_on_server.set()

    started = asyncio.Event()
    async with sdk_client(on_stderr=on_stderr) as client:
        call = asyncio.create_task(client.call_tool("slow", {"steps": 400}, on_progress=lambda *p: started.set()))
        await asyncio.wait_for(started.wait(), WAIT)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.wait_for(cancelled_on_server.wait(), WAIT)
        # The session is still usable after a cancelled call.
        assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}
    assert "SLOW-CANCELLED" in lines


async def test_our_math_server_over_stdio_transport() -> None:
    async with StdioClient(PYTHON, [MATH_STDIO], env=python_env()) as client:
        assert client.server_info is not None and client.server_info["name"] == "math"
        assert len(await client.list_tools()) == 19
        assert (await client.call_tool("divide", {"a": 7, "b": 2})).structured_content == {"result": 3.5}
        error = await client.call_tool("divide", {"a": 1, "b": 0})
        assert error.is_error
        with pytest.raises(McpError) as raised:
            await client.request("no/such/method")
        assert raised.value.code == -32601


async def test_server_exiting_mid_call_fails_the_call_with_command_and_code() -> None:
    lines: list[str] = []
    async with StdioClient(PYTHON, [TOY, "exit"], on_stderr=lines.append) as client:
        assert await client.list_tools() == []  # the non-JSON banner line was skipped
        with pytest.raises(McpConnectionError) as raised:
            await client.call_tool("anything", timeout=WAIT)
        assert "exited with code 3" in raised.value.message
        assert "toy_stdio_server.py exit" in raised.value.message
        assert raised.value.code == CONNECTION_CLOSED
        with pytest.raises(McpError):  # later calls fail at once too
            await client.ping()
    assert "toy: started" in lines and "toy: dying" in lines


async def test_a_missing_command_is_a_clear_error() -> None:
    client = StdioClient("no-such-mcp-server-command-xyz", ["--flag"])
    with pytest.raises(McpConnectionError, match=r"no-such-mcp-server-command-xyz.*not found"):
        await client.initialize()


async def test_a_missing_working_directory_is_named() -> None:
    client = StdioClient(PYTHON, [TOY, "exit"], cwd=str(HERE / "no-such-dir"))
    with pytest.raises(ConnectionError, match=r"working directory .*no-such-dir.* does not exist"):
        await client.initialize()


async def test_close_kills_a_server_that_ignores_eof_and_sigterm() -> None:
    client = StdioClient(PYTHON, [TOY, "stubborn"], shutdown_timeout=0.2, on_stderr=lambda line: None)
    await client.initialize()
    process = client.transport.process
    assert process is not None
    await client.close()
    assert process.returncode == -9


async def test_stderr_goes_to_our_stderr_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    async with StdioClient(PYTHON, [TOY, "exit"]) as client:
        await client.ping()
    assert "toy: started" in capsys.readouterr().err


@pytest.mark.skipif(node_peer() is None, reason="node is not set up: source scripts/setup.sh && setup_node")
async def test_typescript_sdk_stdio_server() -> None:
    node, env = node_peer()  # type: ignore[misc]
    cancelled = asyncio.Event()
    started = asyncio.Event()
    lines: list[str] = []

    def on_stderr(line: str) -> None:
        lines.append(line)
        if "SLOW-CANCELLED" in line:
            cancelled.set()

    async with StdioClient(node, [TS_PEER], env=env, on_stderr=on_stderr) as client:
        assert client.server_info == {"name": "ts-peer", "version": "1.0.0"}
        progress: list[Any] = []
        result = await client.call_tool("slow", {"steps": 2}, on_progress=lambda *p: progress.append(p))
        assert result.content[0].text == "done 2"  # type: ignore[union-attr]
        assert [p[:2] for p in progress] == [(1, 2), (2, 2)]
        call = asyncio.create_task(client.call_tool("slow", {"steps": 400}, on_progress=lambda *p: started.set()))
        await asyncio.wait_for(started.wait(), WAIT)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.wait_for(cancelled.wait(), WAIT)
    assert "ts-peer: ready" in lines
