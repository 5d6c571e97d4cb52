"""The app's reaper (``McpHttpApp.reap_dead_workers``): a worker whose liveness lease lapsed has
the streams of its requests ended with the terminal JSON-RPC error, and their ids freed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from http_transport.conftest import Clock, Gate, Session, build_server, call, initialize_message, notification, request
from mcp_sse_server.stores.redis import RedisEventLog, RedisSessionStore
from mcp_sse_server.stores.redis_routing import WorkerRouter
from mcp_sse_server.transport.http import HttpLimits, McpHttpApp

from .conftest import RedisServer, client_for

NEW = "2025-11-25"
Worker = Callable[[str], McpHttpApp]


@pytest.fixture
async def workers(redis_server: RedisServer, redis_prefix: str) -> AsyncIterator[Worker]:
    clock = Clock()
    apps: list[McpHttpApp] = []
    async with client_for(redis_server, redis_prefix) as client:

        def worker(name: str) -> McpHttpApp:
            limits = HttpLimits()
            app = McpHttpApp(
                build_server(Gate()),
                path="/mcp",
                limits=limits,
                clock=clock,
                session_store=RedisSessionStore(client, prefix=redis_prefix),
                event_log=RedisEventLog(client, limits.backlog_limit, limits.replay_buffer_size, prefix=redis_prefix),
                # A long lease: a worker "dies" when the test deletes its lease, not by itself.
                router=WorkerRouter(client, name, heartbeat_ttl=60.0, prefix=redis_prefix),
            )
            apps.append(app)
            return app

        yield worker
        for app in apps:
            await app.shutdown(deadline=0.2)


async def test_a_dead_workers_request_stream_ends_with_the_terminal_error(workers: Worker) -> None:
    a, b = workers("A"), workers("B")
    opened = await call(a, body=initialize_message(protocol_version=NEW))
    session_id = opened.headers["mcp-session-id"]
    on_a, on_b = Session(a, session_id, NEW), Session(b, session_id, NEW)
    assert (await on_a.post(notification("notifications/initialized")).finish()).status == 202
    running = on_a.post(request(7, "tools/call", {"name": "wait", "arguments": {}}))
    events = await running.events(1)
    running.disconnect()
    await on_b.result("tools/list")  # b adopts the session (and starts its router)
    assert await b.reap_dead_workers() == []  # a is alive
    assert a.router is not None
    await a.router.registry.redis.delete(a.router.registry.key("A"))  # a's lease lapses: a is dead
    assert await b.reap_dead_workers() == ["A"]
    resumed = await on_b.get({"last-event-id": str(events[-1]["id"])}).finish()
    assert resumed.status == 200
    assert resumed.messages[-1] == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32603, "message": "Request interrupted: the server instance running it stopped"},
    }
    again = await on_b.post(request(7, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})).finish()
    assert again.status == 200  # the id is free again (the dead worker's claim is gone)
    assert await b.reap_dead_workers() == []  # reaped once
