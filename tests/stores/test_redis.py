"""What only the Redis stores have: key layout and hash tags, key expiry, several workers
(two clients) at once, and Redis going away and coming back. Against a real redis-server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.crc import key_slot

from fixtures.redis_server import RedisServer, client_for
from mcp_sse_server.engine.records import SessionRecord
from mcp_sse_server.engine.stores import STANDALONE_STREAM, StoreError, StoreUnavailable, StreamWriter
from mcp_sse_server.stores.redis import (
    RedisEventBus,
    RedisEventLog,
    RedisSessionStore,
    WriteBehind,
    redis_unavailable,
)

WAIT = 5.0  # bound of every polling loop; never reached when the code works
POLL = 0.05


async def polled(check: Callable[[], Awaitable[bool]], seconds: float = WAIT) -> None:
    """Poll ``check`` every POLL until it holds or ``seconds`` pass (the assertion after it says
    what failed)."""
    for _ in range(round(seconds / POLL)):
        if await check():
            return
        await asyncio.sleep(POLL)


async def equals(value: Awaitable[Any], expected: Any) -> bool:
    return await value == expected


async def now(value: bool) -> bool:
    return value


async def keys_of(client: Redis, prefix: str) -> list[str]:
    return sorted([key.decode() async for key in client.scan_iter(match=f"{prefix}:*")])


async def test_a_sessions_keys_share_one_hash_tag_and_slot(redis_client: Redis, redis_prefix: str) -> None:
    sessions = RedisSessionStore(redis_client, prefix=redis_prefix)
    events = RedisEventLog(redis_client, 4, 4, prefix=redis_prefix)
    session_id = "AbC-123_xyz"
    await sessions.create(SessionRecord(session_id, 1.0, 1.0))
    await events.append(session_id, STANDALONE_STREAM, b"{}", None, delivered=False)
    await events.append(session_id, STANDALONE_STREAM, b"{}", None, delivered=True)
    await events.append(session_id, "r1", b"{}", None, delivered=True)
    found = await keys_of(redis_client, redis_prefix)
    tag = f"{{{session_id}}}"
    per_session = [key for key in found if tag in key]
    assert per_session == sorted(
        [
            f"{redis_prefix}:{tag}",
            f"{redis_prefix}:{tag}:ev",
            f"{redis_prefix}:{tag}:b:",
            f"{redis_prefix}:{tag}:h:",
            f"{redis_prefix}:{tag}:h:r1",
        ]
    )
    assert {key_slot(key.encode()) for key in per_session} == {key_slot(session_id.encode())}
    index = [key for key in found if tag not in key]
    assert index == [f"{redis_prefix}:{{sessions}}:born", f"{redis_prefix}:{{sessions}}:seen"]
    assert len({key_slot(key.encode()) for key in index}) == 1
    # The record is plain data (JSON) without last_seen and version, which have fields of their own.
    stored = await redis_client.hgetall(f"{redis_prefix}:{tag}")
    assert set(stored) == {b"d", b"s", b"v"} and stored[b"d"].startswith(b'{"id":"AbC-123_xyz"')


@pytest.mark.parametrize("bad", ["", "a{b", "a}b", "a b", "é", "x" * 201, "a\nb"])
async def test_ids_that_could_break_the_hash_tag_name_no_session(
    redis_client: Redis, redis_prefix: str, bad: str
) -> None:
    sessions = RedisSessionStore(redis_client, prefix=redis_prefix)
    events = RedisEventLog(redis_client, 4, 4, prefix=redis_prefix)
    with pytest.raises(ValueError):
        await sessions.create(SessionRecord(bad, 0.0, 0.0))
    assert await sessions.get(bad) is None
    assert await sessions.delete(bad) is False
    with pytest.raises(ValueError):
        await events.append(bad, STANDALONE_STREAM, b"{}", None, delivered=True)
    assert await events.replay_after(bad, "0") == []
    assert await events.forget(bad) == []
    assert await keys_of(redis_client, redis_prefix) == []


async def test_a_client_that_decodes_responses_is_refused(redis_server: RedisServer) -> None:
    client = Redis.from_url(redis_server.url, decode_responses=True)
    try:
        with pytest.raises(ValueError, match="decode_responses"):
            RedisSessionStore(client)
        with pytest.raises(ValueError, match="decode_responses"):
            RedisEventLog(client)
    finally:
        await client.aclose()


async def test_touch_written_behind_shares_one_round_trip_and_skips_an_ended_session(
    redis_client: Redis, redis_prefix: str
) -> None:
    writes = WriteBehind(redis_client)
    sessions = RedisSessionStore(redis_client, idle_timeout=100.0, prefix=redis_prefix, writes=writes)
    records = [SessionRecord(f"s{n}", 0.0, 0.0) for n in range(3)]
    for record in records:
        await sessions.create(record)
    await sessions.delete("s2")
    for n, record in enumerate(records):
        await sessions.touch(record, 10.0 + n)  # queued: returns before Redis has it
        assert record.last_seen == 10.0 + n
    assert not writes.idle
    await writes.flushed()
    assert [(await sessions.get(f"s{n}")).last_seen for n in range(2)] == [10.0, 11.0]  # type: ignore[union-attr]
    assert await sessions.get("s2") is None  # a touch does not bring an ended session back
    assert await sessions.count() == 2
    assert await sessions.expired(10.5 + 100.0, 100.0, 1000.0) == ["s0"]


async def test_record_keys_expire_after_the_idle_timeout_and_touch_renews(
    redis_client: Redis, redis_prefix: str
) -> None:
    sessions = RedisSessionStore(
        redis_client, idle_timeout=100.0, max_lifetime=1000.0, expiry_slack=5.0, prefix=redis_prefix
    )
    record = SessionRecord("s", 0.0, 0.0)
    await sessions.create(record)
    key = sessions.key("s")
    first = await redis_client.pttl(key)
    assert 100_000 < first <= 105_000
    # Near the end of its lifetime, the key lives only as long as the session may.
    await sessions.touch(record, 990.0)
    assert 5_000 < await redis_client.pttl(key) <= 15_000
    # Gone from Redis (as a crashed worker would leave it): get says so, and the index still
    # lists it until the app reaps it through expired() and delete().
    await redis_client.delete(key)
    assert await sessions.get("s") is None
    assert await sessions.count() == 1
    assert await sessions.expired(2000.0, 100.0, 1000.0) == ["s"]
    assert await sessions.delete("s") is False
    assert await sessions.count() == 0


async def test_a_session_redis_expires_is_gone(redis_client: Redis, redis_prefix: str) -> None:
    sessions = RedisSessionStore(
        redis_client, idle_timeout=0.05, max_lifetime=1000.0, expiry_slack=0.05, prefix=redis_prefix
    )
    await sessions.create(SessionRecord("s", 0.0, 0.0))
    await polled(lambda: equals(sessions.get("s"), None))
    assert await sessions.get("s") is None


async def test_event_keys_expire_after_the_grace_of_an_ended_stream(redis_client: Redis, redis_prefix: str) -> None:
    events = RedisEventLog(redis_client, 4, 4, ttl=600.0, prefix=redis_prefix)
    await events.append("s", "r1", b"a", None, delivered=True)
    history = events.keys("s", "r1")[1]
    assert 590_000 < await redis_client.pttl(history) <= 600_000
    await events.end_stream("s", "r1", keep_for=0.1)
    assert 0 < await redis_client.pttl(history) <= 100
    await events.end_stream("s", "r1", keep_for=60.0)  # a second end does not extend the grace
    assert await redis_client.pttl(history) <= 100
    # An event logged during the grace does not bring the stream back to life.
    await events.append("s", "r1", b"late", None, delivered=True)
    assert await redis_client.pttl(history) <= 100
    await polled(lambda: equals(redis_client.exists(history), 0))
    assert await events.replay_after("s", "0/r1") == []
    # After the grace, the same name is a fresh stream again, with the session's ttl.
    event, _ = await events.append("s", "r1", b"again", None, delivered=True)
    assert event.event_id == "3/r1"
    assert await redis_client.pttl(history) > 500_000


async def test_history_is_trimmed_approximately_but_replay_is_exact(redis_client: Redis, redis_prefix: str) -> None:
    events = RedisEventLog(redis_client, 4, 10, prefix=redis_prefix)
    for n in range(500):
        await events.append("s", "r1", b"%d" % n, None, delivered=True)
    kept = await redis_client.xlen(events.keys("s", "r1")[1])
    assert 10 <= kept < 500  # MAXLEN ~: bounded, at least the replay size
    assert [e.message for e in await events.replay_after("s", "0/r1")] == [b"%d" % n for n in range(490, 500)]


async def test_two_workers_share_records(redis_client: Redis, second_client: Redis, redis_prefix: str) -> None:
    worker_a = RedisSessionStore(redis_client, prefix=redis_prefix)
    worker_b = RedisSessionStore(second_client, prefix=redis_prefix)
    await worker_a.create(SessionRecord("s", 1.0, 1.0))
    on_b = await worker_b.get("s")
    assert on_b is not None
    on_b.log_level = "error"
    on_b.revision = "2025-11-25"
    await worker_b.save(on_b)
    on_a = await worker_a.get("s")
    assert on_a is not None and (on_a.log_level, on_a.revision) == ("error", "2025-11-25")
    # touch on one worker does not undo a save on the other (last_seen is its own field).
    await worker_a.touch(on_a, 9.0)
    on_b.log_level = "debug"
    await worker_b.save(on_b)
    final = await worker_a.get("s")
    assert final is not None and (final.last_seen, final.log_level) == (9.0, "debug")


async def test_concurrent_creates_of_one_id_let_exactly_one_win(
    redis_client: Redis, second_client: Redis, redis_prefix: str
) -> None:
    stores = [RedisSessionStore(client, prefix=redis_prefix) for client in (redis_client, second_client)]
    results = await asyncio.gather(
        *(store.create(SessionRecord("same", float(n), float(n))) for n, store in enumerate(stores * 5)),
        return_exceptions=True,
    )
    assert sum(result is None for result in results) == 1
    assert all(isinstance(result, ValueError) for result in results if result is not None)
    assert await stores[1].count() == 1


async def test_two_workers_appending_to_one_session_get_distinct_ids(
    redis_client: Redis, second_client: Redis, redis_prefix: str
) -> None:
    logs = [RedisEventLog(client, 100, 100, prefix=redis_prefix) for client in (redis_client, second_client)]

    async def write(log: RedisEventLog, stream: str) -> list[str]:
        ids = []
        for n in range(40):
            event, _ = await log.append("s", stream, b"%d" % n, None, delivered=n % 2 == 0)
            ids.append(event.event_id)
        return ids

    first, second = await asyncio.gather(write(logs[0], STANDALONE_STREAM), write(logs[1], "r1"))
    numbers = [int(event_id.partition("/")[0]) for event_id in first + second]
    assert sorted(numbers) == list(range(1, 81))
    assert all("/" not in event_id for event_id in first) and all(e.endswith("/r1") for e in second)
    # What worker A logged, worker B replays (and takes the backlog of).
    replayed = await logs[1].replay_after("s", "0")
    assert [e.event_id for e in replayed] == first[0::2]
    taken = await logs[1].take_undelivered("s", STANDALONE_STREAM)
    assert [e.event_id for e in taken] == first[1::2]


async def test_a_bus_event_reaches_subscribers_of_other_workers(
    redis_client: Redis, second_client: Redis, redis_prefix: str
) -> None:
    channel = f"{redis_prefix}:events"
    worker_a, worker_b = RedisEventBus(redis_client, channel=channel), RedisEventBus(second_client, channel=channel)
    try:
        await worker_a.start()
        await worker_b.start()
        on_a, on_b = worker_a.subscribe(), worker_b.subscribe()
        await worker_b.publish({"kind": "resource", "uri": "file:///x"})
        for events in (on_a, on_b):
            assert await asyncio.wait_for(anext(events), WAIT) == {"kind": "resource", "uri": "file:///x"}
        await on_a.aclose()  # type: ignore[attr-defined]
        await on_b.aclose()  # type: ignore[attr-defined]
    finally:
        await worker_a.close()
        await worker_b.close()


# --- Redis unavailable, then back ----------------------------------------------------------------


async def every_call(sessions: RedisSessionStore, events: RedisEventLog, bus: RedisEventBus) -> list[Any]:
    """One call of every store method; returns their results or the exceptions they raised."""
    record = SessionRecord("s2", 0.0, 0.0)
    calls: list[Any] = [
        sessions.create(record),
        sessions.get("s"),
        sessions.save(record),
        sessions.touch(record, 1.0),
        sessions.count(),
        sessions.expired(10.0, 1.0, 1.0),
        events.append("s", STANDALONE_STREAM, b"x", None, delivered=False),
        events.take_undelivered("s", STANDALONE_STREAM),
        events.replay_after("s", "0"),
        events.mark("s", "r1"),
        events.end_stream("s", "r1", 1.0),
        events.backlog_size("s"),
        events.forget("s"),
        sessions.delete("s2"),
        bus.publish({"n": 1}),
        bus.start(timeout=0.5),
    ]
    results = []
    for call in calls:
        try:
            results.append(await call)
        except Exception as error:
            results.append(error)
    return results


async def test_every_method_raises_store_unavailable_while_redis_is_down_and_works_when_it_returns(
    own_redis_server: RedisServer,
) -> None:
    async with client_for(own_redis_server, "mcp") as client:
        sessions = RedisSessionStore(client)
        events = RedisEventLog(client, 4, 4)
        bus = RedisEventBus(client)
        await sessions.create(SessionRecord("s", 0.0, 0.0))
        await events.append("s", STANDALONE_STREAM, b"before", None, delivered=True)

        own_redis_server.stop()
        failures = await every_call(sessions, events, bus)
        assert all(isinstance(result, StoreUnavailable) for result in failures), failures
        assert issubclass(StoreUnavailable, StoreError)

        own_redis_server.start()  # same port, empty (no persistence), no cached scripts
        results = await every_call(sessions, events, bus)
        assert not [result for result in results if isinstance(result, Exception)], results
        events_heard = bus.subscribe()
        await bus.publish({"n": 2})
        assert await asyncio.wait_for(anext(events_heard), WAIT) == {"n": 2}
        await events_heard.aclose()  # type: ignore[attr-defined]
        await bus.close()
        assert await sessions.get("s2") is None  # created, then deleted by the round of calls
        assert await sessions.count() == 0


async def test_the_bus_reconnects_after_redis_comes_back(own_redis_server: RedisServer) -> None:
    async with client_for(own_redis_server, "mcp") as client:
        bus = RedisEventBus(client, max_backoff=0.2)
        await bus.start()
        events = bus.subscribe()
        own_redis_server.stop()
        with pytest.raises(StoreUnavailable):
            await bus.publish({"n": "lost"})
        own_redis_server.start()
        heard = None
        for _ in range(round(WAIT / 0.2)):  # until the bus has noticed, reconnected and subscribed again
            await bus.publish({"n": 3})
            try:
                heard = await asyncio.wait_for(anext(events), 0.2)
                break
            except TimeoutError:
                continue
        assert heard == {"n": 3}  # the same subscription goes on
        await events.aclose()  # type: ignore[attr-defined]
        await bus.close()


async def test_a_worker_follows_a_stream_another_worker_writes(
    redis_client: Redis, second_client: Redis, redis_prefix: str
) -> None:
    running_on_a = RedisEventLog(redis_client, 8, 8, prefix=redis_prefix)
    resumed_on_b = RedisEventLog(second_client, 8, 8, prefix=redis_prefix)
    cursor = await running_on_a.mark("s", "r1")

    async def handler() -> None:
        for n in range(3):
            await asyncio.sleep(0.02)
            await running_on_a.append("s", "r1", b"progress %d" % n, None, delivered=True)
        await running_on_a.append("s", "r1", b"response", None, delivered=True)
        await running_on_a.end_stream("s", "r1", keep_for=30.0)

    task = asyncio.get_running_loop().create_task(handler())
    seen: list[bytes] = []
    ended = False
    for _ in range(50):  # bounded: at most one wake-up per event
        found, ended = await resumed_on_b.follow("s", cursor, timeout=WAIT)
        seen += [event.message for event in found]
        cursor = found[-1].event_id if found else cursor
        if ended:
            break
    await task
    assert ended and seen == [b"progress 0", b"progress 1", b"progress 2", b"response"]


async def _cancelled_loop(command: Any) -> None:
    """A reader loop around one command, as the router's and the event bus's are."""
    while True:
        with redis_unavailable("test"):
            await command()


@pytest.mark.parametrize("lost_as", ["a normal return", "a connection error"])
async def test_a_cancellation_the_command_lost_is_raised_when_the_command_ends(lost_as: str) -> None:
    # The two ways redis-py's asyncio client was seen to lose a cancellation landing in a read.
    async def command() -> list[Any]:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            if lost_as == "a normal return":
                return []
            raise ConnectionError("Connection closed by server.") from None
        return []

    task = asyncio.get_running_loop().create_task(_cancelled_loop(command))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5.0)


async def test_a_connection_error_with_no_cancellation_is_store_unavailable() -> None:
    async def command() -> None:
        raise ConnectionError("refused")

    with pytest.raises(StoreUnavailable, match=r"Redis is unavailable \(test\): refused"), redis_unavailable("test"):
        await command()


# --- record announcements (RecordWatch) ---------------------------------------------------------


class Heard:
    """What a ``RecordWatch`` announced, in order."""

    def __init__(self) -> None:
        self.changes: list[tuple[str | None, int | None]] = []

    def __call__(self, session_id: str | None, version: int | None) -> None:
        self.changes.append((session_id, version))

    async def until(self, change: tuple[str | None, int | None]) -> None:
        for _ in range(round(WAIT / POLL)):
            if change in self.changes:
                return
            await asyncio.sleep(POLL)
        raise AssertionError(f"{change} was never announced: {self.changes}")


async def test_saves_and_deletes_by_any_worker_are_announced(
    redis_client: Redis, second_client: Redis, redis_prefix: str
) -> None:
    watching = RedisSessionStore(redis_client, prefix=redis_prefix)
    other = RedisSessionStore(second_client, prefix=redis_prefix)
    watch, heard = watching.changes(), Heard()
    await watch.start(heard)
    try:
        assert heard.changes == [(None, None)] and watch.trusted  # nothing read before counts
        await other.create(SessionRecord("s", 1.0, 1.0))
        copy = await other.get("s")
        assert copy is not None
        copy.log_level = "error"
        await other.save(copy)
        await heard.until(("s", 1))
        await other.touch(copy, 5.0)  # activity is not a change of the record
        assert await other.delete("s")
        await heard.until(("s", None))
        assert heard.changes == [(None, None), ("s", 1), ("s", None)]
        assert watch.announced == 3
    finally:
        await watch.aclose()
    assert not watch.trusted


async def test_a_broken_subscription_distrusts_every_copy_until_it_is_made_again(
    own_redis_server: RedisServer,
) -> None:
    async with client_for(own_redis_server, "mcp") as client:
        store = RedisSessionStore(client)
        watch, heard = store.changes(), Heard()
        await watch.start(heard)
        try:
            own_redis_server.stop()
            await polled(lambda: now(not watch.trusted))
            assert not watch.trusted and heard.changes[-1] == (None, None)
            own_redis_server.start()
            await polled(lambda: now(watch.trusted), 2 * WAIT)
            assert watch.trusted  # subscribed again by itself
            missed = len(heard.changes)
            await store.create(SessionRecord("s", 1.0, 1.0))
            record = await store.get("s")
            assert record is not None
            await store.save(record)
            await heard.until(("s", 1))  # and announcements flow again
            assert (None, None) in heard.changes[1:missed]
        finally:
            await watch.aclose()


async def test_a_stream_logged_behind_is_seen_by_another_worker_in_order_with_its_end(
    redis_client: Redis, second_client: Redis, redis_prefix: str
) -> None:
    writer = RedisEventLog(redis_client, 4, 8, prefix=redis_prefix)
    reader = RedisEventLog(second_client, 4, 8, prefix=redis_prefix)
    logged = [await writer.log("s", "r1.ab", b"m%d" % n) for n in range(5)]
    await writer.end_stream("s", "r1.ab", 5.0)  # queued behind the events: nothing waits for Redis here
    await writer.writes.flushed()
    events, ended = await reader.follow("s", "0/r1.ab", 0)
    assert [e.event_id for e in events] == [e.event_id for e in logged] and ended


async def test_writes_behind_survive_redis_forgetting_its_scripts(redis_client: Redis, redis_prefix: str) -> None:
    log = RedisEventLog(redis_client, 4, 8, prefix=redis_prefix)
    first = await log.log("s", "r1", b"a")
    await log.writes.flushed()
    await redis_client.script_flush()  # as after a restart: EVALSHA gets NOSCRIPT
    await log.end_stream("s", "r1", 5.0)
    await log.writes.flushed()
    assert await log.follow("s", first.event_id, 0) == ([], True)


async def test_a_logged_stream_names_its_writer_to_every_worker_until_it_ends(
    redis_client: Redis, second_client: Redis, redis_prefix: str
) -> None:
    writing = RedisEventLog(redis_client, 4, 8, prefix=redis_prefix, writer_id="worker-a")
    other = RedisEventLog(second_client, 4, 8, prefix=redis_prefix, writer_id="worker-b")
    assert await other.writer("s", "r1.ab") is None
    await writing.open_stream("s", "r1.ab", 7)  # in Redis once it returns: no flush here
    assert await other.writer("s", "r1.ab") == StreamWriter("worker-a", 7)
    await writing.log("s", "r1.ab", b"first")
    assert await other.writer("s", STANDALONE_STREAM) is None  # (every worker writes that one)
    await writing.log("s", "r1.ab", b"second")
    await writing.end_stream("s", "r1.ab", 5.0)
    await writing.writes.flushed()
    assert await other.writer("s", "r1.ab") is None
    await writing.open_stream("s", "r2.ab", "x")  # a writer that dies: the worker a client resumes it on ends it
    await other.end_abandoned("s", "r2.ab", b"interrupted", 5.0)
    assert await other.writer("s", "r2.ab") is None


async def test_a_long_sessions_log_stays_bounded_by_ended_streams_kept(redis_client: Redis, redis_prefix: str) -> None:
    log = RedisEventLog(redis_client, 10, 10, ttl=600.0, prefix=redis_prefix, ended_streams_kept=3)
    for n in range(20):
        await log.append("s", f"r{n}", b"reply", None, delivered=True)
        await log.end_stream("s", f"r{n}", keep_for=60.0)
    meta = log.keys("s", "r0")[0]
    fields = sorted(name.decode() for name in await redis_client.hkeys(meta))
    assert fields == ["e:r17", "e:r18", "e:r19", "s:r17", "s:r18", "s:r19", "seq"]
    keys = sorted([key.decode() async for key in redis_client.scan_iter(match=f"{redis_prefix}:{{s}}*")])
    base = f"{redis_prefix}:{{s}}"
    assert keys == sorted([f"{base}:ev", f"{base}:ended", *(f"{base}:h:r{n}" for n in (17, 18, 19))])
    await log.forget("s")
    assert [key async for key in redis_client.scan_iter(match=f"{redis_prefix}:{{s}}*")] == []
