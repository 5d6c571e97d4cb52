"""A client with an ``on_log`` handler receives logs without calling ``set_log_level``:
it asks for ``log_level`` ("info" when not given) by itself, with ``logging/setLevel``
after the handshake or in every request's ``_meta`` at 2026-07-28. Our own server,
in process and over real HTTP, in both eras."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from fixtures.peers import WAIT
from mcp_sse_server.client import InMemoryClient, McpClient, StreamableHttpClient
from mcp_sse_server.client.base import DEFAULT_LOG_LEVEL
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.engine.server import McpServer
from mcp_sse_server.engine.types import CallToolResult, Tool
from mcp_sse_server.transport.http import McpHttpServer

EMPTY = {"type": "object", "properties": {}}
LEVELS = ("debug", "info", "warning")
ERAS = {"auto": "stateless", "session": "session"}


def chatty_server() -> McpServer:
    server = McpServer("chatty", "1.0.0")

    async def chatty(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        for level in LEVELS:
            await context.log(level, f"a {level} line", "chatty")
        return CallToolResult.text("logged")

    server.add_tool(Tool("chatty", EMPTY, chatty))
    return server


class Logs:
    """An on_log handler that can wait for a number of entries (logs may trail the result)."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self._changed = asyncio.Event()

    def __call__(self, params: dict[str, Any]) -> None:
        self.entries.append(params)
        self._changed.set()

    async def levels(self, count: int) -> list[str]:
        async with asyncio.timeout(WAIT):
            while len(self.entries) < count:
                self._changed.clear()
                await self._changed.wait()
        await asyncio.sleep(0.05)  # room for an entry that should not come
        return [entry["level"] for entry in self.entries]


@pytest.fixture
async def http() -> AsyncIterator[McpHttpServer]:
    served = await McpHttpServer.bind(chatty_server(), port=0)
    try:
        yield served
    finally:
        await served.close()


def test_a_handler_asks_for_info_unless_a_level_is_given() -> None:
    server = chatty_server()
    assert DEFAULT_LOG_LEVEL == "info"
    assert InMemoryClient(server, on_log=print).effective_log_level == "info"
    assert InMemoryClient(server, on_log=print, log_level="debug").effective_log_level == "debug"
    assert InMemoryClient(server, log_level="error").effective_log_level == "error"
    assert InMemoryClient(server).effective_log_level is None


async def check_default(client: McpClient, logs: Logs, mode: str) -> None:
    async with client:
        assert client.era == ERAS[mode]
        assert (await client.call_tool("chatty")).content[0].text == "logged"  # type: ignore[union-attr]
        assert await logs.levels(2) == ["info", "warning"]  # no set_log_level call, no debug line
        assert logs.entries[0] == {"level": "info", "data": "a info line", "logger": "chatty"}


@pytest.mark.parametrize("mode", ["auto", "session"])
async def test_in_memory_a_handler_gets_logs_from_info_up(mode: str) -> None:
    logs = Logs()
    client = InMemoryClient(chatty_server(), on_log=logs, mode=mode)
    await check_default(client, logs, mode)


@pytest.mark.parametrize("mode", ["auto", "session"])
async def test_over_http_a_handler_gets_logs_from_info_up(http: McpHttpServer, mode: str) -> None:
    logs = Logs()
    client = StreamableHttpClient(http.endpoint, on_log=logs, mode=mode)
    await check_default(client, logs, mode)


@pytest.mark.parametrize("mode", ["auto", "session"])
async def test_log_level_is_asked_for_and_set_log_level_still_changes_it(http: McpHttpServer, mode: str) -> None:
    logs = Logs()
    async with StreamableHttpClient(http.endpoint, on_log=logs, log_level="debug", mode=mode) as client:
        await client.call_tool("chatty")
        assert await logs.levels(3) == list(LEVELS)
        await client.set_log_level("warning")
        await client.call_tool("chatty")
        assert await logs.levels(4) == [*LEVELS, "warning"]


async def test_a_handshake_session_of_our_server_records_the_level() -> None:
    server = chatty_server()
    client = InMemoryClient(server, on_log=Logs(), mode="session")
    async with client:
        assert client.transport.session is not None and client.transport.session.log_level == "info"
    client = InMemoryClient(server, mode="session")
    async with client:  # no handler: nothing is asked
        assert client.transport.session is not None and client.transport.session.log_level is None
