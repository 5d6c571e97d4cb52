"""Tasks across workers: two apps, each its own server and task runtime over one Redis (a real
redis-server): a task started on one is read, answered and cancelled through the other."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from fixtures.redis_server import RedisServer, client_for
from fixtures.tasks import Client, build
from mcp_sse_server.engine.jsonrpc import INTERNAL_ERROR
from mcp_sse_server.engine.records import TaskRecord
from mcp_sse_server.engine.tasks import TaskRuntime
from mcp_sse_server.stores.memory import MemoryEventLog, MemorySessionStore
from mcp_sse_server.stores.redis_routing import WorkerMesh, WorkerRegistry
from mcp_sse_server.stores.redis_tasks import RedisTaskStore
from mcp_sse_server.transport.http import McpHttpApp


@pytest.fixture
async def two(redis_server: RedisServer, redis_prefix: str) -> AsyncIterator[list[tuple[Client, Any]]]:
    """Two workers: (a client of its app, its server), each with its own Redis client."""
    async with client_for(redis_server, redis_prefix) as first, client_for(redis_server, redis_prefix) as second:
        stores = [RedisTaskStore(redis, prefix=redis_prefix) for redis in (first, second)]
        workers = []
        for n, store in enumerate(stores):
            server = build(TaskRuntime(store, worker_id=f"w{n}"))
            workers.append((Client(McpHttpApp(server)), server))
        yield workers
        for client, _ in workers:
            await client.app.shutdown(deadline=0)
        for store in stores:
            await store.aclose()


async def test_a_task_started_on_one_worker_is_read_and_finished_through_the_other(two: Any) -> None:
    (a, server_a), (b, _) = two
    task_id = (await a.call("slow", {"n": 3, "wait": True}))["taskId"]
    assert (await b.get(task_id))["status"] == "working"  # readable at once elsewhere
    server_a.release.set()
    done = await b.until(task_id, "completed")
    assert done["result"]["content"][0]["text"] == "slow 3"


async def test_a_question_asked_on_one_worker_is_answered_through_the_other(two: Any) -> None:
    (a, _), (b, _) = two
    task_id = (await a.call("ask", {"count": 1}))["taskId"]
    asked = await b.until(task_id, "input_required")
    (key,) = asked["inputRequests"]
    await b.result("tasks/update", {"taskId": task_id, "inputResponses": {key: {"action": "accept"}}})
    done = await a.until(task_id, "completed")  # the handler on A woke up with B's answer
    assert done["result"]["content"][0]["text"] == "accept"


async def test_a_cancel_through_the_other_worker_stops_a_busy_handler(two: Any) -> None:
    (a, _), (b, _) = two
    task_id = (await a.call("slow", {"wait": True}))["taskId"]
    await b.result("tasks/cancel", {"taskId": task_id})
    assert (await a.until(task_id, "cancelled"))["status"] == "cancelled"


async def test_a_worker_shutting_down_fails_its_running_tasks_for_every_worker(two: Any) -> None:
    (a, _), (b, _) = two
    task_id = (await a.call("slow", {"wait": True}))["taskId"]
    await a.app.shutdown(deadline=0)
    failed = await b.until(task_id, "failed")
    assert failed["error"]["code"] == INTERNAL_ERROR and "stopped" in failed["error"]["message"]


async def test_the_reaper_fails_the_tasks_of_a_worker_that_died(
    two: Any, redis_server: RedisServer, redis_prefix: str
) -> None:
    (a, _), (b, _) = two
    task_id = (await a.call("slow", {"wait": True}))["taskId"]  # runs on w0, which then "dies"
    async with client_for(redis_server, redis_prefix) as redis:
        reaper = WorkerMesh(redis, "reaper", heartbeat_ttl=30.0, prefix=redis_prefix)
        coordinator = reaper.coordinator(
            MemoryEventLog(4, 4), MemorySessionStore(), tasks=RedisTaskStore(redis, prefix=redis_prefix)
        )
        doomed = WorkerRegistry(redis, "w0", ttl=30.0, prefix=redis_prefix)
        await doomed.beat()
        await redis.delete(doomed.key("w0"))  # its liveness lease lapsed: w0 is dead
        assert await coordinator.reap_dead_workers() == ["w0"]
        failed = await b.get(task_id)  # (inside: leaving client_for empties the test's keys)
        assert failed["status"] == "failed" and failed["error"]["code"] == INTERNAL_ERROR
        assert failed["error"]["message"] == "Task interrupted: the server instance running it stopped"


async def test_ten_thousand_completed_tasks_expire_and_leave_nothing_in_redis(
    redis_server: RedisServer, redis_prefix: str
) -> None:
    async with client_for(redis_server, redis_prefix) as redis:
        store = RedisTaskStore(redis, prefix=redis_prefix)
        now = time.time()

        async def one(n: int) -> None:
            record = TaskRecord(
                f"t{n}",
                "2025-11-25" if n % 2 else "2026-07-28",
                now,
                now,
                15_000,  # ms: they all expire 15 s from now (making them takes about 5)
                1000,
                session_id=f"s{n % 7}" if n % 2 else None,
                worker_id="w0",
            )
            await store.create(record)
            assert await store.finish(record.id, "completed", {"result": {"content": []}}, None, now) is not None

        for start in range(0, 10_000, 50):  # (50 at a time: the client's pool holds that many connections)
            await asyncio.gather(*(one(n) for n in range(start, start + 50)))
        assert len([key async for key in redis.scan_iter(match=f"{redis_prefix}:*", count=1000)]) > 10_000
        assert await store.owned_by("w0") == []  # (each finish took its task off its owner's set)
        await asyncio.sleep(max(0.0, now + 15.1 - time.time()))
        left = [key async for key in redis.scan_iter(match=f"{redis_prefix}:*", count=1000)]
        assert left == []
        await store.aclose()
