"""The Redis-shared built-ins with a real redis-server and two workers, each an ``McpHttpServer``
on its own socket: one rate-limit budget for both, one response cache for both, dropped on
either worker's list change through the Redis event bus."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from fixtures.keys import ISSUER, RESOURCE, SigningKey
from fixtures.redis_cluster import RedisCluster, redis_cluster_running
from fixtures.redis_server import RedisServer, client_for, redis_asyncio, redis_running
from mcp_sse_server import McpServer
from mcp_sse_server.auth import JwtVerifier
from mcp_sse_server.auth.resource import ResourceServer
from mcp_sse_server.engine.stores import StoreUnavailable
from mcp_sse_server.middleware import RATE_LIMITED, RateLimit, RedisBuckets, RedisCache, ResponseCache
from mcp_sse_server.stores.redis import RedisEventBus
from mcp_sse_server.stores.redis_cluster import cluster_client
from mcp_sse_server.transport.http import HttpSettings

from .conftest import build, post, serving

BOUND = 10.0  # seconds: only catches a hang


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey("k1", "ES256")


@pytest.fixture
async def redis(redis_server: RedisServer, redis_prefix: str) -> AsyncIterator[redis_asyncio.Redis]:
    async with client_for(redis_server, redis_prefix) as client:
        yield client


def settings(key: SigningKey) -> HttpSettings:
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, keys={"keys": [key.jwk()]})
    return HttpSettings(json_response=True, auth=ResourceServer(RESOURCE, [ISSUER], verifier=verifier))


@contextlib.asynccontextmanager
async def two_workers(make: Callable[[], McpServer], key: SigningKey) -> AsyncIterator[tuple[str, str]]:
    async with serving(make(), settings(key)) as a, serving(make(), settings(key)) as b:
        yield a.endpoint, b.endpoint


@pytest.mark.parametrize("last", [0, 1])
async def test_two_workers_share_one_budget(redis: Any, redis_prefix: str, key: SigningKey, last: int) -> None:
    budget = 5

    def worker() -> McpServer:
        return build(RateLimit(rate=0.001, burst=budget, store=RedisBuckets(redis, prefix=redis_prefix)))

    alice, bob = key.sign(sub="alice"), key.sign(sub="bob")
    async with two_workers(worker, key) as urls, httpx.AsyncClient(timeout=BOUND) as client:
        echo = {"name": "echo", "arguments": {}}
        for n in range(budget):  # alternating workers: a, b, a, b, a
            reply = await post(client, urls[n % 2], "tools/call", echo, alice)
            assert "result" in reply, reply
        refused = await post(client, urls[last], "tools/call", echo, alice)
        assert refused["error"]["code"] == RATE_LIMITED and refused["error"]["message"] == "Rate limit exceeded"
        assert refused["error"]["data"]["retryAfterMs"] > 0
        assert "result" in await post(client, urls[last], "tools/call", echo, bob)  # another principal's budget


async def test_concurrent_takes_never_overspend(redis: Any, redis_prefix: str) -> None:
    buckets = [RedisBuckets(redis, prefix=redis_prefix) for _ in range(2)]
    waits = await asyncio.gather(*(buckets[n % 2].take("p", 0.001, 10) for n in range(40)))
    assert sum(1 for wait in waits if wait == 0) == 10


async def test_redis_out_of_reach_refuses_or_fails_open(tmp_path: Path) -> None:
    with redis_running(tmp_path) as own:
        client = redis_asyncio.Redis.from_url(own.url, socket_timeout=BOUND)
        own.stop()
    try:
        with pytest.raises(StoreUnavailable):
            await RedisBuckets(client).take("p", 1.0, 1)
        assert await RedisBuckets(client, fail_open=True).take("p", 1.0, 1) == 0
        cache = RedisCache(client)
        assert await cache.get("tools", "k") is None  # a miss, not a failure
        await cache.put("tools", "k", b"{}", 1.0)
    finally:
        await client.aclose()


async def test_a_change_on_one_worker_drops_the_shared_entries_on_the_other(
    redis: Any, redis_prefix: str, key: SigningKey
) -> None:
    servers: list[McpServer] = []

    def worker() -> McpServer:
        cache = ResponseCache(60.0, tools={"echo"}, store=RedisCache(redis, prefix=redis_prefix))
        server = build(cache)
        server.use_shared(event_bus=RedisEventBus(redis, channel=f"{redis_prefix}:events"))
        servers.append(server)
        return server

    token = key.sign(sub="alice")
    echo = {"name": "echo", "arguments": {}}
    async with two_workers(worker, key) as (a, _), httpx.AsyncClient(timeout=BOUND) as client:
        for server in servers:
            await server.event_bus.start()  # type: ignore[attr-defined]
        first = await post(client, a, "tools/call", echo, token)
        assert await post(client, a, "tools/call", echo, token) == first  # a hit: echo ran once
        servers[1].remove_tool("big")  # worker b's tools change; b never served a request
        for _ in range(200):  # bounded: Redis pub/sub delivers within a few milliseconds
            again = await post(client, a, "tools/call", echo, token)
            if again != first:
                break
            await asyncio.sleep(0.02)
        assert again["result"]["content"][0]["text"] == "echo  #2"  # worker a ran echo anew
        for server in servers:
            await server.event_bus.close()  # type: ignore[attr-defined]


async def test_a_shared_cache_answers_the_other_worker(redis: Any, redis_prefix: str, key: SigningKey) -> None:
    servers: list[McpServer] = []

    def worker() -> McpServer:
        server = build(ResponseCache(60.0, tools={"echo"}, store=RedisCache(redis, prefix=redis_prefix)))
        servers.append(server)
        return server

    token = key.sign(sub="alice")
    async with two_workers(worker, key) as (a, b), httpx.AsyncClient(timeout=BOUND) as client:
        echo = {"name": "echo", "arguments": {"text": "hi"}}
        first = await post(client, a, "tools/call", echo, token)
        second = await post(client, b, "tools/call", echo, token)
        assert second["result"] == first["result"]
        assert [len(server.runs) for server in servers] == [1, 0]  # type: ignore[attr-defined]
        other = await post(client, b, "tools/call", echo, key.sign(sub="bob"))
        assert [len(server.runs) for server in servers] == [1, 1] and "result" in other  # type: ignore[attr-defined]


async def test_a_redis_bucket_refills_at_its_rate(redis: Any, redis_prefix: str) -> None:
    buckets = RedisBuckets(redis, prefix=redis_prefix)
    waits = [await buckets.take("p", 20.0, 1) for _ in range(5)]  # (a slow machine may see a refill between)
    wait = next(wait for wait in waits if wait)  # refused: a token is back in at most 50 ms
    assert 1 <= wait <= 50
    await asyncio.sleep(wait / 1000 + 0.05)  # longer than Redis said
    assert await buckets.take("p", 20.0, 1) == 0
    assert await redis.pttl(f"{redis_prefix}:rl:p") > 0  # an idle bucket expires


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    with redis_cluster_running(tmp_path_factory.mktemp("cluster")) as running:
        yield running


async def test_on_a_cluster_two_workers_spend_one_budget_per_caller(cluster: RedisCluster) -> None:
    """Each caller's bucket is in a slot of its own: a batch of several callers is one script call
    per slot (a single call would be a CROSSSLOT error), and the budget is still exact."""
    clients = [cast(Any, cluster_client(cluster.url)) for _ in range(2)]
    try:
        buckets = [RedisBuckets(client, prefix="cluster-test") for client in clients]
        callers = [f"caller-{n}" for n in range(6)]
        assert len({clients[0].keyslot(f"cluster-test:rl:{caller}") for caller in callers}) > 1
        takes = [buckets[n % 2].take(callers[n % 6], 0.001, 5) for n in range(120)]
        waits = await asyncio.wait_for(asyncio.gather(*takes), BOUND)
        for index, caller in enumerate(callers):
            taken = [wait for n, wait in enumerate(waits) if n % 6 == index and wait == 0]
            assert len(taken) == 5, caller  # 20 asked through two workers, the burst of 5 given
    finally:
        for client in clients:
            await client.aclose()


async def test_on_a_cluster_the_cache_is_shared_and_dropped_across_workers(
    cluster: RedisCluster, key: SigningKey
) -> None:
    """Every script and command of the cache names one slot (a group's entries share its
    generations' hash tag): on a cluster, one worker's entry answers the other, and a list
    change on either drops it on both."""
    clients = [cast(Any, cluster_client(cluster.url)) for _ in range(2)]
    servers: list[McpServer] = []
    prefix = "cache-test"

    def worker() -> McpServer:
        client = clients[len(servers)]
        server = build(ResponseCache(60.0, tools={"echo"}, store=RedisCache(client, prefix=prefix)))
        server.use_shared(event_bus=RedisEventBus(client, channel=f"{prefix}:events"))
        servers.append(server)
        return server

    token = key.sign(sub="alice")
    echo = {"name": "echo", "arguments": {}}
    try:
        async with two_workers(worker, key) as (a, b), httpx.AsyncClient(timeout=BOUND) as client:
            for server in servers:
                await server.event_bus.start()  # type: ignore[attr-defined]
            first = await post(client, a, "tools/call", echo, token)
            assert await post(client, b, "tools/call", echo, token) == first  # b answered from a's entry
            assert [len(server.runs) for server in servers] == [1, 0]  # type: ignore[attr-defined]
            servers[1].remove_tool("big")  # b's tools change: notifications/tools/list_changed
            for _ in range(200):  # bounded: Redis pub/sub delivers within a few milliseconds
                again = await post(client, a, "tools/call", echo, token)
                if again != first:
                    break
                await asyncio.sleep(0.02)
            assert again["result"]["content"][0]["text"] == "echo  #2"  # a ran echo anew
            for server in servers:
                await server.event_bus.close()  # type: ignore[attr-defined]
        # A resource read's entry names two generations (every read's and its URI's), in one slot.
        one, two = (RedisCache(client, prefix=prefix) for client in clients)
        slots = {clients[0].keyslot(name) for group in ("tools", "prompts") for name in one._generations(group)}
        assert len(slots) == 2  # (groups spread over the cluster: one slot per family)
        for uri in ("file:///a", "file:///b"):
            await one.put("resource:" + uri, "k", uri.encode(), 60.0)
        assert await two.get("resource:file:///a", "k") == b"file:///a"
        await two.drop("resource:file:///a")  # that resource updated
        assert await one.get("resource:file:///a", "k") is None
        assert await one.get("resource:file:///b", "k") == b"file:///b"
        await one.drop("resource:")  # the resource list changed: every read goes
        assert await two.get("resource:file:///b", "k") is None
    finally:
        for client in clients:
            await client.aclose()
