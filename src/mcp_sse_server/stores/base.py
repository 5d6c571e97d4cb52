"""The store interfaces: session records and per-stream event logs.

Rules every implementation keeps:

1. Records and events are plain data. A store may copy them; nothing in
   them holds a task, a future or a socket.
2. Event ids are strings, unique within a session, and name their stream:
   ``"<n>"`` on the session's standalone stream, ``"<n>/<stream>"`` on any
   other (``n`` increases across the session). ``replay_after`` only ever
   returns events of the stream the id names, so one stream never receives
   another's events.
3. A stream's log is bounded: its backlog (events not yet delivered, waiting
   for a stream to attach) drops its oldest event when full and says which;
   its history (delivered events kept for replay) keeps the newest ones.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..jsonrpc import RequestId
from ..session import SessionRecord

__all__ = [
    "STANDALONE_STREAM",
    "EventBus",
    "EventLog",
    "SessionStore",
    "StoreError",
    "StoreUnavailable",
    "StoredEvent",
    "Subscription",
    "stream_of",
]

STANDALONE_STREAM = ""
"""The stream id of a session's standalone (GET) stream."""


def stream_of(event_id: str) -> str:
    """The stream an event id names (``STANDALONE_STREAM`` for a bare number)."""
    _, _, stream = event_id.partition("/")
    return stream


class StoreError(Exception):
    """A store could not do what was asked (not a rule of the interface: those raise ValueError)."""


class StoreUnavailable(StoreError):
    """The store's backend cannot be reached now (a shared store's server is down or
    unreachable). Every method of a shared store raises it instead of the client
    library's own errors, so the app can answer 503 and retry later; the same store
    object works again once the backend is back."""


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event of a stream: its id, the encoded JSON-RPC message, and the id of
    the server-to-client request it carries (None for anything else)."""

    event_id: str
    message: bytes
    request_id: RequestId | None = None


class SessionStore(ABC):
    """Session records by id. ``now`` values are the caller's clock (monotonic seconds in process)."""

    __slots__ = ()

    @abstractmethod
    async def create(self, record: SessionRecord) -> None:
        """Add a new session's record (ValueError for an id already taken)."""

    @abstractmethod
    async def get(self, session_id: str) -> SessionRecord | None:
        """The record of a live session, or None."""

    @abstractmethod
    async def save(self, record: SessionRecord) -> None:
        """Write back a record that changed (after initialize, say)."""

    @abstractmethod
    async def touch(self, record: SessionRecord, now: float) -> None:
        """Note client activity: ``last_seen`` becomes ``now``."""

    @abstractmethod
    async def delete(self, session_id: str) -> bool:
        """Forget a session; True when it was there."""

    @abstractmethod
    async def count(self) -> int:
        """How many sessions are live."""

    @abstractmethod
    async def expired(self, now: float, idle_timeout: float, max_lifetime: float) -> list[str]:
        """The ids of sessions past their idle timeout or lifetime at ``now``."""


class EventLog(ABC):
    """The events of every stream of every session (see the module's rules)."""

    __slots__ = ()

    @abstractmethod
    async def append(
        self, session_id: str, stream_id: str, message: bytes, request_id: RequestId | None, *, delivered: bool
    ) -> tuple[StoredEvent, StoredEvent | None]:
        """Log one event; ``delivered`` False keeps it in the stream's backlog.

        Returns the event and the backlog event dropped to make room, if any.
        """

    @abstractmethod
    async def take_undelivered(self, session_id: str, stream_id: str) -> list[StoredEvent]:
        """Remove and return the stream's backlog, oldest first, recording it as delivered."""

    @abstractmethod
    async def replay_after(self, session_id: str, event_id: str) -> list[StoredEvent]:
        """Delivered events of the stream ``event_id`` names that came after it, oldest first."""

    async def follow(self, session_id: str, event_id: str, timeout: float) -> tuple[list[StoredEvent], bool]:
        """Tail a stream: what ``replay_after`` returns, waiting up to ``timeout`` seconds for
        an event when there is none yet; and True once the stream ended (``end_stream``):
        then nothing follows the events returned. A malformed id returns ``([], True)``.

        This is how a worker serves a resumed stream whose request runs in another worker.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot tail streams")

    @abstractmethod
    async def mark(self, session_id: str, stream_id: str) -> str:
        """A fresh event id on a stream that stores no event: a cursor (an SSE priming event's id).

        ``replay_after`` that id returns the stream's events logged after it.
        """

    @abstractmethod
    async def end_stream(self, session_id: str, stream_id: str, keep_for: float) -> None:
        """The stream is complete: keep its events ``keep_for`` more seconds (for a late
        resumption), then drop them."""

    @abstractmethod
    async def forget(self, session_id: str) -> list[StoredEvent]:
        """Drop everything of a session; returns the events never delivered."""


class Subscription(ABC):
    """What ``EventBus.subscribe`` returns: the events published from then on, oldest first.

    ``async for event in subscription`` ends after ``close()``. A subscriber that
    falls ``limit`` events behind loses the oldest (delivery is best effort:
    ``subscriptions/listen`` streams are not resumable, clients re-fetch).
    """

    __slots__ = ()

    @abstractmethod
    async def get(self) -> Mapping[str, Any] | None:
        """The next event; None once the subscription is closed."""

    @abstractmethod
    async def close(self) -> None:
        """Stop receiving; idempotent."""

    def __aiter__(self) -> AsyncIterator[Mapping[str, Any]]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Mapping[str, Any]]:
        while (event := await self.get()) is not None:
            yield event


class EventBus(ABC):
    """Fan-out of server events (``resources/updated``, ``*/list_changed``) to every
    subscriber in every worker: the seam of ``subscriptions/listen`` (2026-07-28).

    Events are plain JSON-compatible mappings (no JSON-RPC framing: the listen
    stream adds its subscription id and filters by kind). Delivery is at most once,
    in publication order per publisher, to subscribers that subscribed before the
    event was published.
    """

    __slots__ = ()

    @abstractmethod
    async def publish(self, event: Mapping[str, Any]) -> None:
        """Send ``event`` to every current subscriber (here and, for a shared bus, elsewhere)."""

    @abstractmethod
    async def subscribe(self, limit: int = 1000) -> Subscription:
        """Start receiving: returns once events published afterwards are sure to arrive."""

    async def close(self) -> None:  # noqa: B027 - optional
        """Release what the bus holds (connections, tasks); subscriptions end."""
