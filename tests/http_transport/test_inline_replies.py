"""A request served inline writes its response in one go unless something else goes
on its stream first; every other path (cancellation, notifications before the reply,
keep-alives, the session closing) still finds a real SSE stream."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from fixtures.asgi import open_session
from fixtures.http_app import Gate
from fixtures.messages import notification, request
from mcp_sse_server import Tool
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.transport.http import McpHttpApp

pytestmark = pytest.mark.deployments("local", "redis")


async def test_a_plain_reply_is_the_whole_response_and_leaves_no_table(app: McpHttpApp) -> None:
    session = await open_session(app)
    for _ in range(3):
        reply = await session.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        assert reply.status == 200 and reply.headers["content-length"] == str(len(reply.body))
        assert reply.messages == [
            {"jsonrpc": "2.0", "id": reply.messages[0]["id"], "result": {"content": [{"type": "text", "text": "5"}]}}
        ]
    live = app.live_sessions.get(session.id)
    assert live is not None and live.transport.inflight == 0 and live.transport.live_streams() == ()


async def test_notifications_before_the_reply_go_on_the_request_stream(app: McpHttpApp) -> None:
    session = await open_session(app)
    reply = await session.request("tools/call", {"name": "chatty", "arguments": {}})
    methods = [message.get("method") for message in reply.messages]
    assert methods == ["notifications/message", None]  # the log, then the response
    assert reply.messages[-1]["result"]["content"][0]["text"] == "chatty done"
    assert "content-length" not in reply.headers  # streamed: the headers went out with the first event


async def test_a_cancelled_request_gets_an_empty_stream(app: McpHttpApp, gate: Gate) -> None:
    session = await open_session(app)
    inflight = session.post(request(7, "tools/call", {"name": "wait", "arguments": {}}))
    await asyncio.wait_for(gate.entered.wait(), 5)
    cancel = await session.post(notification("notifications/cancelled", {"requestId": 7})).finish()
    assert cancel.status == 202
    await inflight.finish()
    assert inflight.status == 200
    assert [m.get("method") for m in inflight.messages] == ["notifications/message"]  # the log, no response
    await asyncio.wait_for(gate.cancelled.wait(), 5)


async def test_a_request_cancelled_before_it_wrote_anything_gets_an_empty_response(app: McpHttpApp) -> None:
    session = await open_session(app)
    server = session.server.server
    entered, release = asyncio.Event(), asyncio.Event()

    async def quiet(arguments: dict[str, Any], context: RequestContext) -> str:
        entered.set()
        await release.wait()
        return "never"

    server.add_tool(Tool("quiet", {"type": "object"}, quiet))
    inflight = session.post(request(8, "tools/call", {"name": "quiet", "arguments": {}}))
    await asyncio.wait_for(entered.wait(), 5)
    await session.post(notification("notifications/cancelled", {"requestId": 8})).finish()
    await inflight.finish()
    assert inflight.status == 200 and inflight.body == b"" and inflight.complete


async def test_keepalives_reach_a_silent_inline_request(app: McpHttpApp, gate: Gate) -> None:
    session = await open_session(app)
    inflight = session.post(request(9, "tools/call", {"name": "wait", "arguments": {}}))
    await asyncio.wait_for(gate.entered.wait(), 5)
    app.keepalive.tick()
    app.keepalive.tick()
    await inflight.wait_until(lambda: b": keepalive" in inflight.body)
    gate.release.set()
    await inflight.finish()
    assert inflight.messages[-1]["result"]["content"][0]["text"] == "released"
