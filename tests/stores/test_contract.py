"""The store interfaces' rules, run against every implementation: memory and Redis.

Each test takes ``sessions``, ``events`` or ``bus``, parametrized over the
in-process store and the Redis one (a real redis-server), so the two are held
to the same behaviour, not each to its own tests.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest

from fixtures.redis_server import client_for
from mcp_sse_server.engine.records import SessionRecord, TaskRecord
from mcp_sse_server.engine.stores import STANDALONE_STREAM, EventBus, EventLog, SessionStore, StaleRecord, TaskStore
from mcp_sse_server.stores import MemoryEventBus, MemoryEventLog, MemorySessionStore, MemoryTaskStore

BACKLOG = 3
REPLAY = 4
WAIT = 5.0  # a safety net against hangs, never reached when the code works

IMPLEMENTATIONS = ["memory", "redis"]


@pytest.fixture(params=IMPLEMENTATIONS)
async def sessions(request: pytest.FixtureRequest, redis_prefix: str) -> AsyncIterator[SessionStore]:
    if request.param == "memory":
        yield MemorySessionStore()
        return
    from mcp_sse_server.stores.redis import RedisSessionStore

    async with client_for(request.getfixturevalue("redis_server"), redis_prefix) as client:
        yield RedisSessionStore(client, idle_timeout=100.0, max_lifetime=1000.0, prefix=redis_prefix)


@pytest.fixture(params=IMPLEMENTATIONS)
async def events(request: pytest.FixtureRequest, redis_prefix: str) -> AsyncIterator[EventLog]:
    if request.param == "memory":
        yield MemoryEventLog(BACKLOG, REPLAY)
        return
    from mcp_sse_server.stores.redis import RedisEventLog

    async with client_for(request.getfixturevalue("redis_server"), redis_prefix) as client:
        yield RedisEventLog(client, BACKLOG, REPLAY, ttl=600.0, prefix=redis_prefix)


@pytest.fixture(params=IMPLEMENTATIONS)
async def events_keeping_two(request: pytest.FixtureRequest, redis_prefix: str) -> AsyncIterator[EventLog]:
    """An event log that keeps at most two ended streams of a session."""
    if request.param == "memory":
        yield MemoryEventLog(10, 10, ended_streams_kept=2)
        return
    from mcp_sse_server.stores.redis import RedisEventLog

    async with client_for(request.getfixturevalue("redis_server"), redis_prefix) as client:
        yield RedisEventLog(client, 10, 10, ttl=600.0, prefix=redis_prefix, ended_streams_kept=2)


@pytest.fixture(params=IMPLEMENTATIONS)
async def tasks(request: pytest.FixtureRequest, redis_prefix: str) -> AsyncIterator[TaskStore]:
    if request.param == "memory":
        yield MemoryTaskStore()
        return
    from mcp_sse_server.stores.redis_tasks import RedisTaskStore

    async with client_for(request.getfixturevalue("redis_server"), redis_prefix) as client:
        store = RedisTaskStore(client, prefix=redis_prefix)
        yield store
        await store.aclose()


@pytest.fixture(params=IMPLEMENTATIONS)
async def bus(request: pytest.FixtureRequest, redis_prefix: str) -> AsyncIterator[EventBus]:
    if request.param == "memory":
        yield MemoryEventBus()
        return
    from mcp_sse_server.stores.redis import RedisEventBus

    async with client_for(request.getfixturevalue("redis_server"), redis_prefix) as client:
        shared = RedisEventBus(client, channel=f"{redis_prefix}:events")
        await shared.start()
        yield shared
        await shared.close()


def record(session_id: str, created: float = 0.0, seen: float | None = None) -> SessionRecord:
    return SessionRecord(session_id, created, created if seen is None else seen)


# --- SessionStore ----------------------------------------------------------------------------


async def test_create_get_and_plain_data_round_trip(sessions: SessionStore) -> None:
    original = SessionRecord(
        "s-1",
        10.5,
        11.25,
        revision="2025-11-25",
        client_info={"name": "c", "version": "1"},
        client_capabilities={"sampling": {}, "elicitation": {"url": {}}},
        log_level="debug",
        subscriptions=["file:///a", "file:///b"],
    )
    await sessions.create(original)
    loaded = await sessions.get("s-1")
    assert loaded == original
    assert await sessions.get("nobody") is None


async def test_create_refuses_an_id_taken(sessions: SessionStore) -> None:
    await sessions.create(record("dup"))
    with pytest.raises(ValueError):
        await sessions.create(record("dup", 5.0))
    loaded = await sessions.get("dup")
    assert loaded is not None and loaded.created_at == 0.0


async def test_save_writes_back_a_changed_record_and_ignores_unknown_ones(sessions: SessionStore) -> None:
    await sessions.create(record("s"))
    loaded = await sessions.get("s")
    assert loaded is not None
    loaded.revision = "2025-06-18"
    loaded.log_level = "warning"
    loaded.subscriptions = [*loaded.subscriptions, "x://1"]  # (replaced, never changed in place)
    await sessions.save(loaded)
    again = await sessions.get("s")
    assert again is not None
    assert (again.revision, again.log_level, again.subscriptions) == ("2025-06-18", "warning", ["x://1"])
    await sessions.save(record("never-created"))
    assert await sessions.get("never-created") is None


async def test_save_refuses_a_copy_older_than_the_record(sessions: SessionStore) -> None:
    await sessions.create(record("s"))
    first = await sessions.get("s")
    assert first is not None
    older = dataclasses.replace(first, subscriptions=list(first.subscriptions))  # read at the same version
    first.log_level = "error"
    await sessions.save(first)
    assert first.version == 1
    older.log_level = "debug"
    with pytest.raises(StaleRecord):
        await sessions.save(older)
    stored = await sessions.get("s")
    assert stored is not None and (stored.log_level, stored.version) == ("error", 1)  # nothing was written


async def test_touch_moves_last_seen(sessions: SessionStore) -> None:
    await sessions.create(record("s", 1.0))
    loaded = await sessions.get("s")
    assert loaded is not None
    await sessions.touch(loaded, 42.5)
    assert loaded.last_seen == 42.5
    again = await sessions.get("s")
    assert again is not None and again.last_seen == 42.5 and again.created_at == 1.0


async def test_delete_and_count(sessions: SessionStore) -> None:
    assert await sessions.count() == 0
    for n in range(3):
        await sessions.create(record(f"s{n}"))
    assert await sessions.count() == 3
    assert await sessions.delete("s1") is True
    assert await sessions.delete("s1") is False
    assert await sessions.get("s1") is None
    assert await sessions.count() == 2


async def test_present_says_which_records_are_still_there(sessions: SessionStore) -> None:
    await sessions.create(record("kept"))
    await sessions.create(record("gone"))
    await sessions.delete("gone")
    assert await sessions.present(["kept", "gone", "never", "bad id"]) == {"kept"}
    assert await sessions.present([]) == set()


async def test_expired_by_idle_time_or_lifetime(sessions: SessionStore) -> None:
    await sessions.create(record("old", created=0.0, seen=0.0))  # past its lifetime at 100
    await sessions.create(record("idle", created=60.0, seen=60.0))  # silent 40 s at 100
    await sessions.create(record("busy", created=60.0, seen=60.0))
    await sessions.create(record("edge", created=70.0, seen=70.0))  # silent exactly 30 s: expired (>=)
    busy = await sessions.get("busy")
    assert busy is not None
    await sessions.touch(busy, 95.0)
    found = await sessions.expired(100.0, idle_timeout=30.0, max_lifetime=90.0)
    assert sorted(found) == ["edge", "idle", "old"]
    for session_id in found:
        await sessions.delete(session_id)
    assert await sessions.expired(100.0, idle_timeout=30.0, max_lifetime=90.0) == []
    assert await sessions.count() == 1


# --- EventLog ----------------------------------------------------------------------------------


async def test_ids_count_across_the_session_and_name_their_stream(events: EventLog) -> None:
    first, _ = await events.append("s", STANDALONE_STREAM, b"a", None, delivered=True)
    second, _ = await events.append("s", "r1", b"b", None, delivered=True)
    third, _ = await events.append("s", STANDALONE_STREAM, b"c", None, delivered=False)
    assert [first.event_id, second.event_id, third.event_id] == ["1", "2/r1", "3"]
    other, _ = await events.append("t", "r1", b"x", None, delivered=True)
    assert other.event_id == "1/r1"  # per session


async def test_a_logged_stream_is_read_back_in_order_and_an_append_comes_after_it(events: EventLog) -> None:
    logged = [await events.log("s", "r1", b"m%d" % n) for n in range(3)]
    numbers = [int(event.event_id.partition("/")[0]) for event in logged]
    assert numbers == sorted(set(numbers)) and all(event.event_id.endswith("/r1") for event in logged)
    replay = await events.replay_after("s", "0/r1")  # read back at once, by the log that wrote them
    assert [(e.event_id, e.message) for e in replay] == [(e.event_id, e.message) for e in logged]
    standalone, _ = await events.append("s", STANDALONE_STREAM, b"g", None, delivered=True)
    assert await events.replay_after("s", "0") == [standalone]  # streams apart
    # Another writer (a reaper, for a worker that died) appends after the logged events.
    terminal, _ = await events.append("s", "r1", b"end", None, delivered=True)
    assert [e.message for e in await events.replay_after("s", logged[-1].event_id)] == [b"end"]
    assert int(terminal.event_id.partition("/")[0]) > numbers[-1]
    await events.end_stream("s", "r1", 5.0)
    assert await events.follow("s", terminal.event_id, 0) == ([], True)


async def test_replay_after_returns_only_later_events_of_the_named_stream(events: EventLog) -> None:
    ids = []
    for n, stream in enumerate(["r1", STANDALONE_STREAM, "r1", "r2", "r1"]):
        event, _ = await events.append("s", stream, b"m%d" % n, None, delivered=True)
        ids.append(event.event_id)
    assert ids == ["1/r1", "2", "3/r1", "4/r2", "5/r1"]
    replay = await events.replay_after("s", "1/r1")
    assert [(e.event_id, e.message) for e in replay] == [("3/r1", b"m2"), ("5/r1", b"m4")]
    assert [e.event_id for e in await events.replay_after("s", "0/r1")] == ["1/r1", "3/r1", "5/r1"]
    assert [e.event_id for e in await events.replay_after("s", "0")] == ["2"]
    assert await events.replay_after("s", "5/r1") == []
    assert await events.replay_after("s", "0/nope") == []
    assert await events.replay_after("other", "0/r1") == []  # another session's ids replay nothing


@pytest.mark.parametrize("bad", ["", "x", "1x", "-1", "²", "1" * 20, "1/{evil}", "1/a b"])
async def test_malformed_ids_replay_nothing(events: EventLog, bad: str) -> None:
    await events.append("s", STANDALONE_STREAM, b"a", None, delivered=True)
    assert await events.replay_after("s", bad) == []


async def test_history_keeps_the_newest_replay_size_events(events: EventLog) -> None:
    for n in range(REPLAY + 3):
        await events.append("s", "r1", b"%d" % n, None, delivered=True)
    replay = await events.replay_after("s", "0/r1")
    assert [e.message for e in replay] == [b"%d" % n for n in range(3, REPLAY + 3)]


async def test_request_ids_round_trip(events: EventLog) -> None:
    await events.append("s", STANDALONE_STREAM, b"a", 7, delivered=True)
    await events.append("s", STANDALONE_STREAM, b"b", "srv-1", delivered=True)
    await events.append("s", STANDALONE_STREAM, b"c", None, delivered=True)
    assert [e.request_id for e in await events.replay_after("s", "0")] == [7, "srv-1", None]


async def test_backlog_drops_its_oldest_when_full_and_says_which(events: EventLog) -> None:
    dropped_all = []
    for n in range(BACKLOG + 2):
        event, dropped = await events.append("s", STANDALONE_STREAM, b"%d" % n, n, delivered=False)
        assert event.event_id == str(n + 1)
        dropped_all.append(dropped)
    assert dropped_all[:BACKLOG] == [None] * BACKLOG
    assert [(d.event_id, d.message, d.request_id) for d in dropped_all[BACKLOG:] if d] == [
        ("1", b"0", 0),
        ("2", b"1", 1),
    ]
    assert await events.replay_after("s", "0") == []  # not delivered: no history yet
    taken = await events.take_undelivered("s", STANDALONE_STREAM)
    assert [e.event_id for e in taken] == ["3", "4", "5"]
    assert await events.take_undelivered("s", STANDALONE_STREAM) == []
    # Taken means delivered: now in the history, for replay.
    assert [e.event_id for e in await events.replay_after("s", "3")] == ["4", "5"]


async def test_take_undelivered_takes_only_its_stream(events: EventLog) -> None:
    await events.append("s", STANDALONE_STREAM, b"g", None, delivered=False)
    await events.append("s", "r1", b"p", None, delivered=False)
    assert [e.message for e in await events.take_undelivered("s", "r1")] == [b"p"]
    assert [e.message for e in await events.take_undelivered("s", STANDALONE_STREAM)] == [b"g"]
    assert await events.take_undelivered("nobody", STANDALONE_STREAM) == []


async def test_a_zero_backlog_keeps_nothing(redis_client: Any, redis_prefix: str) -> None:
    logs: list[EventLog] = [MemoryEventLog(0, REPLAY)]
    from mcp_sse_server.stores.redis import RedisEventLog

    logs.append(RedisEventLog(redis_client, 0, REPLAY, prefix=redis_prefix))
    for log in logs:
        event, dropped = await log.append("s", STANDALONE_STREAM, b"a", 1, delivered=False)
        assert dropped == event and event.event_id == "1"
        assert await log.take_undelivered("s", STANDALONE_STREAM) == []


async def test_mark_is_a_cursor_that_stores_nothing(events: EventLog) -> None:
    await events.append("s", "r1", b"before", None, delivered=True)
    cursor = await events.mark("s", "r1")
    assert cursor == "2/r1"
    assert await events.replay_after("s", cursor) == []
    await events.append("s", "r1", b"after", None, delivered=True)
    assert [e.message for e in await events.replay_after("s", cursor)] == [b"after"]
    assert await events.mark("s", STANDALONE_STREAM) == "4"


async def test_end_stream_keeps_events_for_the_grace_or_drops_them_now(events: EventLog) -> None:
    await events.append("s", "r1", b"kept", None, delivered=True)
    await events.append("s", "r2", b"gone", None, delivered=True)
    await events.end_stream("s", "r1", keep_for=60.0)
    await events.end_stream("s", "r2", keep_for=0)
    assert [e.message for e in await events.replay_after("s", "0/r1")] == [b"kept"]
    assert await events.replay_after("s", "0/r2") == []
    await events.end_stream("s", "r1", keep_for=60.0)  # twice: harmless
    await events.end_stream("s", "nope", keep_for=60.0)
    await events.end_stream("nobody", "r1", keep_for=60.0)
    # Ids go on increasing after a stream ended.
    event, _ = await events.append("s", "r3", b"x", None, delivered=True)
    assert event.event_id == "3/r3"


async def test_forget_returns_what_was_never_delivered_and_drops_everything(events: EventLog) -> None:
    await events.append("s", STANDALONE_STREAM, b"seen", None, delivered=True)
    await events.append("s", STANDALONE_STREAM, b"waiting", 9, delivered=False)
    await events.append("s", "r1", b"p", None, delivered=True)
    await events.append("t", STANDALONE_STREAM, b"other", None, delivered=False)
    lost = await events.forget("s")
    assert [(e.event_id, e.message, e.request_id) for e in lost] == [("2", b"waiting", 9)]
    assert await events.replay_after("s", "0") == []
    assert await events.replay_after("s", "0/r1") == []
    assert await events.take_undelivered("s", STANDALONE_STREAM) == []
    assert await events.forget("s") == []
    assert [e.message for e in await events.take_undelivered("t", STANDALONE_STREAM)] == [b"other"]
    event, _ = await events.append("s", STANDALONE_STREAM, b"new", None, delivered=True)
    assert event.event_id == "1"  # a forgotten session starts over


# --- EventBus ---------------------------------------------------------------------------------


async def next_event(events: Any) -> Any:
    return await asyncio.wait_for(anext(events), WAIT)


async def test_every_subscriber_gets_every_event_in_order(bus: EventBus) -> None:
    first, second = bus.subscribe(), bus.subscribe()
    for n in range(3):
        await bus.publish({"kind": "tools", "n": n})
    for events in (first, second):
        assert [(await next_event(events))["n"] for _ in range(3)] == [0, 1, 2]
    await first.aclose()  # type: ignore[attr-defined]
    await bus.publish({"kind": "resource", "uri": "file:///x"})
    assert await next_event(second) == {"kind": "resource", "uri": "file:///x"}
    await second.aclose()  # type: ignore[attr-defined]


async def test_a_subscription_hears_what_is_published_after_the_call(bus: EventBus) -> None:
    await bus.publish({"n": "before"})
    events = bus.subscribe()  # registered now, iterated later
    await bus.publish({"n": "after"})
    heard = [await next_event(events)]
    if heard[0] != {"n": "after"}:
        heard.append(await next_event(events))
    # In process, exactly what came after. Through Redis an event published just before may
    # still be on its way and be heard too (harmless for listen: a spurious list change).
    expected = (
        [[{"n": "after"}]] if isinstance(bus, MemoryEventBus) else [[{"n": "after"}], [{"n": "before"}, {"n": "after"}]]
    )
    assert heard in expected
    await events.aclose()  # type: ignore[attr-defined]


async def test_a_closed_subscription_ends_its_iteration(bus: EventBus) -> None:
    events = bus.subscribe()
    await bus.publish({"n": 1})
    received = [(await next_event(events))["n"]]
    await events.aclose()  # type: ignore[attr-defined]
    received += [event["n"] async for event in events]
    assert received == [1]


def test_the_package_exports_every_store_and_imports_redis_only_on_use() -> None:
    import subprocess
    import sys

    code = (
        "import sys, mcp_sse_server.stores as s; assert 'redis' not in sys.modules, 'eager'; "
        "assert all(getattr(s, name) is not None for name in s.__all__); assert 'redis' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --- following a stream (another worker's request) ------------------------------------------------


async def test_follow_returns_what_is_there_at_once(events: EventLog) -> None:
    first, _ = await events.append("s", "r1", b"a", None, delivered=True)
    await events.append("s", "r1", b"b", None, delivered=True)
    found, ended = await asyncio.wait_for(events.follow("s", first.event_id, timeout=WAIT), WAIT)
    assert [e.message for e in found] == [b"b"] and ended is False


async def test_follow_waits_for_the_next_event(events: EventLog) -> None:
    cursor = await events.mark("s", "r1")

    async def later() -> None:
        await asyncio.sleep(0.05)
        await events.append("s", STANDALONE_STREAM, b"elsewhere", None, delivered=True)  # another stream
        await events.append("s", "r1", b"next", None, delivered=True)

    writer = asyncio.get_running_loop().create_task(later())
    found: list[Any] = []
    for _ in range(10):  # a wake-up by another stream's event may return nothing: follow again
        found, ended = await asyncio.wait_for(events.follow("s", cursor, timeout=WAIT), WAIT + 1)
        if found:
            break
    await writer
    assert [e.message for e in found] == [b"next"] and ended is False


async def test_follow_gives_up_after_its_timeout(events: EventLog) -> None:
    cursor = await events.mark("s", "r1")
    assert await asyncio.wait_for(events.follow("s", cursor, timeout=0.05), WAIT) == ([], False)


async def test_follow_says_when_the_stream_ended(events: EventLog) -> None:
    cursor = await events.mark("s", "r1")
    await events.append("s", "r1", b"progress", None, delivered=True)
    last, _ = await events.append("s", "r1", b"response", None, delivered=True)
    await events.end_stream("s", "r1", keep_for=60.0)
    found, ended = await asyncio.wait_for(events.follow("s", cursor, timeout=WAIT), WAIT)
    assert [e.message for e in found] == [b"progress", b"response"] and ended is True
    assert await asyncio.wait_for(events.follow("s", last.event_id, timeout=WAIT), WAIT) == ([], True)
    # The end mark is no event: replays do not show it.
    assert [e.message for e in await events.replay_after("s", cursor)] == [b"progress", b"response"]


async def test_a_follower_waiting_wakes_when_the_stream_ends(events: EventLog) -> None:
    last, _ = await events.append("s", "r1", b"response", None, delivered=True)

    async def later() -> None:
        await asyncio.sleep(0.05)
        await events.end_stream("s", "r1", keep_for=60.0)

    ender = asyncio.get_running_loop().create_task(later())
    assert await asyncio.wait_for(events.follow("s", last.event_id, timeout=WAIT), WAIT) == ([], True)
    await ender


async def test_follow_of_a_malformed_id_ends_at_once(events: EventLog) -> None:
    assert await asyncio.wait_for(events.follow("s", "x/r1", timeout=WAIT), WAIT) == ([], True)


async def test_a_stream_that_ended_without_events_is_followed_to_its_end(events: EventLog) -> None:
    cursor = await events.mark("s", "r1")
    await events.end_stream("s", "r1", keep_for=60.0)
    assert await asyncio.wait_for(events.follow("s", cursor, timeout=WAIT), WAIT) == ([], True)
    assert await events.replay_after("s", cursor) == []


async def test_an_abandoned_stream_ends_with_an_event_past_any_its_writer_sent(events: EventLog) -> None:
    logged = [await events.log("s", "r1", b"m%d" % n) for n in range(2)]
    unlogged = f"{int(logged[-1].event_id.partition('/')[0]) + 5}/r1"  # sent by a writer that died first
    terminal = await events.end_abandoned("s", "r1", b"interrupted", 5.0)
    assert await events.replay_after("s", unlogged) == [terminal]
    assert await events.follow("s", unlogged, 0) == ([terminal], True)


async def test_a_session_keeps_at_most_ended_streams_kept_completed_streams(events_keeping_two: EventLog) -> None:
    log = events_keeping_two
    for n in range(1, 5):
        await log.append("s", f"r{n}", b"reply %d" % n, None, delivered=True)
        await log.end_stream("s", f"r{n}", keep_for=60.0)
    # The two most recent completed streams wait out their grace; the older ones are gone.
    assert await log.replay_after("s", "0/r1") == [] and await log.replay_after("s", "0/r2") == []
    assert [e.message for e in await log.replay_after("s", "0/r3")] == [b"reply 3"]
    assert [e.message for e in await log.replay_after("s", "0/r4")] == [b"reply 4"]
    # A stream still running is not counted and never dropped for the bound.
    await log.append("s", "r5", b"progress", None, delivered=True)
    await log.end_stream("s", "r6", keep_for=60.0)  # unknown stream: nothing to keep
    await log.append("s", "r7", b"reply 7", None, delivered=True)
    await log.end_stream("s", "r7", keep_for=60.0)
    assert [e.message for e in await log.replay_after("s", "0/r5")] == [b"progress"]
    assert await log.replay_after("s", "0/r3") == []
    assert [e.message for e in await log.replay_after("s", "0/r7")] == [b"reply 7"]


async def test_an_ended_stream_is_dropped_once_its_grace_is_over(events: EventLog) -> None:
    await events.append("s", "r1", b"first", None, delivered=True)
    await events.end_stream("s", "r1", keep_for=0.05)
    await asyncio.sleep(0.1)
    await events.append("s", "r2", b"second", None, delivered=True)
    await events.end_stream("s", "r2", keep_for=60.0)  # (the end of another stream sweeps the session's)
    assert await events.replay_after("s", "0/r1") == []
    assert [e.message for e in await events.replay_after("s", "0/r2")] == [b"second"]


NOW = 1_800_000_000.0


def task(task_id: str = "t1", ttl_ms: int | None = 60_000) -> TaskRecord:
    return TaskRecord(task_id, "2026-07-28", NOW, NOW, ttl_ms, 1000, tool="slow", principal=["iss", "sub", None])


async def test_a_task_is_read_back_as_created_and_expires_at_its_ttl(tasks: TaskStore) -> None:
    await tasks.create(task())
    with pytest.raises(ValueError, match="duplicate"):
        await tasks.create(task())
    got = await tasks.get("t1", NOW + 1)
    assert got is not None and (got.status, got.tool, got.ttl_ms, got.created_at) == ("working", "slow", 60_000, NOW)
    assert got.principal == ["iss", "sub", None] and got.status_message is None and got.outcome is None
    assert await tasks.get("t1", NOW + 60) is None  # past its ttl
    assert await tasks.get("nope", NOW) is None


async def test_questions_are_keyed_once_answered_once_and_taken_once(tasks: TaskStore) -> None:
    await tasks.create(task())
    asked = await tasks.ask("t1", {"method": "elicitation/create", "params": {"message": "a?"}}, NOW + 1)
    assert asked is not None
    first, record = asked
    assert record.status == "input_required" and record.input_requests[first]["params"] == {"message": "a?"}
    second, _ = await tasks.ask("t1", {"method": "elicitation/create", "params": {}}, NOW + 1) or ("", None)
    assert second not in ("", first)
    answered = await tasks.answer("t1", {first: {"action": "accept"}, "never-asked": {"x": 1}}, NOW + 2)
    assert answered is not None and answered.status == "input_required" and list(answered.input_requests) == [second]
    assert answered.answers == {first: {"action": "accept"}} and answered.updated_at == NOW + 2
    again = await tasks.answer("t1", {first: {"action": "decline"}}, NOW + 3)  # answered already: ignored
    assert again is not None and again.version == answered.version
    assert await tasks.take_answer("t1", first) == {"action": "accept"}
    assert await tasks.take_answer("t1", first) is None
    done = await tasks.answer("t1", {second: {"action": "cancel"}}, NOW + 4)
    assert done is not None and done.status == "working" and done.input_requests == {}
    third, _ = await tasks.ask("t1", {"method": "roots/list", "params": {}}, NOW + 5) or ("", None)
    assert third not in (first, second)  # keys are never reused


async def test_terminal_is_for_good(tasks: TaskStore) -> None:
    await tasks.create(task())
    await tasks.ask("t1", {"method": "elicitation/create", "params": {}}, NOW)
    cancelling = await tasks.request_cancel("t1", NOW + 1)
    assert cancelling is not None and cancelling.cancel_requested and cancelling.status == "input_required"
    finished = await tasks.finish("t1", "completed", {"result": {"content": []}}, None, NOW + 2)
    assert finished is not None and finished.status == "completed" and finished.input_requests == {}
    assert finished.outcome == {"result": {"content": []}} and finished.status_message is None
    assert await tasks.finish("t1", "failed", {"error": {"code": -1, "message": "x"}}, "x", NOW + 3) is None
    assert await tasks.ask("t1", {"method": "x", "params": {}}, NOW + 3) is None
    after = await tasks.get("t1", NOW + 3)
    assert after is not None and after.status == "completed" and after.version == finished.version
    with pytest.raises(ValueError, match="terminal"):
        await tasks.finish("t1", "working", None, None, NOW)
    await tasks.create(task("t2"))
    failed = await tasks.finish("t2", "failed", {"error": {"code": -32603, "message": "m"}}, "m", NOW)
    assert failed is not None and failed.status_message == "m"


async def test_wait_returns_at_a_change_or_at_its_timeout(tasks: TaskStore) -> None:
    await tasks.create(task())
    record = await tasks.get("t1", NOW)
    assert record is not None
    async with asyncio.timeout(WAIT):
        await tasks.wait("t1", record.version, 0.05)  # nothing changes: the timeout
        waiting = asyncio.ensure_future(tasks.wait("t1", record.version, WAIT))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        await tasks.request_cancel("t1", NOW + 1)
        await waiting  # woken by the change, long before WAIT
        await tasks.wait("t1", record.version, WAIT)  # the version moved on: at once
        await tasks.wait("gone", 0, WAIT)  # no such task: at once


async def test_a_dead_workers_unfinished_tasks_end_failed(tasks: TaskStore) -> None:
    for task_id, owner in (("t1", "doomed"), ("t2", "doomed"), ("t3", "alive")):
        record = task(task_id)
        record.worker_id = owner
        await tasks.create(record)
    await tasks.finish("t2", "completed", {"result": {"content": []}}, None, NOW)
    assert await tasks.owned_by("doomed") in (["t1"], ["t1", "t2"])  # (an ended task may linger)
    assert await tasks.fail_owned_by("doomed", NOW + 1) == 1
    failed = await tasks.get("t1", NOW + 1)
    assert failed is not None and failed.status == "failed" and failed.outcome is not None
    assert failed.outcome["error"]["code"] == -32603 and failed.status_message == failed.outcome["error"]["message"]
    assert [(await tasks.get(t, NOW + 1)).status for t in ("t2", "t3")] == ["completed", "working"]  # type: ignore[union-attr]
    assert await tasks.owned_by("doomed") == []


async def test_a_sessions_tasks_are_listed_oldest_first_while_they_live(tasks: TaskStore) -> None:
    for n, (session_id, ttl_ms) in enumerate((("s1", 60_000), ("s2", 60_000), ("s1", 5_000), ("s1", 60_000))):
        record = task(f"t{n}", ttl_ms)
        record.revision, record.session_id, record.created_at = "2025-11-25", session_id, NOW + n
        await tasks.create(record)
    await tasks.create(task("extension"))  # (no session: never listed)
    assert [record.id for record in await tasks.of_session("s1", NOW + 4)] == ["t0", "t2", "t3"]
    assert [record.id for record in await tasks.of_session("s1", NOW + 10)] == ["t0", "t3"]  # t2's ttl passed
    assert [record.id for record in await tasks.of_session("s2", NOW + 4)] == ["t1"]
    assert await tasks.of_session("nobody", NOW) == []
    assert await tasks.sweep(NOW + 10) in (0, 1)  # (Redis expires keys by itself)
    assert [record.id for record in await tasks.of_session("s1", NOW + 10)] == ["t0", "t3"]
