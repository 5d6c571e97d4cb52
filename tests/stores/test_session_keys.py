"""A session ended by DELETE leaves no key in Redis: ``SCAN <prefix>:{<sid>}*`` is empty.

The session is served with the ``RedisCoordinator`` and used for everything that writes a key
of its own: the record, the event log (a standalone backlog and history, a finished request's
stream waiting out its grace, a running request's stream, which names its writer while a tool
call is held in flight), and the standalone stream's lease (a GET held open).

With two workers, a DELETE on one does not yet end the copy another serves (xfail below).
"""

from __future__ import annotations

import asyncio

import pytest

from fixtures.asgi import AsgiCall, Session, call
from fixtures.http_app import Gate
from fixtures.messages import initialize_message, notification, request
from fixtures.redis_server import NEW, Workers, mesh
from mcp_sse_server.transport.http import McpHttpApp

WAIT = 5.0


async def session_keys(app: McpHttpApp, session_id: str) -> list[str]:
    """The session's keys in Redis, once the worker's writes behind are in (read past the event log)."""
    await mesh(app).writes.flushed()
    redis, prefix = mesh(app).registry.redis, mesh(app).registry.prefix
    return sorted([key.decode() async for key in redis.scan_iter(match=f"{prefix}:{{{session_id}}}*", count=1000)])


async def used_for_everything(app: McpHttpApp, gate: Gate, get_held: bool) -> tuple[Session, list[AsgiCall]]:
    """A 2025-11-25 session with every kind of key; returns it and its calls still open.

    With ``get_held`` its standalone GET stays open (the lease); without, it was left and a message
    waits in the backlog for the next one (a live GET takes its backlog at once: not both)."""
    opened = await call(app, body=initialize_message(protocol_version=NEW, sampling={}))
    session = Session(app, opened.headers["mcp-session-id"], NEW)
    assert (await session.post(notification("notifications/initialized")).finish()).status == 202
    live = app.live_sessions[session.id].session
    done = await session.request("tools/call", {"name": "chatty", "arguments": {}})  # an ended stream
    assert done.messages[-1]["result"]["content"][0]["text"] == "chatty done"
    standalone = session.get()
    await standalone.started()
    await live.log("info", "to the stream")  # standalone history
    await standalone.wait_until(lambda: b"to the stream" in standalone.body)
    open_calls = [standalone]
    if not get_held:
        standalone.disconnect()
        await standalone.finish()
        await live.log("info", "to the backlog")
        open_calls = []
    answered = session.post(request(2, "tools/call", {"name": "sample", "arguments": {"prompt": "one"}}))
    asked = next(event["data"] for event in await answered.events(1) if "data" in event)
    assert asked["method"] == "sampling/createMessage"  # type: ignore[index]
    reply = {
        "jsonrpc": "2.0",
        "id": asked["id"],  # type: ignore[index]
        "result": {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"},
    }
    assert (await session.post(reply).finish()).status == 202
    await asyncio.wait_for(answered.finish(), WAIT)
    held = session.post(request(3, "tools/call", {"name": "wait", "arguments": {}}))  # in flight
    await asyncio.wait_for(gate.entered.wait(), WAIT)
    unanswered = session.post(request(4, "tools/call", {"name": "sample", "arguments": {"prompt": "two"}}))
    await unanswered.events(1)  # a server-to-client request awaiting its answer
    return session, [*open_calls, held, unanswered]


@pytest.mark.parametrize("get_held", [True, False], ids=["a GET held", "a backlog waiting"])
async def test_delete_leaves_no_key_of_the_session(workers: Workers, gate: Gate, get_held: bool) -> None:
    app = workers("A")
    session, calls = await used_for_everything(app, gate, get_held)
    prefix = f"{mesh(app).registry.prefix}:{{{session.id}}}"
    before = await session_keys(app, session.id)
    kinds = ["", ":ev", ":h:", ":get" if get_held else ":b:"]
    assert [kind for kind in kinds if prefix + kind not in before] == [], before  # every kind was made
    assert len([key for key in before if key.startswith(prefix + ":h:r")]) >= 3  # request streams

    deleted = await call(app, "DELETE", headers=session.headers)
    assert deleted.status == 204
    for still_open in calls:
        await asyncio.wait_for(still_open.finish(), WAIT)
    await asyncio.wait_for(gate.cancelled.wait(), WAIT)
    await asyncio.sleep(0.05)  # what runs in the background after the requests ended
    assert await session_keys(app, session.id) == []


async def test_a_delete_on_another_worker_ends_the_copy_this_worker_serves(workers: Workers, gate: Gate) -> None:
    a, b = workers("A"), workers("B")
    session, _ = await used_for_everything(a, gate, get_held=True)
    deleted = await call(b, "DELETE", headers=Session(b, session.id, NEW).headers)
    assert deleted.status == 204
    await a.reap_expired()  # one sweep on A, for a fix that finds it there rather than by a routed message
    loop = asyncio.get_running_loop()
    until = loop.time() + 0.5
    while session.id in a.live_sessions and loop.time() < until:  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    assert session.id not in a.live_sessions, "A still serves the deleted session (its GET and calls run on)"
    gate.release.set()
    await asyncio.sleep(0.05)
    assert await session_keys(a, session.id) == []
