"""Everything one worker needs to share sessions through Redis, built from a URL.

>>> stores = RedisStores.from_url("redis://127.0.0.1:6379/0", limits=limits)  # doctest: +SKIP
>>> await stores.start()  # doctest: +SKIP
>>> server.use_shared(event_bus=stores.bus, request_state=RequestStateSealer(keys))  # doctest: +SKIP
>>> http = await McpHttpServer.bind(server, limits=limits, **stores.bind_options())  # doctest: +SKIP
>>> ...  # doctest: +SKIP
>>> await http.close(); await stores.close()  # doctest: +SKIP

Build it in each worker process (after a fork, never before: a Redis client
is not shared across processes).

The sizes are plain numbers, or read from any object that has them (an
``HttpLimits``): the stores sit below the HTTP transport and import none of it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Final, Protocol

from redis.asyncio import Redis

from .redis import DEFAULT_PREFIX, RedisEventBus, RedisEventLog, RedisSessionStore, WriteBehind
from .redis_routing import RedisCoordinator, WorkerMesh
from .redis_tasks import RedisTaskStore

__all__ = ["DEFAULT_SIZES", "RedisStores", "StoreSizes"]


class StoreSizes(Protocol):
    """What ``RedisStores.from_url`` reads of ``limits`` (``transport.http.HttpLimits`` has them all)."""

    @property
    def session_idle_timeout(self) -> float:
        """Seconds of client silence that end a session."""

    @property
    def session_max_lifetime(self) -> float:
        """Seconds after which every session ends."""

    @property
    def backlog_limit(self) -> int:
        """Server messages kept for a session until its stream opens."""

    @property
    def replay_buffer_size(self) -> int:
        """Stream events kept for a reconnect with Last-Event-ID."""

    @property
    def stream_log_grace(self) -> float:
        """Seconds a request's stream stays resumable after its response."""

    @property
    def ended_streams_kept(self) -> int:
        """Ended streams of a session kept for their grace (the oldest dropped first)."""


@dataclass(frozen=True, slots=True)
class _Sizes:
    session_idle_timeout: float
    session_max_lifetime: float
    backlog_limit: int
    replay_buffer_size: int
    stream_log_grace: float
    ended_streams_kept: int


DEFAULT_SIZES: Final[StoreSizes] = _Sizes(
    session_idle_timeout=30 * 60.0,
    session_max_lifetime=12 * 3600.0,
    backlog_limit=256,
    replay_buffer_size=256,
    stream_log_grace=30.0,
    ended_streams_kept=64,
)
"""The sizes of ``HttpLimits()`` (``tests/core/test_layers.py`` checks that they agree)."""


@dataclass(slots=True)
class RedisStores:
    """One worker's Redis client, session store, event log, event bus, task store, its place
    among the workers (``router``, a ``WorkerMesh``: the name is kept for one release) and the
    app's ``coordinator`` over it."""

    redis: Redis
    sessions: RedisSessionStore
    events: RedisEventLog
    bus: RedisEventBus
    router: WorkerMesh
    coordinator: RedisCoordinator
    tasks: RedisTaskStore

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        limits: StoreSizes = DEFAULT_SIZES,
        idle_timeout: float | None = None,
        max_lifetime: float | None = None,
        backlog_limit: int | None = None,
        replay_buffer_size: int | None = None,
        prefix: str = DEFAULT_PREFIX,
        worker_ttl: float = 10.0,
        worker_id: str | None = None,
    ) -> RedisStores:
        """The stores of one worker on the Redis at ``url`` (``redis://``, ``rediss://``,
        ``unix://``), sized by the app's ``limits`` (an ``HttpLimits``; ``HttpLimits()``'s sizes
        when not given); a number given by name (``idle_timeout``, ``max_lifetime``,
        ``backlog_limit``, ``replay_buffer_size``) wins over ``limits``. ``worker_ttl``: seconds
        after its last heartbeat before a worker counts as dead and another one fails its requests."""
        if idle_timeout is None:
            idle_timeout = limits.session_idle_timeout
        if max_lifetime is None:
            max_lifetime = limits.session_max_lifetime
        if backlog_limit is None:
            backlog_limit = limits.backlog_limit
        if replay_buffer_size is None:
            replay_buffer_size = limits.replay_buffer_size
        redis = Redis.from_url(url)
        writes = WriteBehind(redis)  # one queue of writes behind per worker: they share its round trips
        sessions = RedisSessionStore(
            redis, idle_timeout=idle_timeout, max_lifetime=max_lifetime, prefix=prefix, writes=writes
        )
        mesh = WorkerMesh(redis, worker_id, heartbeat_ttl=worker_ttl, prefix=prefix, writes=writes)
        events = RedisEventLog(
            redis,
            backlog_limit,
            replay_buffer_size,
            ttl=max_lifetime + 60.0,
            prefix=prefix,
            writes=writes,
            writer_id=mesh.worker_id,
            ended_streams_kept=limits.ended_streams_kept,
        )
        task_store = RedisTaskStore(redis, prefix=prefix)
        return cls(
            redis=redis,
            sessions=sessions,
            events=events,
            bus=RedisEventBus(redis, channel=f"{prefix}:events"),
            router=mesh,
            coordinator=mesh.coordinator(events, sessions, stream_log_grace=limits.stream_log_grace, tasks=task_store),
            tasks=task_store,
        )

    def bind_options(self) -> dict[str, Any]:
        """Keyword arguments for ``McpHttpServer.bind`` or ``McpHttpApp``: the stores, the
        coordinator, and the wall clock every worker agrees on."""
        return {
            "session_store": self.sessions,
            "event_log": self.events,
            "coordinator": self.coordinator,
            "clock": time.time,
        }

    async def start(self, timeout: float = 5.0) -> None:
        """Check Redis answers and open the event bus (``StoreUnavailable`` when it cannot)."""
        await self.bus.start(timeout)

    async def close(self) -> None:
        """Close the bus and the client (after the app shut down: its coordinator stops with it),
        once the writes behind are in Redis."""
        await self.bus.close()
        await self.tasks.aclose()
        await self.events.writes.aclose()
        await self.redis.aclose()
