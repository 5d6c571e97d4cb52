"""A request served in the caller's task (InMemoryClient) is cancelled when that task is:
the handler sees ``is_cancelled`` and its ``on_cancelled`` callbacks run, as over HTTP."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from mcp_sse_server import CallToolResult, InMemoryClient, McpServer, Tool
from mcp_sse_server.engine.context import RequestContext


def polling_server(seen: dict[str, Any], finished: threading.Event) -> McpServer:
    server = McpServer("poll", "1")

    def poll(arguments: dict[str, Any], context: RequestContext) -> str:
        # A sync handler in a worker thread: it can only learn of a cancellation by polling.
        context.on_cancelled(lambda: seen.setdefault("callback", True))
        deadline = time.monotonic() + 5
        while not context.is_cancelled and time.monotonic() < deadline:
            time.sleep(0.005)
        seen["cancelled"] = context.is_cancelled
        finished.set()
        return "ran to the end"

    server.add_tool(Tool("poll", {"type": "object"}, poll))
    return server


async def test_a_timeout_cancels_the_handler() -> None:
    seen: dict[str, Any] = {}
    finished = threading.Event()
    async with InMemoryClient(polling_server(seen, finished)) as client:
        with pytest.raises(TimeoutError):
            await client.call_tool("poll", timeout=0.1)
        assert await asyncio.to_thread(finished.wait, 5)
    assert seen == {"callback": True, "cancelled": True}


async def test_cancelling_the_calling_task_cancels_the_handler() -> None:
    seen: dict[str, Any] = {}
    finished = threading.Event()
    async with InMemoryClient(polling_server(seen, finished)) as client:
        call = asyncio.create_task(client.call_tool("poll"))
        await asyncio.sleep(0.05)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert await asyncio.to_thread(finished.wait, 5)
    assert seen == {"callback": True, "cancelled": True}


async def test_a_cheap_sync_handler_can_run_on_the_event_loop() -> None:
    threads: list[str] = []

    def where(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        threads.append(threading.current_thread().name)
        return CallToolResult.text("ok")

    server = McpServer("s", "1")
    server.add_tool(Tool("inline", {"type": "object"}, where, run_in_thread=False))
    server.add_tool(Tool("threaded", {"type": "object"}, where))
    async with InMemoryClient(server) as client:
        await client.call_tool("inline")
        await client.call_tool("threaded")
    assert threads[0] == threading.current_thread().name  # the loop's own thread
    assert threads[1] != threading.current_thread().name  # a worker thread, the safe default
