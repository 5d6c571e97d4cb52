"""Durable task records (``RedisTaskStore(durable_replicas=N)``): a task's creation and end wait
(``WAIT``) until a replica has them, on a real primary with a real replica; a replica that is
gone makes the write wait ``durable_ms`` and count as unreplicated, never fail; the same on the
test cluster (each primary with a replica)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from fixtures.redis_cluster import RedisCluster
from fixtures.redis_server import RedisServer, redis_asyncio, redis_running
from mcp_sse_server.engine.records import TaskRecord
from mcp_sse_server.stores.redis_cluster import client_for_url
from mcp_sse_server.stores.redis_tasks import RedisTaskStore

WAIT = 10.0


@pytest.fixture
def primary_and_replica(tmp_path: Path) -> Iterator[tuple[RedisServer, RedisServer]]:
    for name in ("p", "r"):
        (tmp_path / name).mkdir()
    with redis_running(tmp_path / "p") as primary, redis_running(tmp_path / "r") as replica:
        client = redis.Redis(port=replica.port)
        client.replicaof("127.0.0.1", primary.port)  # type: ignore[no-untyped-call]
        deadline = time.monotonic() + WAIT
        while client.info("replication").get("master_link_status") != "up":
            assert time.monotonic() < deadline, "the replica never synced"
            time.sleep(0.05)
        client.close()
        yield primary, replica


def record(task_id: str) -> TaskRecord:
    now = time.time()
    return TaskRecord(
        id=task_id, revision="2026-07-28", created_at=now, updated_at=now, ttl_ms=60_000, poll_interval_ms=1000
    )


async def test_a_durable_creation_and_end_are_on_the_replica_when_they_return(
    primary_and_replica: tuple[RedisServer, RedisServer],
) -> None:
    primary, replica = primary_and_replica
    writer = redis_asyncio.Redis.from_url(primary.url)
    reader = redis_asyncio.Redis.from_url(replica.url)
    store = RedisTaskStore(writer, prefix="d", durable_replicas=1, durable_ms=5_000)
    try:
        for n in range(20):  # (the first loads the scripts: a fresh primary has none)
            task_id = f"task{n}"
            await store.create(record(task_id))
            assert await reader.hget(store.keys(task_id)[0], "s") == b"working"  # read on the replica
            assert await store.finish(task_id, "completed", {"result": {}}, None, time.time()) is not None
            assert await reader.hget(store.keys(task_id)[0], "s") == b"completed"
        assert store.unreplicated == 0
    finally:
        await writer.aclose()
        await reader.aclose()


async def test_without_a_replica_a_durable_write_waits_its_time_then_stands_and_is_counted(
    primary_and_replica: tuple[RedisServer, RedisServer],
) -> None:
    primary, replica = primary_and_replica
    replica.stop()
    writer = redis_asyncio.Redis.from_url(primary.url)
    store = RedisTaskStore(writer, prefix="d", durable_replicas=1, durable_ms=300)
    try:
        deadline = time.monotonic() + WAIT
        while (await writer.info("replication"))["connected_slaves"] != 0:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        await store.create(record("alone"))
        assert store.unreplicated == 1  # WAIT answered 0 replicas after its 300 ms
        assert (await store.get("alone", time.time())) is not None  # written all the same
        assert await store.finish("alone", "failed", None, "gone", time.time()) is not None
        assert store.unreplicated == 2
    finally:
        await writer.aclose()


async def test_durable_task_records_on_the_cluster(redis_cluster: RedisCluster, redis_prefix: str) -> None:
    client = client_for_url(redis_cluster.url)
    store = RedisTaskStore(client, prefix=redis_prefix, durable_replicas=1, durable_ms=5_000)
    try:
        for n in range(12):  # (ids spread over the three shards)
            task_id = f"c{n}"
            await store.create(record(task_id))
            assert await store.finish(task_id, "completed", {"result": {}}, None, time.time()) is not None
            assert (await store.get(task_id, time.time())).status == "completed"  # type: ignore[union-attr]
        assert store.unreplicated == 0
    finally:
        await client.aclose()
