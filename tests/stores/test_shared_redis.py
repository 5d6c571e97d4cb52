"""Two workers (two apps) on one Redis: what works across workers through the Redis stores
(with the refresh of adopted copies, live resumption across workers and 503s)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from fixtures.asgi import AsgiCall, Session, call
from fixtures.http_app import Clock, Gate, build_server
from fixtures.messages import initialize_message, request
from fixtures.redis_server import NEW, RedisServer, Workers, client_for, open_on
from mcp_sse_server.engine.stores import stream_of
from mcp_sse_server.stores import MemoryBackend
from mcp_sse_server.stores.redis import RedisEventLog, RedisSessionStore
from mcp_sse_server.transport.http import HttpSettings, McpHttpApp

WAIT = 10.0  # bounded: a worker that has not noticed Redis gone by then never will


async def test_a_session_opened_on_one_worker_is_served_by_the_other(workers: Workers) -> None:
    a, b = workers(), workers()
    session_id = await open_on(a)
    result: Any = await Session(b, session_id, NEW).result("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert result["content"][0]["text"] == "5"
    assert session_id in b.live_sessions


async def test_a_record_change_is_written_back_for_workers_that_adopt_later(workers: Workers) -> None:
    a, b = workers(), workers()
    session_id = await open_on(a)
    await Session(a, session_id, NEW).result("logging/setLevel", {"level": "error"})
    for _ in range(100):  # written back in the background
        record = await a.sessions.get(session_id)
        if record is not None and record.log_level == "error":
            break
        await asyncio.sleep(0.01)
    await Session(b, session_id, NEW).result("tools/list")
    assert b.live_sessions[session_id].session.log_level == "error"


async def test_delete_on_one_worker_ends_the_session_on_the_other(workers: Workers) -> None:
    a, b = workers(), workers()
    session_id = await open_on(a)
    on_b = Session(b, session_id, NEW)
    await on_b.result("tools/list")
    deleted = await AsgiCall(a, "DELETE", b"", on_b.headers).start().finish()
    assert deleted.status == 204
    assert (await on_b.request("tools/list")).status == 404
    assert await b.sessions.count() == 0


async def test_activity_is_written_lazily_and_a_shared_session_expires_after_its_grace(
    workers: Workers, workers_clock: Clock
) -> None:
    a, b = workers(), workers()
    session_id = await open_on(a)
    opened_at = workers_clock.now
    on_a = Session(a, session_id, NEW)
    interval = a.directory.touch_interval  # a sixtieth of the default 30 min idle timeout
    assert interval == 30.0 and a.directory.idle_timeout == 1830.0

    async def stored_last_seen() -> float:
        await a.directory.store.writes.flushed()  # type: ignore[attr-defined]
        record = await a.sessions.get(session_id)
        assert record is not None
        return record.last_seen

    workers_clock.advance(interval - 1)
    await on_a.result("tools/list")
    assert await stored_last_seen() == opened_at  # not written: too soon after the last write
    workers_clock.advance(2)
    await on_a.result("tools/list")
    seen = workers_clock.now
    assert await stored_last_seen() == seen
    # Other workers see the lagging last_seen: they wait out the idle timeout plus one interval.
    workers_clock.now = seen + 1800.0 + interval - 1
    assert await b.directory.reap_expired() == 0
    workers_clock.now = seen + 1800.0 + interval + 1
    assert await b.directory.reap_expired() == 1
    assert (await on_a.request("tools/list")).status == 404


async def test_a_worker_shutting_down_leaves_the_session_to_the_others(workers: Workers) -> None:
    a, b = workers(), workers()
    session_id = await open_on(a)
    await a.shutdown(deadline=0)
    result: Any = await Session(b, session_id, NEW).result("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
    assert result["content"][0]["text"] == "2"


async def test_a_response_logged_on_one_worker_is_replayed_by_the_other(workers: Workers, gate: Gate) -> None:
    a, b = workers(), workers()
    session_id = await open_on(a)
    running = Session(a, session_id, NEW).post(request(7, "tools/call", {"name": "wait", "arguments": {}}))
    events = await running.events(1)
    running.disconnect()
    gate.release.set()
    await running.finish()
    for _ in range(100):  # the handler goes on without its client: its response goes to the log
        replay = await a.events.replay_after(session_id, str(events[0]["id"]))
        if any(b'"id":7' in event.message for event in replay):
            break
        await asyncio.sleep(0.01)
    resumed = await Session(b, session_id, NEW).get({"last-event-id": str(events[0]["id"])}).finish()
    assert resumed.status == 200
    assert resumed.messages[-1]["id"] == 7 and resumed.messages[-1]["result"]["content"][0]["text"] == "released"


async def test_a_log_level_set_on_one_worker_reaches_a_copy_adopted_before(workers: Workers) -> None:
    a, b = workers(), workers()
    session_id = await open_on(a)
    await Session(b, session_id, NEW).result("tools/list")  # b adopts now
    await Session(a, session_id, NEW).result("logging/setLevel", {"level": "error"})
    await asyncio.sleep(0.05)
    await Session(b, session_id, NEW).result("tools/list")
    assert b.live_sessions[session_id].session.log_level == "error"


async def test_a_change_made_on_a_stale_copy_is_made_again_on_the_newer_record(workers: Workers) -> None:
    a = workers()
    session_id = await open_on(a)
    await Session(a, session_id, NEW).result("tools/list")  # served from a's copy from now on
    store = a.sessions
    assert isinstance(store, RedisSessionStore)
    # Another worker's write that a has not heard of yet (written here without its announcement).
    key = store.key(session_id)
    data, version = await store.redis.hmget(key, ["d", "v"])
    await store.redis.hset(
        key, mapping={"d": orjson.dumps({**orjson.loads(data), "log_level": "error"}), "v": int(version) + 1}
    )
    await Session(a, session_id, NEW).result("resources/subscribe", {"uri": "test://hello"})
    for _ in range(100):  # written back in the background: refused, then made again on the newer record
        stored = await store.get(session_id)
        assert stored is not None
        if stored.subscriptions == ["test://hello"]:
            break
        await asyncio.sleep(0.02)
    assert (stored.log_level, stored.subscriptions, stored.version) == ("error", ["test://hello"], int(version) + 2)
    live = a.live_sessions[session_id]
    assert live.record.log_level == "error" and live.session.log_level == "error"  # the copy took the newer record


async def test_streams_of_one_session_on_two_workers_keep_their_own_logs(workers: Workers, gate: Gate) -> None:
    a, b = workers(), workers()
    session_id = await open_on(a)
    on_a = Session(a, session_id, NEW).post(request(1, "tools/call", {"name": "wait", "arguments": {}}))
    on_b = Session(b, session_id, NEW).post(request(2, "tools/call", {"name": "wait", "arguments": {}}))
    first_a, first_b = (await on_a.events(1))[0]["id"], (await on_b.events(1))[0]["id"]
    assert stream_of(first_a) != stream_of(first_b)  # (each worker numbers its streams from 1)
    on_b.disconnect()
    gate.release.set()
    await on_a.finish()
    resumed = Session(a, session_id, NEW).get({"last-event-id": first_b})
    await resumed.finish()
    assert resumed.status == 200 and [m.get("id") for m in resumed.messages if "id" in m] == [2]


async def test_a_stream_resumed_on_another_worker_gets_the_rest_live(workers: Workers, gate: Gate) -> None:
    a, b = workers(), workers()
    session_id = await open_on(a)
    running = Session(a, session_id, NEW).post(request(8, "tools/call", {"name": "wait", "arguments": {}}))
    events = await running.events(1)
    running.disconnect()
    resumed = Session(b, session_id, NEW).get({"last-event-id": str(events[0]["id"])})
    await resumed.started()
    gate.release.set()
    await resumed.finish()
    assert resumed.status == 200 and resumed.messages[-1]["id"] == 8


async def test_redis_down_is_a_503_with_a_json_rpc_error(own_redis_server: RedisServer) -> None:
    async with client_for(own_redis_server, "mcp") as client:
        backend = MemoryBackend()  # with the Redis store and log alone: what is measured is their failure
        backend.sessions, backend.events = RedisSessionStore(client), RedisEventLog(client)
        app = McpHttpApp(build_server(Gate()), settings=HttpSettings(path="/mcp"), backend=backend)
        try:
            session_id = await open_on(app)
            assert (await Session(app, session_id, NEW).request("tools/list")).status == 200  # a copy here now
            own_redis_server.stop()
            try:
                refused = await call(app, body=initialize_message(protocol_version=NEW))
                # The copy served here is trusted only while Redis announces record changes: once the
                # worker saw the subscription break, the session's requests need Redis too.
                deadline = asyncio.get_running_loop().time() + WAIT
                while (reply := await Session(app, session_id, NEW).request("tools/list")).status == 200:
                    assert asyncio.get_running_loop().time() < deadline, "the copy was trusted with Redis down"
                    await asyncio.sleep(0.05)
            finally:
                own_redis_server.start()  # empty: no persistence
            for answer in (refused, reply):
                assert answer.status == 503 and answer.headers.get("retry-after") == "2"
                assert answer.json["error"]["code"] == -32000 and "store" in answer.json["error"]["message"]
            assert (await Session(app, session_id, NEW).request("tools/list")).status == 404  # Redis lost it
            assert (await call(app, body=initialize_message(protocol_version=NEW))).status == 200
        finally:
            await app.shutdown(deadline=0.2)
