"""The standalone-stream event buffer of a session: backlog and replay window.

Server-initiated messages that belong to no request travel on the session's
standalone GET stream. Until a GET attaches they wait in the *backlog*
(``backlog_limit``, oldest dropped first); once written to a stream they
stay in the *replay window* (``replay_buffer_size``) so a GET carrying
``Last-Event-ID`` can resume. ``EventBuffer`` is the interface a shared
store (several processes or hosts) would implement; ``MemoryEventBuffer`` is
the in-process default, which allocates its deques only when first used.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from typing import NamedTuple, TypeAlias

from ...jsonrpc import RequestId

__all__ = ["BufferedEvent", "EventBuffer", "EventBufferFactory", "MemoryEventBuffer"]


class BufferedEvent(NamedTuple):
    """One standalone event: its id, its SSE frame, and the id of the
    server-to-client request it carries (None for notifications)."""

    event_id: int
    frame: bytes
    request_id: RequestId | None = None


class EventBuffer(ABC):
    """Standalone events of one session. Event ids increase and are unique within it."""

    __slots__ = ()

    @abstractmethod
    def next_id(self) -> int:
        """A fresh event id."""

    @abstractmethod
    def add_pending(self, event: BufferedEvent) -> BufferedEvent | None:
        """Keep an event for the next GET; returns the event dropped to make room, if any."""

    @abstractmethod
    def take_pending(self) -> list[BufferedEvent]:
        """Remove and return the backlog, oldest first, recording it as delivered."""

    @abstractmethod
    def record(self, event: BufferedEvent) -> None:
        """Remember an event written to a stream, for replay."""

    @abstractmethod
    def replay_after(self, event_id: int) -> list[BufferedEvent]:
        """Delivered events newer than ``event_id``, oldest first (what is still retained)."""

    @abstractmethod
    def clear(self) -> list[BufferedEvent]:
        """Forget everything; returns the backlog that was never delivered."""


EventBufferFactory: TypeAlias = Callable[[int, int], EventBuffer]
"""Makes a session's buffer from ``(backlog_limit, replay_buffer_size)``."""


class MemoryEventBuffer(EventBuffer):
    """The in-process buffer: two bounded deques, created on first use."""

    __slots__ = ("_backlog", "_backlog_limit", "_history", "_last_id", "_replay_size")

    def __init__(self, backlog_limit: int, replay_buffer_size: int) -> None:
        self._backlog_limit = backlog_limit
        self._replay_size = replay_buffer_size
        self._last_id = 0
        self._backlog: deque[BufferedEvent] | None = None
        self._history: deque[BufferedEvent] | None = None

    def next_id(self) -> int:
        self._last_id += 1
        return self._last_id

    def add_pending(self, event: BufferedEvent) -> BufferedEvent | None:
        if self._backlog_limit == 0:
            return event
        backlog = self._backlog
        if backlog is None:
            backlog = self._backlog = deque()
        dropped = backlog.popleft() if len(backlog) >= self._backlog_limit else None
        backlog.append(event)
        return dropped

    def take_pending(self) -> list[BufferedEvent]:
        backlog = self._backlog
        if not backlog:
            return []
        events = list(backlog)
        backlog.clear()
        for event in events:
            self.record(event)
        return events

    def record(self, event: BufferedEvent) -> None:
        if self._replay_size == 0:
            return
        history = self._history
        if history is None:
            history = self._history = deque(maxlen=self._replay_size)
        history.append(event)

    def replay_after(self, event_id: int) -> list[BufferedEvent]:
        history = self._history
        if not history or history[-1].event_id <= event_id:
            return []
        # Ids increase along the deque: walk back to the first newer one.
        start = len(history)
        while start > 0 and history[start - 1].event_id > event_id:
            start -= 1
        return [history[i] for i in range(start, len(history))]

    def clear(self) -> list[BufferedEvent]:
        undelivered = list(self._backlog) if self._backlog else []
        self._backlog = None
        self._history = None
        return undelivered

    @property
    def backlog_size(self) -> int:
        return len(self._backlog) if self._backlog else 0
