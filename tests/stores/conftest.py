"""The Redis fixtures of the store tests: a real redis-server (``redis_server``, session-scoped, or
``own_redis_server`` for one test), a fresh key prefix per test (``redis_prefix``) whose keys are
deleted afterwards, clients of it, and ``workers``: apps (workers) that share one Redis, one test
clock and one gate, for the tests of what crosses workers. The helpers (``RedisServer``,
``client_for``, ``open_on``) are in tests/fixtures/redis_server.py.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from fixtures.http_app import Clock, Gate, http_app
from fixtures.redis_server import RedisServer, Workers, client_for, redis_asyncio, redis_running
from mcp_sse_server.stores.redis import RedisEventLog, RedisSessionStore
from mcp_sse_server.stores.redis_routing import WorkerMesh
from mcp_sse_server.transport.http import HttpLimits, McpHttpApp


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with redis_running(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
def own_redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server for this test alone (to stop and restart it)."""
    with redis_running(tmp_path) as server:
        yield server


@pytest.fixture
def redis_prefix() -> str:
    return f"t{secrets.token_hex(6)}"


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
async def workers(gate: Gate, redis_server: RedisServer, redis_prefix: str) -> AsyncIterator[Workers]:
    """Workers on one Redis under the test's prefix, shut down at the end of the test."""
    clock = Clock()
    apps: list[McpHttpApp] = []
    async with client_for(redis_server, redis_prefix) as client:

        def worker(name: str | None = None, *, heartbeat_ttl: float = 10.0) -> McpHttpApp:
            limits = HttpLimits()
            store = RedisSessionStore(client, prefix=redis_prefix)
            events = RedisEventLog(client, limits.backlog_limit, limits.replay_buffer_size, prefix=redis_prefix)
            coordinator = (
                None
                if name is None
                else WorkerMesh(client, name, heartbeat_ttl=heartbeat_ttl, prefix=redis_prefix).coordinator(
                    events, store
                )
            )
            app = http_app(
                None, gate, clock, limits=limits, session_store=store, event_log=events, coordinator=coordinator
            )
            apps.append(app)
            return app

        yield worker
        for app in apps:
            await app.shutdown(deadline=0.2)
