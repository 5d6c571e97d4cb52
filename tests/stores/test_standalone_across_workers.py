"""The standalone GET stream across workers (``McpHttpApp(coordinator=RedisCoordinator(...))``): the GET's worker holds
the session's lease; a message another worker produces for the stream goes to the shared
backlog and wakes the holder, which sends it; a new GET on another worker supersedes the old."""

from __future__ import annotations

from fixtures.asgi import Session
from fixtures.redis_server import NEW, Workers, mesh, open_on
from mcp_sse_server.stores.redis_routing import standalone_lease


async def test_a_message_produced_on_another_worker_reaches_the_get_stream(workers: Workers) -> None:
    a, b = workers("A"), workers("B")
    session_id = await open_on(a)
    held = Session(b, session_id, NEW).get()
    assert await held.started() == 200  # the stream is attached on B
    assert (
        await standalone_lease(mesh(b).registry.redis, session_id, 1, prefix=mesh(b).registry.prefix).holder() == "B:1"
    )  # type: ignore[union-attr]
    await a.live_sessions[session_id].session.log("info", "made on A")  # outside any request: standalone
    await held.wait_until(lambda: "made on A" in str(held.messages))
    assert await a.events.take_undelivered(session_id, "") == []  # B took the backlog
    held.disconnect()
    await held.finish()


async def test_a_new_get_on_another_worker_supersedes_the_old_one(workers: Workers) -> None:
    a, b = workers("A"), workers("B")
    session_id = await open_on(a)
    old = Session(b, session_id, NEW).get()
    await old.started()
    new = Session(a, session_id, NEW).get()
    await new.started()
    await old.finish()  # B was told to end its stream
    assert old.complete
    await a.live_sessions[session_id].session.log("info", "after the switch")
    await new.wait_until(lambda: "after the switch" in str(new.messages))
    assert b"after the switch" not in old.body
    new.disconnect()
    await new.finish()
