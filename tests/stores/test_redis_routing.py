"""The routing primitives for several workers: leases, the worker registry and its reaper,
per-worker inboxes. Two clients play two workers; a real redis-server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.crc import key_slot

from fixtures.redis_server import RedisServer, client_for
from mcp_sse_server.engine.stores import StoreUnavailable
from mcp_sse_server.stores.redis_routing import (
    Lease,
    WorkerInbox,
    WorkerRegistry,
    WorkerRouter,
    new_worker_id,
    reap_dead_workers,
    standalone_lease,
    worker_of,
)

WAIT = 5.0
POLL = 0.05


async def test_a_lease_has_one_owner_and_only_the_owner_renews_or_releases(
    redis_client: Redis, second_client: Redis, redis_prefix: str
) -> None:
    on_a = Lease(redis_client, f"{redis_prefix}:lease", ttl=30.0)
    on_b = Lease(second_client, f"{redis_prefix}:lease", ttl=30.0)
    assert await on_a.acquire("A") is True
    assert await on_b.acquire("B") is False
    assert await on_b.holder() == "A"
    assert await on_b.renew("B") is False
    assert await on_b.release("B") is False
    assert await on_a.renew("A") is True
    assert await on_a.release("A") is True
    assert await on_b.holder() is None
    assert await on_b.acquire("B") is True


async def test_take_supersedes_the_holder_and_names_it(redis_client: Redis, redis_prefix: str) -> None:
    lease = standalone_lease(redis_client, "sid-1", ttl=30.0, prefix=redis_prefix)
    assert lease.key == f"{redis_prefix}:{{sid-1}}:get"
    assert key_slot(lease.key.encode()) == key_slot(b"sid-1")  # the session's slot
    assert await lease.take("A:1") is None
    assert await lease.take("B:7") == "A:1"
    assert await lease.renew("A:1") is False  # the superseded holder cannot keep it
    assert await lease.holder() == "B:7"


async def test_a_lease_lapses_without_renewal(redis_client: Redis, redis_prefix: str) -> None:
    lease = Lease(redis_client, f"{redis_prefix}:short", ttl=0.05)
    assert await lease.acquire("A")
    for _ in range(round(WAIT / POLL)):
        if await lease.holder() is None:
            break
        await asyncio.sleep(POLL)
    assert await lease.acquire("B")


async def test_the_heartbeat_renews_the_kept_leases_in_its_pipeline(redis_client: Redis, redis_prefix: str) -> None:
    registry = WorkerRegistry(redis_client, "w1", ttl=30.0, prefix=redis_prefix)
    held = standalone_lease(redis_client, "sid-1", ttl=30.0, prefix=redis_prefix)
    lost = standalone_lease(redis_client, "sid-2", ttl=30.0, prefix=redis_prefix)
    for lease in (held, lost):
        assert await lease.take("w1:1") is None
        registry.keep(lease, "w1:1")
    await redis_client.pexpire(held.key, 1000)
    assert await lost.take("w2:1") == "w1:1"  # a newer GET on another worker
    await registry.beat()
    assert await redis_client.pttl(held.key) > 20_000  # renewed for a whole ttl
    assert await lost.holder() == "w2:1"  # not renewed for us, and no longer kept
    await redis_client.pexpire(lost.key, 1000)
    registry.drop(held, "w1:1")
    await redis_client.pexpire(held.key, 1000)
    await registry.beat()
    assert await redis_client.pttl(held.key) <= 1000 and await redis_client.pttl(lost.key) <= 1000
    await registry.forget("w1")


async def test_concurrent_acquires_grant_the_lease_once(
    redis_client: Redis, second_client: Redis, redis_prefix: str
) -> None:
    leases = [Lease(client, f"{redis_prefix}:race", ttl=30.0) for client in (redis_client, second_client)]
    granted = await asyncio.gather(*(lease.acquire(f"w{n}") for n, lease in enumerate(leases * 10)))
    assert sum(granted) == 1


async def test_an_inbox_carries_messages_between_workers_in_order(
    redis_client: Redis, second_client: Redis, redis_prefix: str
) -> None:
    inbox_a = WorkerInbox(redis_client, "A", prefix=redis_prefix)
    inbox_b = WorkerInbox(second_client, "B", prefix=redis_prefix)
    # Sent before A reads: still delivered (a Stream, not pub/sub).
    await inbox_b.send("A", {"type": "response", "session": "s", "message": {"jsonrpc": "2.0", "id": "A.1"}})
    await inbox_b.send("A", {"type": "cancel", "session": "s", "request": 5})
    received = await inbox_a.receive(block=WAIT)
    assert [m["type"] for m in received] == ["response", "cancel"]
    assert received[0]["message"]["id"] == "A.1"
    assert await inbox_a.receive(block=0.05) == []
    assert await redis_client.xlen(inbox_a.key("A")) == 0  # read entries are deleted (here by the idle read)
    for n in range(3):
        await inbox_b.send("A", {"type": "wake", "session": f"s{n}"})
    assert [m["session"] for m in await inbox_a.receive(block=WAIT, count=2)] == ["s0", "s1"]
    assert await redis_client.xlen(inbox_a.key("A")) == 1  # a full batch read is deleted at once
    assert [m["session"] for m in await inbox_a.receive(block=WAIT, count=2)] == ["s2"]
    assert await inbox_a.receive(block=0.05) == []
    assert await redis_client.xlen(inbox_a.key("A")) == 0

    async def later() -> None:
        await asyncio.sleep(0.05)
        await inbox_b.send("A", {"type": "release", "session": "s"})

    task = asyncio.get_running_loop().create_task(later())
    got = []
    for _ in range(round(WAIT / 0.5)):  # a blocking read wakes up when the message lands
        got = await inbox_a.receive(block=0.5)
        if got:
            break
    await task
    assert got == [{"type": "release", "session": "s"}]
    assert await inbox_b.receive(block=0.05) == []  # B's own inbox got nothing


async def test_the_registry_tells_live_workers_from_dead_ones(
    redis_client: Redis, second_client: Redis, redis_prefix: str
) -> None:
    live = WorkerRegistry(redis_client, "live", ttl=30.0, prefix=redis_prefix)
    doomed = WorkerRegistry(second_client, "doomed", ttl=0.1, prefix=redis_prefix)
    await live.start()
    await doomed.beat()  # one beat, then silence: a crashed process
    assert sorted(await live.workers()) == ["doomed", "live"]
    assert await live.alive("doomed")
    for _ in range(round(WAIT / POLL)):
        if await live.dead():
            break
        await asyncio.sleep(POLL)
    assert await live.dead() == ["doomed"]
    assert await live.alive("live")
    await live.stop()
    assert await doomed.workers() == ["doomed"]  # a clean stop leaves nothing to reap


async def test_one_reaper_reaps_a_dead_worker_once(
    redis_client: Redis, second_client: Redis, redis_prefix: str
) -> None:
    doomed = WorkerRegistry(second_client, "doomed", ttl=0.1, prefix=redis_prefix)
    await doomed.beat()
    await WorkerInbox(redis_client, "x", prefix=redis_prefix).send("doomed", {"type": "cancel"})
    clients = (redis_client, second_client)
    reapers = [WorkerRegistry(client, f"r{n}", ttl=30.0, prefix=redis_prefix) for n, client in enumerate(clients)]
    for reaper in reapers:
        await reaper.beat()
    for _ in range(round(WAIT / POLL)):
        if await reapers[0].dead():
            break
        await asyncio.sleep(POLL)
    handed: list[str] = []

    async def on_dead(worker_id: str) -> None:
        handed.append(worker_id)

    results = await asyncio.gather(*(reap_dead_workers(reaper, on_dead) for reaper in reapers))
    assert sorted(map(len, results)) == [0, 1]  # one reaper did it, the other found the lease taken or nothing
    assert handed == ["doomed"]
    assert sorted(await reapers[0].workers()) == ["r0", "r1"]
    assert not await redis_client.exists(reapers[0].key("doomed"), reapers[0].inbox_key("doomed"))
    # Nothing left to reap: a second sweep hands nothing over.
    assert await reap_dead_workers(reapers[0], on_dead) == []
    assert len(handed) == 1


async def test_a_failing_hand_over_leaves_the_worker_for_the_next_sweep(redis_client: Redis, redis_prefix: str) -> None:
    doomed = WorkerRegistry(redis_client, "doomed", ttl=0.05, prefix=redis_prefix)
    await doomed.beat()
    reaper = WorkerRegistry(redis_client, "reaper", ttl=30.0, prefix=redis_prefix)
    for _ in range(round(WAIT / POLL)):
        if await reaper.dead():
            break
        await asyncio.sleep(POLL)

    async def broken(worker_id: str) -> None:
        raise RuntimeError("could not write the terminal errors")

    with pytest.raises(RuntimeError):
        await reap_dead_workers(reaper, broken)
    assert await reaper.workers() == ["doomed"]  # still registered
    seen = []

    async def works(worker_id: str) -> None:
        seen.append(worker_id)

    assert await reap_dead_workers(reaper, works) == ["doomed"]  # the reaper lease was released
    assert seen == ["doomed"]


def test_worker_ids_are_unique_and_tag_safe() -> None:
    ids = {new_worker_id() for _ in range(50)}
    assert len(ids) == 50
    assert all("{" not in worker_id and "}" not in worker_id and " " not in worker_id for worker_id in ids)


async def test_routing_raises_store_unavailable_while_redis_is_down(own_redis_server: RedisServer) -> None:
    async with client_for(own_redis_server, "mcp") as client:
        registry = WorkerRegistry(client, "w", ttl=30.0)
        inbox = WorkerInbox(client, "w")
        lease = Lease(client, "mcp:lease", ttl=30.0)
        await registry.beat()
        own_redis_server.stop()
        for call in (registry.beat(), registry.dead(), inbox.send("w", {}), inbox.receive(0.05), lease.take("w")):
            with pytest.raises(StoreUnavailable):
                await call
        own_redis_server.start()
        await registry.beat()
        await inbox.send("w", {"n": 1})
        assert await inbox.receive(WAIT) == [{"n": 1}]
        assert await lease.acquire("w")


async def test_routers_deliver_inbox_messages_to_their_worker(
    redis_client: Redis, second_client: Redis, redis_prefix: str
) -> None:
    a = WorkerRouter(redis_client, "A", prefix=redis_prefix)
    b = WorkerRouter(second_client, "B", prefix=redis_prefix)
    heard: asyncio.Queue[tuple[str, dict[str, object]]] = asyncio.Queue()

    def deliver_to(name: str) -> Any:
        async def deliver(message: dict[str, object]) -> None:
            await heard.put((name, message))

        return deliver

    await a.start(deliver_to("A"))
    await b.start(deliver_to("B"))
    try:
        assert sorted(await a.registry.workers()) == ["A", "B"]
        ids = b.request_ids()
        assert [next(ids), next(ids)] == ["B.1", "B.2"]
        owner = worker_of("B.1")  # an answer to B's request reached A: its id names B
        assert owner == "B"
        await a.send(owner, {"type": "answer", "session": "sid", "message": '{"jsonrpc":"2.0","id":"B.1","result":{}}'})
        name, message = await asyncio.wait_for(heard.get(), WAIT)
        assert name == "B" and message["type"] == "answer" and message["session"] == "sid"
        await b.broadcast({"type": "wake", "session": "sid"})  # to every other worker, not itself
        name, message = await asyncio.wait_for(heard.get(), WAIT)
        assert (name, message) == ("A", {"type": "wake", "session": "sid"})
        await asyncio.sleep(0.05)
        assert heard.empty()
    finally:
        await a.stop()
        await b.stop()
    assert await a.registry.workers() == []


async def test_a_router_stops_however_its_blocked_inbox_read_is_cancelled(
    redis_client: Redis, redis_prefix: str
) -> None:
    # redis-py 8.1 loses about 1 in 40 cancellations that land in a blocking XREAD (it returns []
    # to the cancelled task); the router's reader loop then never ended and a worker's shutdown,
    # awaiting it, hung. Every stop must finish, wherever in the read the cancellation lands.
    async def deliver(message: dict[str, Any]) -> None:
        pass

    for turn in range(120):
        router = WorkerRouter(redis_client, prefix=redis_prefix)
        await router.start(deliver)
        await asyncio.sleep((turn % 12) * 0.002)  # cancellations at different points of the read
        await asyncio.wait_for(router.stop(), WAIT)
