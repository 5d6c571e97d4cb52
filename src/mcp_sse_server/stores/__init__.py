"""Where sessions and stream events are kept: the interfaces, the in-process default, and Redis.

A store holds plain data only (``SessionRecord``, ``StoredEvent``), behind
async methods, so an implementation may live in another process. A ``Backend``
bundles every store one worker keeps (sessions, stream events, tasks, the event
bus, the coordination of workers) for an HTTP app, and ``backend_from_url`` is the
one place one is chosen, by the URL's scheme (``backends``; ``register_backend``
adds one). ``memory`` is the default (``MemoryBackend``: one process); ``redis``
shares sessions, event logs and the event bus between workers and hosts,
``redis_routing`` has what they need to route a session's traffic among themselves
(``WorkerMesh``, and ``RedisCoordinator``: the HTTP app's ``Coordinator``, whose
``LocalCoordinator`` of ``coordination`` is the one-process default), and
``RedisBackend`` (``redis://``) builds them all for one worker. The Redis names need the
``redis`` extra (``pip install 'mcp-sse-server[redis]'``) and are imported on first use.
"""

from typing import TYPE_CHECKING

from ..engine._lazy import lazy_exports

if TYPE_CHECKING:
    from ..engine.memory_stores import MemoryEventBus as MemoryEventBus
    from ..engine.memory_stores import MemoryTaskStore as MemoryTaskStore
    from ..engine.stores import Backend as Backend
    from ..engine.stores import (
        CoordinatedSession as CoordinatedSession,
    )
    from ..engine.stores import (
        Coordinator as Coordinator,
    )
    from ..engine.stores import (
        DuplicateRequest as DuplicateRequest,
    )
    from ..engine.stores import (
        EventBus as EventBus,
    )
    from ..engine.stores import (
        EventLog as EventLog,
    )
    from ..engine.stores import (
        RecordFeed as RecordFeed,
    )
    from ..engine.stores import (
        SessionPeers as SessionPeers,
    )
    from ..engine.stores import (
        SessionStore as SessionStore,
    )
    from ..engine.stores import (
        StaleRecord as StaleRecord,
    )
    from ..engine.stores import (
        StoredEvent as StoredEvent,
    )
    from ..engine.stores import (
        StoreError as StoreError,
    )
    from ..engine.stores import (
        StoreUnavailable as StoreUnavailable,
    )
    from .backends import BackendFactory as BackendFactory
    from .backends import backend_from_url as backend_from_url
    from .backends import register_backend as register_backend
    from .coordination import (
        LocalCoordinator as LocalCoordinator,
    )
    from .memory import MemoryBackend as MemoryBackend
    from .memory import MemoryEventLog as MemoryEventLog
    from .memory import MemorySessionStore as MemorySessionStore
    from .redis import (
        RecordWatch as RecordWatch,
    )
    from .redis import (
        RedisEventBus as RedisEventBus,
    )
    from .redis import (
        RedisEventLog as RedisEventLog,
    )
    from .redis import (
        RedisSessionStore as RedisSessionStore,
    )
    from .redis_routing import (
        Lease as Lease,
    )
    from .redis_routing import (
        RedisCoordinator as RedisCoordinator,
    )
    from .redis_routing import (
        WorkerInbox as WorkerInbox,
    )
    from .redis_routing import (
        WorkerMesh as WorkerMesh,
    )
    from .redis_routing import (
        WorkerRegistry as WorkerRegistry,
    )
    from .redis_routing import (
        WorkerRouter as WorkerRouter,
    )
    from .redis_routing import (
        reap_dead_workers as reap_dead_workers,
    )
    from .redis_routing import (
        standalone_lease as standalone_lease,
    )
    from .redis_setup import RedisBackend as RedisBackend

__getattr__, __dir__ = lazy_exports(__name__, __file__)
