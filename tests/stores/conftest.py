"""The Redis fixtures of the store tests: ``own_redis_server`` (a redis-server for one test), clients
of the shared one, and ``workers``: apps (workers) that share one Redis, one test clock and one
gate, for the tests of what crosses workers. ``redis_server`` (session-scoped) and ``redis_prefix``
(a fresh key prefix per test, whose keys are deleted afterwards) are in tests/conftest.py, shared
with tests/http_transport. The helpers (``RedisServer``, ``client_for``, ``redis_deployment``,
``open_on``) are in tests/fixtures/redis_server.py.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis

from fixtures.http_app import Clock, Gate, http_app
from fixtures.redis_cluster import RedisCluster, redis_cluster_running
from fixtures.redis_server import (
    RedisServer,
    Workers,
    client_for,
    redis_asyncio,
    redis_deployment,
    redis_running,
    shut_down,
)
from mcp_sse_server.transport.http import HttpLimits, McpHttpApp


@pytest.fixture
def own_redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server for this test alone (to stop and restart it)."""
    with redis_running(tmp_path) as server:
        yield server


@pytest.fixture
async def redis_client(redis_server: RedisServer, redis_prefix: str) -> AsyncIterator[redis_asyncio.Redis]:
    async with client_for(redis_server, redis_prefix) as client:
        yield client


@pytest.fixture
async def second_client(redis_server: RedisServer) -> AsyncIterator[redis_asyncio.Redis]:
    """Another connection pool to the same server: a second worker."""
    client = redis_asyncio.Redis.from_url(redis_server.url)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def workers_clock() -> Clock:
    """The clock every worker of ``workers`` reads (a test may move it)."""
    return Clock()


@pytest.fixture
async def workers(
    gate: Gate, redis_server: RedisServer, redis_prefix: str, workers_clock: Clock
) -> AsyncIterator[Workers]:
    """Workers on one Redis under the test's prefix, shut down at the end of the test."""
    clock = workers_clock
    apps: list[McpHttpApp] = []
    async with client_for(redis_server, redis_prefix) as client:

        def worker(name: str | None = None, *, heartbeat_ttl: float = 10.0) -> McpHttpApp:
            limits = HttpLimits()
            backend = redis_deployment(
                client,
                redis_prefix,
                limits,
                name,
                clock=clock,
                heartbeat_ttl=heartbeat_ttl,
                coordinated=name is not None,
            )
            app = http_app(None, gate, clock, limits, backend)
            apps.append(app)
            return app

        yield worker
        for app in apps:
            await shut_down(app, deadline=0.2)


# Each test uses a Redis database emptied for it (the served processes use the default key
# prefix); a server has 16, taken in turn (database 0 is the prefixed tests').
_DBS = itertools.cycle(range(1, 16))


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    """A Redis Cluster (3 primaries, 3 replicas) for the whole run, started on first use."""
    with redis_cluster_running(tmp_path_factory.mktemp("cluster")) as cluster:
        yield cluster


@pytest.fixture(params=["single", "cluster"])
def redis_url(request: pytest.FixtureRequest) -> str:
    """An empty Redis for the served processes: a database of one redis-server, or a whole
    Redis Cluster (``redis+cluster://``, emptied), each test once on each."""
    if request.param == "cluster":
        cluster: RedisCluster = request.getfixturevalue("redis_cluster")
        cluster.flush()
        return cluster.url
    redis_server: RedisServer = request.getfixturevalue("redis_server")
    db = next(_DBS)
    client = redis.Redis(port=redis_server.port)
    client.select(db)  # type: ignore[no-untyped-call]
    client.flushdb()
    client.close()
    return f"redis://127.0.0.1:{redis_server.port}/{db}"
