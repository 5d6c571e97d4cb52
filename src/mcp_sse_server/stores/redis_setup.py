"""Everything one worker needs to share sessions through Redis, built from a URL.

>>> stores = RedisStores.from_url("redis://127.0.0.1:6379/0", limits=limits)  # doctest: +SKIP
>>> await stores.start()  # doctest: +SKIP
>>> server.use_shared(event_bus=stores.bus, request_state=RequestStateSealer(keys))  # doctest: +SKIP
>>> http = await McpHttpServer.bind(server, limits=limits, **stores.bind_options())  # doctest: +SKIP
>>> ...
>>> await http.close(); await stores.close()  # doctest: +SKIP

Build it in each worker process (after a fork, never before: a Redis client
is not shared across processes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from ..transport.http.limits import DEFAULT_LIMITS, HttpLimits
from .redis import DEFAULT_PREFIX, RedisEventBus, RedisEventLog, RedisSessionStore
from .redis_routing import WorkerRouter

__all__ = ["RedisStores"]


@dataclass(slots=True)
class RedisStores:
    """One worker's Redis client, session store, event log, event bus and router."""

    redis: Redis
    sessions: RedisSessionStore
    events: RedisEventLog
    bus: RedisEventBus
    router: WorkerRouter

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        limits: HttpLimits = DEFAULT_LIMITS,
        prefix: str = DEFAULT_PREFIX,
        worker_ttl: float = 10.0,
        worker_id: str | None = None,
    ) -> RedisStores:
        """The stores of one worker on the Redis at ``url`` (``redis://``, ``rediss://``,
        ``unix://``), sized by the app's ``limits``. ``worker_ttl``: seconds after its last
        heartbeat before a worker counts as dead and another one fails its requests."""
        redis = Redis.from_url(url)
        return cls(
            redis=redis,
            sessions=RedisSessionStore(
                redis,
                idle_timeout=limits.session_idle_timeout,
                max_lifetime=limits.session_max_lifetime,
                prefix=prefix,
            ),
            events=RedisEventLog(
                redis,
                limits.backlog_limit,
                limits.replay_buffer_size,
                ttl=limits.session_max_lifetime + 60.0,
                prefix=prefix,
            ),
            bus=RedisEventBus(redis, channel=f"{prefix}:events"),
            router=WorkerRouter(redis, worker_id, heartbeat_ttl=worker_ttl, prefix=prefix),
        )

    def bind_options(self) -> dict[str, Any]:
        """Keyword arguments for ``McpHttpServer.bind`` or ``McpHttpApp``: the stores, the router,
        and the wall clock every worker agrees on."""
        return {"session_store": self.sessions, "event_log": self.events, "router": self.router, "clock": time.time}

    async def start(self, timeout: float = 5.0) -> None:
        """Check Redis answers and open the event bus (``StoreUnavailable`` when it cannot)."""
        await self.bus.start(timeout)

    async def close(self) -> None:
        """Close the bus and the client (after the app shut down: its router stops with it)."""
        await self.bus.close()
        await self.redis.aclose()
