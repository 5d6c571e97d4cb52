"""The in-process stores: dicts and bounded deques in this process, the default; and
``MemoryBackend``, which bundles them (with the in-process event bus and task store) for an app."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

from ..engine.jsonrpc import RequestId
from ..engine.memory_stores import MemoryEventBus, MemoryTaskStore
from ..engine.records import SessionRecord
from ..engine.stores import (
    DEFAULT_SIZES,
    LAST_NUMBER,
    STANDALONE_STREAM,
    Backend,
    EventLog,
    SessionStore,
    StaleRecord,
    StoredEvent,
    StoreSizes,
    stream_of,
)
from .coordination import LocalCoordinator

__all__ = ["MemoryBackend", "MemoryEventLog", "MemorySessionStore"]


class MemorySessionStore(SessionStore):
    """Session records in a dict. Records are kept as given (not copied): changes
    a live session makes to its record are visible here at once."""

    __slots__ = ("_records",)

    def __init__(self) -> None:
        self._records: dict[str, SessionRecord] = {}

    async def create(self, record: SessionRecord) -> None:
        if record.id in self._records:
            raise ValueError("duplicate session id")
        self._records[record.id] = record

    async def get(self, session_id: str) -> SessionRecord | None:
        return self._records.get(session_id)

    async def save(self, record: SessionRecord) -> None:
        stored = self._records.get(record.id)
        if stored is None:
            return
        if stored is not record and record.version != stored.version:
            raise StaleRecord(
                f"session {record.id[:8]}: a copy at version {record.version}, the store's at {stored.version}"
            )
        record.version += 1
        self._records[record.id] = record

    async def touch(self, record: SessionRecord, now: float) -> None:
        record.last_seen = now

    async def delete(self, session_id: str) -> bool:
        return self._records.pop(session_id, None) is not None

    async def count(self) -> int:
        return len(self._records)

    async def expired(self, now: float, idle_timeout: float, max_lifetime: float) -> list[str]:
        return [
            session_id
            for session_id, record in self._records.items()
            if record.expired(now, idle_timeout, max_lifetime)
        ]


class _StreamLog:
    __slots__ = ("backlog", "ended", "history")

    def __init__(self, replay_size: int) -> None:
        self.backlog: deque[StoredEvent] = deque()
        self.history: deque[StoredEvent] = deque(maxlen=replay_size)
        self.ended = False


class _SessionLog:
    __slots__ = ("ended", "last", "streams")

    def __init__(self) -> None:
        self.last = 0
        self.streams: dict[str, _StreamLog] = {}
        # Ended streams waiting out their grace, in the order they ended: with one grace
        # period for all, that is also the order they expire in, so pruning looks at the front only.
        self.ended: deque[tuple[float, str]] = deque()

    def prune(self, now: float) -> None:
        """Drop the ended streams whose grace period is over."""
        ended = self.ended
        while ended and ended[0][0] <= now:
            _, stream_id = ended.popleft()
            self.streams.pop(stream_id, None)


class MemoryEventLog(EventLog):
    """Per-stream backlogs (``backlog_limit`` events) and replay windows
    (``replay_size`` events), made for a session when it first logs an event;
    at most ``ended_streams_kept`` completed streams of a session wait out
    their grace period (the oldest is dropped first)."""

    __slots__ = ("_changed", "_sessions", "backlog_limit", "clock", "ended_streams_kept", "replay_size")

    def __init__(
        self,
        backlog_limit: int,
        replay_size: int,
        *,
        ended_streams_kept: int = 64,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backlog_limit = backlog_limit
        self.replay_size = replay_size
        self.ended_streams_kept = ended_streams_kept
        self.clock = clock
        self._sessions: dict[str, _SessionLog] = {}
        self._changed: dict[tuple[str, str], asyncio.Event] = {}  # streams someone follows

    def _wake(self, session_id: str, stream_id: str) -> None:
        if self._changed:
            changed = self._changed.pop((session_id, stream_id), None)
            if changed is not None:
                changed.set()

    def _stream(self, session_id: str, stream_id: str) -> tuple[_SessionLog, _StreamLog]:
        session = self._sessions.get(session_id)
        if session is None:
            session = self._sessions[session_id] = _SessionLog()
        stream = session.streams.get(stream_id)
        if stream is None:
            stream = session.streams[stream_id] = _StreamLog(self.replay_size)
        return session, stream

    async def append(
        self, session_id: str, stream_id: str, message: bytes, request_id: RequestId | None, *, delivered: bool
    ) -> tuple[StoredEvent, StoredEvent | None]:
        session, stream = self._stream(session_id, stream_id)
        session.last += 1
        event_id = str(session.last) if stream_id == STANDALONE_STREAM else f"{session.last}/{stream_id}"
        # A copy of exactly its size: the encoder's buffer may be much larger than the message it holds.
        event = StoredEvent(event_id, bytes(bytearray(message)), request_id)
        if delivered:
            stream.history.append(event)
            self._wake(session_id, stream_id)
            return event, None
        if self.backlog_limit == 0:
            return event, event
        backlog = stream.backlog
        dropped = backlog.popleft() if len(backlog) >= self.backlog_limit else None
        backlog.append(event)
        return event, dropped

    async def take_undelivered(self, session_id: str, stream_id: str) -> list[StoredEvent]:
        session = self._sessions.get(session_id)
        stream = session.streams.get(stream_id) if session is not None else None
        if stream is None or not stream.backlog:
            return []
        events = list(stream.backlog)
        stream.backlog.clear()
        stream.history.extend(events)
        self._wake(session_id, stream_id)
        return events

    async def replay_after(self, session_id: str, event_id: str) -> list[StoredEvent]:
        session = self._sessions.get(session_id)
        stream = session.streams.get(stream_of(event_id)) if session is not None else None
        after = _sequence(event_id)
        if stream is None or after is None:
            return []
        return [event for event in stream.history if (_sequence(event.event_id) or 0) > after]

    def _ended(self, session_id: str, stream_id: str) -> bool:
        session = self._sessions.get(session_id)
        stream = session.streams.get(stream_id) if session is not None else None
        return stream is not None and stream.ended

    async def follow(self, session_id: str, event_id: str, timeout: float) -> tuple[list[StoredEvent], bool]:
        if _sequence(event_id) is None:
            return [], True
        stream_id = stream_of(event_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            events = await self.replay_after(session_id, event_id)
            ended = self._ended(session_id, stream_id)
            remaining = deadline - loop.time()
            if events or ended or remaining <= 0:
                return events, ended
            key = (session_id, stream_id)
            changed = self._changed.get(key)
            if changed is None:
                changed = self._changed[key] = asyncio.Event()
            try:
                await asyncio.wait_for(changed.wait(), remaining)
            except TimeoutError:
                return [], self._ended(session_id, stream_id)

    async def mark(self, session_id: str, stream_id: str) -> str:
        session, _ = self._stream(session_id, stream_id)
        session.last += 1
        return str(session.last) if stream_id == STANDALONE_STREAM else f"{session.last}/{stream_id}"

    async def end_stream(self, session_id: str, stream_id: str, keep_for: float) -> None:
        session = self._sessions.get(session_id)
        if session is None:
            return
        now = self.clock()
        session.prune(now)
        stream = session.streams.get(stream_id)
        if stream is None or stream.ended:
            return
        if keep_for <= 0:
            del session.streams[stream_id]
            self._wake(session_id, stream_id)
            return
        stream.ended = True
        ended = session.ended
        ended.append((now + keep_for, stream_id))
        while len(ended) > self.ended_streams_kept:
            _, oldest = ended.popleft()
            session.streams.pop(oldest, None)
        self._wake(session_id, stream_id)

    async def end_abandoned(self, session_id: str, stream_id: str, message: bytes, keep_for: float) -> StoredEvent:
        if stream_id == STANDALONE_STREAM:
            raise ValueError("the standalone stream has no single writer to outlive")
        _, stream = self._stream(session_id, stream_id)
        event = StoredEvent(f"{LAST_NUMBER}/{stream_id}", bytes(message))
        stream.history.append(event)
        self._wake(session_id, stream_id)
        await self.end_stream(session_id, stream_id, keep_for)
        return event

    async def forget(self, session_id: str) -> list[StoredEvent]:
        session = self._sessions.pop(session_id, None)
        if session is None:
            return []
        for stream_id in session.streams:
            self._wake(session_id, stream_id)
        return [event for stream in session.streams.values() for event in stream.backlog]

    def backlog_size(self, session_id: str, stream_id: str = STANDALONE_STREAM) -> int:
        """How many events wait for a stream (for tests and monitoring)."""
        session = self._sessions.get(session_id)
        stream = session.streams.get(stream_id) if session is not None else None
        return len(stream.backlog) if stream is not None else 0


def _sequence(event_id: str) -> int | None:
    number = event_id.partition("/")[0]
    # isascii: str.isdigit also accepts digits like '²' that int() refuses; 19 digits fit in 64 bits.
    if not number.isascii() or not number.isdigit() or len(number) > 19:
        return None
    return int(number)


class MemoryBackend(Backend):
    """Every store in this process (``memory:``), the app's default: no other worker sees its
    sessions, events, bus or tasks. ``limits`` sizes the event log (an ``HttpLimits``: give it
    the endpoint's); ``clock`` (monotonic seconds by default) drives session expiry, and is
    injectable for tests."""

    __slots__ = ()

    def __init__(self, limits: StoreSizes = DEFAULT_SIZES, *, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(
            sessions=MemorySessionStore(),
            events=MemoryEventLog(
                limits.backlog_limit,
                limits.replay_buffer_size,
                ended_streams_kept=limits.ended_streams_kept,
                clock=clock,
            ),
            coordinator=LocalCoordinator(),
            tasks=MemoryTaskStore(),
            bus=MemoryEventBus(),
            clock=clock,
        )
