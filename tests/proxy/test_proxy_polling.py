"""SSE polling through a proxy (SEP-1699, proxy/server.py rule 3): a backend that closes a call's
stream mid-call makes the front close its own request's stream the same way (a priming event,
``retry``, no response), and the front client gets the response by resuming with GET +
Last-Event-ID; whether the backend is in process or served over Streamable HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from fixtures.asgi import open_session
from fixtures.messages import parse_sse, request
from mcp_sse_server import CallToolResult, McpServer, RequestContext, Tool
from mcp_sse_server.proxy import proxy
from mcp_sse_server.transport.http import McpHttpApp, McpHttpServer

BOUND = 30.0  # catches hangs only


def backend(release: asyncio.Event) -> McpServer:
    """A server whose ``hang_up`` closes its own stream, then answers what the close returned once
    ``release`` is set."""
    server = McpServer("polled", "1.0.0")

    async def hang_up(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        await context.log("info", "before the close")
        closed = await context.close_sse_stream()
        await release.wait()
        return CallToolResult.text(f"closed={closed}")

    server.add_tool(Tool("hang_up", {"type": "object"}, hang_up))
    return server


@pytest.fixture(params=["in process", "http"])
async def target(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Any, asyncio.Event]]:
    release = asyncio.Event()
    server = backend(release)
    if request.param == "in process":
        yield server, release
        return
    http = await McpHttpServer.bind(server, port=0)
    try:
        yield http.endpoint, release
    finally:
        release.set()
        await http.close(deadline=1)


@pytest.fixture
async def front(target: tuple[Any, asyncio.Event]) -> AsyncIterator[McpHttpApp]:
    app = McpHttpApp(proxy(target[0], name="polled"))
    async with app:
        yield app
    target[1].set()


async def test_the_front_closes_its_stream_when_the_backend_closes_its_own(
    front: McpHttpApp, target: tuple[Any, asyncio.Event]
) -> None:
    session = await open_session(front, revision="2025-11-25")
    call = session.post(request(7, "tools/call", {"name": "hang_up", "arguments": {}}))
    await asyncio.wait_for(call.wait_until(lambda: call.complete), BOUND)  # ended; the call goes on
    events = parse_sse(call.body)
    assert events[0].get("priming") and events[0]["id"] and any("retry" in event for event in events), events
    assert all(event.get("data", {}).get("id") != 7 for event in events)  # no response on it
    last = [event["id"] for event in events if event["id"] is not None][-1]
    resumed = session.get({"last-event-id": last})
    assert await resumed.started() == 200
    target[1].set()
    await asyncio.wait_for(resumed.finish(), BOUND)
    answer = resumed.messages[-1]
    # (The backend's own close was real: its client polled it, as the front's client does.)
    assert answer["id"] == 7 and answer["result"]["content"][0]["text"] == "closed=True", resumed.messages


async def test_a_front_that_cannot_resume_answers_whole(front: McpHttpApp, target: tuple[Any, asyncio.Event]) -> None:
    session = await open_session(front, revision="2025-06-18")
    call = session.post(request(8, "tools/call", {"name": "hang_up", "arguments": {}}))
    await asyncio.sleep(0.05)
    target[1].set()
    await asyncio.wait_for(call.finish(), BOUND)
    assert call.messages[-1]["id"] == 8
    assert all("priming" not in event for event in parse_sse(call.body))
    text = call.messages[-1]["result"]["content"][0]["text"]
    # In process the backend hears the front could not close (False); over HTTP its own stream closed.
    assert text == ("closed=False" if isinstance(target[0], McpServer) else "closed=True")
