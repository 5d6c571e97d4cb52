"""Visibility across workers (issue 38 item 4): a session's rules live in its record, so a worker
that never saw the rule made obeys it once a shared Redis store hands it the record.
A worker that adopted the session before the rule was made follows the record in place
(``directory.py``'s ``_follow``) and obeys the rule from then on."""

from __future__ import annotations

import asyncio
from typing import Any

from fixtures.asgi import Session
from fixtures.redis_server import NEW, Workers, open_on
from mcp_sse_server import RequestContext
from mcp_sse_server.transport.http import McpHttpApp

WAIT = 10.0  # bounded: the record is written back in the background


def with_lock_down(app: McpHttpApp) -> McpHttpApp:
    server = app.server
    assert server is not None

    @server.tool
    async def lock_down(context: RequestContext) -> str:
        context.session.visibility.disable(names={"add"})
        return "locked"

    return app


async def tool_names(session: Session) -> list[str]:
    listed: Any = await session.result("tools/list")
    return [tool["name"] for tool in listed["tools"]]


async def test_a_sessions_rules_roam_to_the_other_worker(workers: Workers) -> None:
    a, b = with_lock_down(workers()), with_lock_down(workers())
    session_id = await open_on(a)
    other_id = await open_on(a)
    await Session(a, session_id, NEW).result("tools/call", {"name": "lock_down", "arguments": {}})
    for _ in range(int(WAIT / 0.01)):  # written back in the background
        record = await a.sessions.get(session_id)
        if record is not None and record.visibility:
            break
        await asyncio.sleep(0.01)
    assert record is not None and record.visibility == [
        {"enable": False, "names": ["add"], "tags": [], "kinds": [], "only": False}
    ]
    on_b = Session(b, session_id, NEW)  # b adopts the record from Redis: b itself never made a rule
    assert "add" not in await tool_names(on_b)
    refused: Any = await on_b.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert refused.status == 200 and b"Unknown tool: add" in refused.body
    assert "add" in await tool_names(Session(b, other_id, NEW))  # the other session keeps its list


async def test_a_worker_that_adopted_the_session_before_the_rule_follows_it(workers: Workers) -> None:
    a, b = with_lock_down(workers()), with_lock_down(workers())
    session_id = await open_on(a)
    on_b = Session(b, session_id, NEW)
    assert "add" in await tool_names(on_b)  # b holds the session, with no rule anywhere yet
    await Session(a, session_id, NEW).result("tools/call", {"name": "lock_down", "arguments": {}})
    for _ in range(int(WAIT / 0.01)):  # b follows the record written back in the background
        if "add" not in await tool_names(on_b):
            break
        await asyncio.sleep(0.01)
    assert "add" not in await tool_names(on_b)
    refused: Any = await on_b.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert refused.status == 200 and b"Unknown tool: add" in refused.body
