"""A client's answer to a server-to-client request, posted to another worker than
the one whose handler waits for it, is routed there through the inbox (the request's id
names the worker), and a cancellation of a request another worker runs reaches it
(``McpHttpApp(coordinator=RedisCoordinator(...))``)."""

from __future__ import annotations

import asyncio

from fixtures.asgi import Session, call
from fixtures.http_app import Gate
from fixtures.messages import initialize_message, notification, request
from fixtures.redis_server import NEW, Workers

WAIT = 5.0


async def test_an_answer_posted_to_another_worker_reaches_the_waiting_handler(workers: Workers) -> None:
    a, b = workers("A"), workers("B")
    opened = await call(a, body=initialize_message(protocol_version=NEW, sampling={}))
    session_id = opened.headers["mcp-session-id"]
    on_a, on_b = Session(a, session_id, NEW), Session(b, session_id, NEW)
    assert (await on_a.post(notification("notifications/initialized")).finish()).status == 202
    running = on_a.post(request(5, "tools/call", {"name": "sample", "arguments": {"prompt": "meaning of life?"}}))
    await running.wait_until(lambda: any(m.get("method") == "sampling/createMessage" for m in running.messages))
    asked = next(m for m in running.messages if m.get("method") == "sampling/createMessage")
    assert asked["id"] == "A.1"  # the id names the worker whose handler waits
    answer = {
        "jsonrpc": "2.0",
        "id": asked["id"],
        "result": {"role": "assistant", "content": {"type": "text", "text": "forty-two"}, "model": "m"},
    }
    routed = await on_b.post(answer).finish()
    assert routed.status == 202 and session_id in b.live_sessions  # b took the POST, a has the handler
    await asyncio.wait_for(running.finish(), WAIT)
    assert running.messages[-1]["id"] == 5
    assert running.messages[-1]["result"]["content"][0]["text"] == "model said: forty-two"


async def test_a_cancellation_posted_to_another_worker_cancels_the_handler(workers: Workers, gate: Gate) -> None:
    a, b = workers("A"), workers("B")
    opened = await call(a, body=initialize_message(protocol_version=NEW))
    session_id = opened.headers["mcp-session-id"]
    on_a, on_b = Session(a, session_id, NEW), Session(b, session_id, NEW)
    assert (await on_a.post(notification("notifications/initialized")).finish()).status == 202
    running = on_a.post(request(9, "tools/call", {"name": "wait", "arguments": {}}))
    await running.events(1)  # the handler is waiting on A
    cancel = notification("notifications/cancelled", {"requestId": 9, "reason": "changed my mind"})
    assert (await on_b.post(cancel).finish()).status == 202
    await asyncio.wait_for(gate.cancelled.wait(), WAIT)  # the handler on A was cancelled
    await asyncio.wait_for(running.finish(), WAIT)  # and its stream ends without a response
    assert all(m.get("id") != 9 for m in running.messages)
    after = await on_b.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert after.status == 200
