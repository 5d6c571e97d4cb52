"""The app's reaper (``McpHttpApp.reap_dead_workers``): a worker whose liveness lease lapsed has
the streams of its requests ended with the terminal JSON-RPC error, and their ids freed."""

from __future__ import annotations

from fixtures.asgi import Session, call
from fixtures.messages import initialize_message, notification, request
from fixtures.redis_server import NEW, Workers, mesh


async def test_a_dead_workers_request_stream_ends_with_the_terminal_error(workers: Workers) -> None:
    a, b = workers("A", heartbeat_ttl=60.0), workers("B", heartbeat_ttl=60.0)
    opened = await call(a, body=initialize_message(protocol_version=NEW))
    session_id = opened.headers["mcp-session-id"]
    on_a, on_b = Session(a, session_id, NEW), Session(b, session_id, NEW)
    assert (await on_a.post(notification("notifications/initialized")).finish()).status == 202
    running = on_a.post(request(7, "tools/call", {"name": "wait", "arguments": {}}))
    events = await running.events(1)
    running.disconnect()
    await on_b.result("tools/list")  # b adopts the session (and starts its router)
    assert await b.reap_dead_workers() == []  # a is alive
    registry = mesh(a).registry
    await registry.redis.delete(registry.key("A"))  # a's lease lapses: a is dead
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
