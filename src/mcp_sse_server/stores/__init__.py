"""Where sessions and stream events are kept: the interfaces, the in-process default, and Redis.

A store holds plain data only (``SessionRecord``, ``StoredEvent``), behind
async methods, so an implementation may live in another process. ``memory``
is the default (one process); ``redis`` shares sessions, event logs and the
event bus between workers and hosts, ``redis_routing`` has what they need to
route a session's traffic among themselves (``WorkerMesh``, and ``RedisCoordinator``: the
HTTP app's ``Coordinator`` of ``coordination``, whose ``LocalCoordinator`` is the
one-process default), and ``RedisStores.from_url`` builds them all for one worker. The
Redis names need the ``redis`` extra (``pip install 'mcp-sse-server[redis]'``) and are imported on first use.
"""

from typing import TYPE_CHECKING

from ..engine._lazy import lazy_exports
from ..engine.memory_stores import MemoryEventBus, MemoryTaskStore
from ..engine.stores import (
    EventBus,
    EventLog,
    RecordFeed,
    SessionStore,
    StaleRecord,
    StoredEvent,
    StoreError,
    StoreUnavailable,
)
from .coordination import CoordinatedSession, Coordinator, DuplicateRequest, LocalCoordinator, SessionPeers
from .memory import MemoryEventLog, MemorySessionStore

if TYPE_CHECKING:
    from .redis import RecordWatch, RedisEventBus, RedisEventLog, RedisSessionStore
    from .redis_routing import (
        Lease,
        RedisCoordinator,
        WorkerInbox,
        WorkerMesh,
        WorkerRegistry,
        WorkerRouter,
        reap_dead_workers,
        standalone_lease,
    )
    from .redis_setup import RedisStores

_LAZY = {
    "Lease": ".redis_routing",
    "RecordWatch": ".redis",
    "RedisCoordinator": ".redis_routing",
    "RedisEventBus": ".redis",
    "RedisEventLog": ".redis",
    "RedisSessionStore": ".redis",
    "RedisStores": ".redis_setup",
    "WorkerInbox": ".redis_routing",
    "WorkerMesh": ".redis_routing",
    "WorkerRegistry": ".redis_routing",
    "WorkerRouter": ".redis_routing",
    "reap_dead_workers": ".redis_routing",
    "standalone_lease": ".redis_routing",
}

__getattr__, _dir = lazy_exports(__name__, _LAZY)

__all__ = [
    "CoordinatedSession",
    "Coordinator",
    "DuplicateRequest",
    "EventBus",
    "EventLog",
    "Lease",
    "LocalCoordinator",
    "MemoryEventBus",
    "MemoryEventLog",
    "MemorySessionStore",
    "MemoryTaskStore",
    "RecordFeed",
    "RecordWatch",
    "RedisCoordinator",
    "RedisEventBus",
    "RedisEventLog",
    "RedisSessionStore",
    "RedisStores",
    "SessionPeers",
    "SessionStore",
    "StaleRecord",
    "StoreError",
    "StoreUnavailable",
    "StoredEvent",
    "WorkerInbox",
    "WorkerMesh",
    "WorkerRegistry",
    "WorkerRouter",
    "reap_dead_workers",
    "standalone_lease",
]


def __dir__() -> list[str]:
    return sorted({*__all__, *_dir()})
