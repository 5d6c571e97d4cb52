"""``RedisBackend``: everything one worker needs to share sessions through Redis, built from a URL.

>>> backend = RedisBackend.from_url("redis://127.0.0.1:6379/0", limits=settings.limits)  # doctest: +SKIP
>>> http = await McpHttpServer.bind(server, settings=settings, backend=backend)  # doctest: +SKIP
>>> ...  # doctest: +SKIP
>>> await http.close()  # the app closes its backend  # doctest: +SKIP

(``stores.backend_from_url`` makes one from a ``redis://``, ``rediss://`` or ``unix://``
URL, or from ``redis+cluster://host:port,host:port``: a Redis Cluster, see
``stores/redis_cluster.py``.) Build it in each worker process (after a fork, never before: a Redis client is not
shared across processes). The app that receives it starts it (it checks that Redis answers
and opens the event bus) and closes it at shutdown, once the writes behind are in Redis.

The sizes are read from any object that has them (an ``HttpLimits``): the stores sit below the
HTTP transport and import none of it.
"""

from __future__ import annotations

import time
from typing import Any

from redis.asyncio import Redis

from ..engine.stores import DEFAULT_SIZES, Backend, StoreSizes
from .redis import DEFAULT_PREFIX, RedisEventBus, RedisEventLog, RedisSessionStore, WriteBehind, redis_unavailable
from .redis_cluster import client_for_url, is_cluster, refuse_cluster_node
from .redis_routing import RedisCoordinator, WorkerMesh
from .redis_tasks import RedisTaskStore

__all__ = ["DEFAULT_SIZES", "RedisBackend", "StoreSizes"]


class RedisBackend(Backend):
    """One worker's Redis client (``redis``), session store, event log, event bus, task store,
    its place among the workers (``mesh``, a ``WorkerMesh``) and the app's ``coordinator`` over
    it, on the wall clock every worker agrees on. Shared: every server the app serves takes its
    event bus and task store."""

    __slots__ = ("_started", "mesh", "redis", "url")

    sessions: RedisSessionStore
    events: RedisEventLog
    bus: RedisEventBus
    tasks: RedisTaskStore
    coordinator: RedisCoordinator

    def __init__(
        self,
        redis: Redis,
        *,
        limits: StoreSizes = DEFAULT_SIZES,
        prefix: str = DEFAULT_PREFIX,
        worker_ttl: float = 10.0,
        worker_id: str | None = None,
        durable_tasks: int = 0,
        durable_ms: int = 100,
    ) -> None:
        """The stores of one worker on the client ``redis`` (which the backend closes), sized by
        the app's ``limits`` (an ``HttpLimits``; ``HttpLimits()``'s sizes when not given), under
        the key ``prefix``. ``worker_ttl``: seconds after its last heartbeat before a worker counts
        as dead and another one fails its requests. ``durable_tasks``: replicas a task's creation
        and end wait for (``WAIT``, at most ``durable_ms``; ``RedisTaskStore``); 0: none."""
        writes = WriteBehind(redis)  # one queue of writes behind per worker: they share its round trips
        sessions = RedisSessionStore(
            redis,
            idle_timeout=limits.session_idle_timeout,
            max_lifetime=limits.session_max_lifetime,
            prefix=prefix,
            writes=writes,
        )
        mesh = WorkerMesh(redis, worker_id, heartbeat_ttl=worker_ttl, prefix=prefix, writes=writes)
        events = RedisEventLog(
            redis,
            limits.backlog_limit,
            limits.replay_buffer_size,
            ttl=limits.session_max_lifetime + 60.0,
            prefix=prefix,
            writes=writes,
            writer_id=mesh.worker_id,
            ended_streams_kept=limits.ended_streams_kept,
        )
        tasks = RedisTaskStore(redis, prefix=prefix, durable_replicas=durable_tasks, durable_ms=durable_ms)
        super().__init__(
            sessions=sessions,
            events=events,
            coordinator=mesh.coordinator(events, sessions, stream_log_grace=limits.stream_log_grace, tasks=tasks),
            tasks=tasks,
            bus=RedisEventBus(redis, channel=f"{prefix}:events"),
            clock=time.time,
            worker_id=mesh.worker_id,
            shared=True,
        )
        self.redis = redis
        self.mesh = mesh
        self.url: str | None = None  # (from_url's: named in the error for a cluster node)
        self._started = False

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisBackend:
        """The backend of one worker on the Redis at ``url`` (``redis://``, ``rediss://``,
        ``unix://``, or a cluster: ``redis+cluster://host:port,host:port``); ``options`` are the
        constructor's keywords (``limits``, ``prefix``, ``worker_ttl``, ``worker_id``,
        ``durable_tasks``, ``durable_ms``). No connection is made before ``start``."""
        backend = cls(client_for_url(url), **options)
        backend.url = url
        return backend

    async def start(self, timeout: float = 5.0) -> None:
        """Check Redis answers and open the event bus (``StoreUnavailable`` when it cannot); once.
        A ``redis://`` URL that reaches a cluster node is a ValueError naming the cluster URL."""
        if not self._started:
            if self.url is not None and not is_cluster(self.redis):
                with redis_unavailable("start"):
                    await refuse_cluster_node(self.redis, self.url)
            await self.bus.start(timeout)
            self._started = True

    async def close(self) -> None:
        """Close the bus and the client (after the app shut down: its coordinator stops with it),
        once the writes behind are in Redis."""
        await self.bus.close()
        await self.tasks.aclose()
        await self.events.writes.aclose()
        await self.redis.aclose()
