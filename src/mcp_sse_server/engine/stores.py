"""The store interfaces (session records, per-stream event logs, task records, the event bus,
the coordination of workers) and ``Backend``, the one object that bundles them for an app.

Rules every store implementation keeps:

1. Records and events are plain data. A store may copy them; nothing in
   them holds a task, a future or a socket.
2. Event ids are strings, unique within a session, and name their stream:
   ``"<n>"`` on the session's standalone stream, ``"<n>/<stream>"`` on any
   other (``n`` increases along each stream; ``append`` counts across the
   session, ``log`` may count along its stream alone). ``replay_after`` only
   ever returns events of the stream the id names, so one stream never
   receives another's events.
3. A stream's log is bounded: its backlog (events not yet delivered, waiting
   for a stream to attach) drops its oldest event when full and says which;
   its history (delivered events kept for replay) keeps the newest ones.

A ``Backend`` (its rules are in its docstring) is what an HTTP app receives: the in-process one
(``stores.MemoryBackend``) by default, or one chosen by the scheme of a URL
(``stores.backend_from_url``: ``memory:``, ``redis://``, or a scheme given to ``register_backend``).
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Final, Protocol

from .jsonrpc import INTERNAL_ERROR, JsonRpcMessage, RequestId
from .records import TASK_INTERRUPTED, SessionRecord, TaskRecord

__all__ = [
    "DEFAULT_SIZES",
    "LAST_NUMBER",
    "NOT_HELD",
    "STANDALONE_STREAM",
    "Backend",
    "CoordinatedSession",
    "Coordinator",
    "DuplicateRequest",
    "EventBus",
    "EventLog",
    "RecordFeed",
    "SessionPeers",
    "SessionStore",
    "StaleRecord",
    "StoreError",
    "StoreSizes",
    "StoreUnavailable",
    "StoredEvent",
    "StreamWriter",
    "TaskStore",
    "stream_of",
]

STANDALONE_STREAM = ""
"""The stream id of a session's standalone (GET) stream."""

LAST_NUMBER = 2**53 - 1
"""The number of the event a reaper ends an abandoned stream with (``EventLog.end_abandoned``):
past any a writer may have reached, and exact in every JSON reader's numbers."""


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


class StaleRecord(StoreError):
    """``save`` of a copy older than the store's record: another worker wrote it since the copy
    was read. Read the record again, make the change again on it, and save that."""


@dataclass(frozen=True, slots=True)
class StreamWriter:
    """The worker writing a request's stream, and the request (``EventLog.writer``)."""

    worker_id: str
    request_id: RequestId | None


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event of a stream: its id, the encoded JSON-RPC message, and the id of
    the server-to-client request it carries (None for anything else)."""

    event_id: str
    message: bytes
    request_id: RequestId | None = None


class SessionStore(ABC):
    """Session records by id. ``now`` values are the caller's clock (monotonic seconds in process;
    a shared store needs a clock every worker agrees on, such as wall-clock seconds)."""

    __slots__ = ()

    shared: bool = False
    """True when other workers see these records: a worker then serves sessions other workers
    opened, and a worker that shuts down leaves its sessions to the others."""

    @abstractmethod
    async def create(self, record: SessionRecord) -> None:
        """Add a new session's record (ValueError for an id already taken)."""

    @abstractmethod
    async def get(self, session_id: str) -> SessionRecord | None:
        """The record of a live session, or None."""

    @abstractmethod
    async def save(self, record: SessionRecord) -> None:
        """Write back a record that changed (after initialize, say); ``record.version`` counts the
        write. A shared store raises ``StaleRecord`` when the copy is older than its record."""

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

    def changes(self) -> RecordFeed | None:
        """Announcements of the records any worker saves or deletes, for a worker that keeps copies
        of them (a shared store's; None: nobody else changes these records)."""
        return None

    async def present(self, session_ids: Collection[str]) -> set[str]:
        """Those of ``session_ids`` whose records are still here (a shared store answers for
        every worker: what another ended is not)."""
        return {session_id for session_id in session_ids if await self.get(session_id) is not None}


class RecordFeed(Protocol):
    """The records any worker saved or deleted, as a shared store announces them (``changes()``).

    Once ``start`` returned, every save of a record is announced to
    ``on_change(session_id, version)`` (the version the save gave it), every
    delete to ``on_change(session_id, None)``, and ``on_change(None, None)`` says
    that announcements may have been missed (the subscription broke or was made
    again): no copy read before can be trusted. ``trusted`` is True while announcements flow.
    An announcement the worker received is taken in by the time a task that
    yields once to the event loop resumes (the feed reads as it receives).
    """

    @property
    def trusted(self) -> bool:
        """True while every change is announced: a copy read since the last ``on_change(None)``
        and not announced since is the store's record."""
        ...

    @property
    def announced(self) -> int:
        """How many announcements were taken in so far (a copy read while it moved may be stale)."""
        ...

    async def start(self, on_change: Callable[[str | None, int | None], None]) -> None:
        """Subscribe (raises ``StoreUnavailable`` if the store cannot confirm it) and keep reading."""
        ...

    async def aclose(self) -> None:
        """Stop reading and unsubscribe."""
        ...


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

    async def open_stream(self, session_id: str, stream_id: str, request_id: RequestId | None) -> None:
        """A request's stream that this worker alone will write (``log``), before anything of it
        reaches the client: once this returns, every worker knows it and who writes it
        (``writer``). A log no other worker reads has nothing to do."""
        return None

    async def log(self, session_id: str, stream_id: str, message: bytes) -> StoredEvent:
        """Log a delivered event on a request's stream that this worker alone writes (it runs the
        request; ``open_stream`` first). A shared log may write in the background, in order with
        this log's other writes and before any later read or end of a stream through this log:
        another worker sees it a moment later. The id it returns is the event's all the same."""
        event, _ = await self.append(session_id, stream_id, message, None, delivered=True)
        return event

    async def writer(self, session_id: str, stream_id: str) -> StreamWriter | None:
        """Who writes a request's stream that has not ended (``open_stream``), and for which
        request; None when nobody does (a log no other worker reads: always None)."""
        return None

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
    async def end_abandoned(self, session_id: str, stream_id: str, message: bytes, keep_for: float) -> StoredEvent:
        """End a request's stream whose writer died (a reaper's job) with ``message`` as its last
        event, numbered ``LAST_NUMBER``: past any id that writer may have sent (one that logs
        behind, ``log``, may have sent events it never logged). Then as ``end_stream``."""

    @abstractmethod
    async def forget(self, session_id: str) -> list[StoredEvent]:
        """Drop everything of a session; returns the events never delivered."""


class EventBus(ABC):
    """Server events every listener hears (``subscriptions/listen``): list changes and resource updates.

    Events are plain JSON objects: ``{"kind": "tools" | "prompts" | "resources"}`` for a
    list change, ``{"kind": "resource", "uri": ...}`` for an updated resource. A bus
    shared by several workers delivers an event published on one to listeners on all.
    """

    __slots__ = ()

    @abstractmethod
    async def publish(self, event: dict[str, Any]) -> None:
        """Deliver ``event`` to every current subscriber."""

    @abstractmethod
    def subscribe(self) -> AsyncIterator[dict[str, Any]]:
        """The events published from now on (from this call, not from the first iteration),
        until the iterator's ``aclose()``."""


class TaskStore(ABC):
    """Task records by id, each change one atomic step (a shared store's: one script), so that a
    task started on one worker is read, answered and cancelled on any other.

    Rules: a record returned is a copy the caller may keep; a terminal status never changes
    (``finish`` of a terminal task changes nothing and returns None); a task past its ttl is
    gone (None) for every method, and ``sweep`` drops it; ``wait`` returns when the record
    changed after the ``version`` given (or at ``timeout``), so whoever waits for an answer, a
    cancellation or the end (the handler, ``tasks/result``, a listener) needs no polling loop.
    ``now`` values are wall-clock seconds (what ``created_at`` is).
    """

    __slots__ = ()

    shared: bool = False
    """True when other workers see these tasks."""

    counts_fleet: bool = False
    """True when ``admit`` counts the unfinished tasks of every worker sharing this store: the
    task runtime then leaves its limits to the store (``admit``, ``renew``, ``release``). False:
    the runtime counts the tasks it runs itself, and never calls the three."""

    @abstractmethod
    async def create(self, record: TaskRecord) -> None:
        """Add a new task (ValueError for an id already taken); readable everywhere on return."""

    @abstractmethod
    async def get(self, task_id: str, now: float) -> TaskRecord | None:
        """The task, or None (unknown, or past its ttl)."""

    @abstractmethod
    async def ask(self, task_id: str, request: dict[str, Any], now: float) -> tuple[str, TaskRecord] | None:
        """Add a question for the client (``{"method", "params"}``) under a new key; the task is
        ``input_required``. Returns the key and the record; None when the task is gone or terminal."""

    @abstractmethod
    async def answer(self, task_id: str, responses: dict[str, Any], now: float) -> TaskRecord | None:
        """Take the responses to questions outstanding (others are ignored); answered keys leave
        ``input_requests`` in the same step, and with none left the task is ``working`` again.
        None when the task is gone."""

    @abstractmethod
    async def take_answer(self, task_id: str, key: str) -> dict[str, Any] | None:
        """Remove and return the answer to question ``key`` (None: not answered yet)."""

    @abstractmethod
    async def request_cancel(self, task_id: str, now: float) -> TaskRecord | None:
        """Note that the client asked to cancel (the runner stops the handler); None when gone."""

    @abstractmethod
    async def finish(
        self, task_id: str, status: str, outcome: dict[str, Any] | None, message: str | None, now: float
    ) -> TaskRecord | None:
        """Make the task terminal (``completed``, ``failed`` or ``cancelled``) with its outcome;
        None (nothing changes) when it is gone or terminal already."""

    @abstractmethod
    async def wait(self, task_id: str, version: int, timeout: float) -> None:
        """Return once the task's record changed after ``version`` (or is gone), or at ``timeout``."""

    @abstractmethod
    async def sweep(self, now: float) -> int:
        """Drop the tasks past their ttl; returns how many."""

    @abstractmethod
    async def of_session(self, session_id: str, now: float) -> list[TaskRecord]:
        """The live tasks a 2025-11-25 session made (``session_id``), oldest first (``tasks/list``)."""

    @abstractmethod
    async def owned_by(self, worker_id: str) -> list[str]:
        """The ids of the unfinished tasks ``worker_id`` runs (may include some that just ended)."""

    async def admit(
        self, task_id: str, client: str | None, max_tasks: int, max_per_client: int, now: float, until: float
    ) -> tuple[str, int] | None:
        """Count a task about to start against the limits, in one atomic step per limit (no two
        workers admit the task past a limit): None when admitted (it counts until ``until``,
        wall-clock seconds, unless renewed or released), else the limit reached, ``"tasks"``
        (``max_tasks`` unfinished tasks in the fleet) or ``"client"`` (``max_per_client`` of
        ``client``'s), and how many count against it. Entries past their ``until`` at ``now`` no
        longer count. Only for a store that ``counts_fleet``."""
        raise NotImplementedError(f"{type(self).__name__} does not count tasks across workers")

    async def renew(self, held: Mapping[str, str | None], until: float) -> None:
        """Push the ``until`` of tasks admitted here that still run (task id -> client) to ``until``;
        a task released meanwhile is not counted again."""
        raise NotImplementedError(f"{type(self).__name__} does not count tasks across workers")

    async def release(self, task_id: str, client: str | None) -> None:
        """A task ``admit`` counted ended (or never started): it counts no more."""
        raise NotImplementedError(f"{type(self).__name__} does not count tasks across workers")

    async def fail_owned_by(self, worker_id: str, now: float) -> int:
        """End ``failed`` (-32603, ``TASK_INTERRUPTED``) every unfinished task ``worker_id`` ran: the
        reaper's job once that worker died. Returns how many."""
        error = {"error": {"code": INTERNAL_ERROR, "message": TASK_INTERRUPTED}}
        failed = 0
        for task_id in await self.owned_by(worker_id):
            if await self.finish(task_id, "failed", error, TASK_INTERRUPTED, now) is not None:
                failed += 1
        return failed


# --- the coordination of workers ----------------------------------------------------------------


NOT_HELD: Final[AbstractAsyncContextManager[None]] = contextlib.nullcontext()
"""What ``Coordinator.serving`` returns when serving a request holds nothing (rule 3): the app
skips the ``async with`` for it, two coroutines fewer on every request."""


class DuplicateRequest(Exception):
    """A client request id already in flight in the session (on this worker or another)."""


class CoordinatedSession(Protocol):
    """What a coordinator asks of a session this worker serves (the HTTP app's ``LiveSession``)."""

    @property
    def session_id(self) -> str: ...

    def runs(self, request_id: RequestId) -> bool:
        """True while a client request with this id is in flight here."""
        ...

    def on_message(self, message: JsonRpcMessage) -> None:
        """A client's answer or cancellation that reached another worker, for this session's engine."""
        ...

    async def end_cancelled(self, params: dict[str, Any]) -> None:
        """End the stream of the request a routed ``notifications/cancelled`` names."""
        ...

    async def deliver_backlog(self) -> None:
        """Send what other workers logged for the standalone stream, if it is open here."""
        ...

    async def end_standalone(self) -> None:
        """End the standalone stream held here (a newer GET took it elsewhere)."""
        ...


class SessionPeers(Protocol):
    """What a session's transport asks of the other workers serving the session."""

    async def runs_elsewhere(self, stream_id: str) -> bool:
        """True when a log stream belongs to a request another worker runs."""
        ...

    async def end_if_abandoned(self, stream_id: str) -> None:
        """A stream resumed here, written by another worker, has had no news for a while: if
        that worker died, end the stream with the terminal error its request gets."""
        ...

    async def on_backlog(self) -> None:
        """A standalone message went to the backlog: wake the worker holding the GET stream."""
        ...


class Coordinator(Protocol):
    """Everything the HTTP app asks of the other workers serving its sessions.

    ``stores.LocalCoordinator`` is the one-process default (nothing to coordinate: every
    method does nothing); ``stores.RedisCoordinator`` coordinates workers and hosts through
    Redis and owns its entry and message formats. What the app asks, and when (the rules
    every implementation keeps):

    1. ``peers(session_id)`` when it makes the transport of a session it serves:
       the ``SessionPeers`` that transport takes at construction (resumption of
       a stream another worker writes, and its end if that worker died; a
       backlog another worker's GET must take).
    2. ``request_ids()`` once per session served here: the ids its server-to-client
       requests take (None: the engine's own counter), so an answer arriving at
       any worker names the worker that awaits it.
    3. ``serving(session, request_id)`` around every client request it serves
       (``async with``). It may raise ``DuplicateRequest`` when that id is in
       flight in the session on another worker; it need not look (the transport
       refuses a duplicate within the worker): the steady state of a request asks
       nothing of other workers. One that holds nothing returns ``NOT_HELD``,
       and the app then serves the request without the ``async with``.
    4. ``route_inbound(session_id, message, body)`` for every client notification
       or response: True when the message belongs to other workers and was sent
       there (the app then answers 202 and does nothing else). A cancellation of
       a request this worker does not run may go to every worker.
    5. ``holding_standalone(session)`` around a standalone GET stream held here:
       a newer GET on any worker supersedes it.
    6. ``session_ended(session_id)`` when a session ends for good (DELETE, expiry,
       the server closing it), not when one worker merely stops serving it.
    7. ``start(sessions)`` before the first session is served (``sessions`` finds
       the sessions served here by id, for messages routed to this worker),
       ``stop()`` at shutdown. ``reap_dead_workers()`` fails what workers that
       died were running (the implementation also runs it on its own schedule).
    8. ``holding_legacy(session, on_post)`` around a 2024-11-05 stream held here (instead of
       ``holding_standalone``, which it includes), and ``route_legacy_post(session_id, body)``
       for a POST of a session whose stream this worker does not hold: True when it went to the
       worker holding it, which hands it to that stream's ``on_post``; False when no worker
       holds it (the app answers 404).
    """

    async def start(self, sessions: Callable[[str], CoordinatedSession | None]) -> None: ...

    async def stop(self) -> None: ...

    def peers(self, session_id: str) -> SessionPeers: ...

    def request_ids(self) -> Iterator[RequestId] | None: ...

    def serving(self, session: CoordinatedSession, request_id: RequestId) -> AbstractAsyncContextManager[None]: ...

    async def route_inbound(self, session_id: str, message: JsonRpcMessage, body: bytes) -> bool: ...

    def holding_standalone(self, session: CoordinatedSession) -> AbstractAsyncContextManager[None]: ...

    def holding_legacy(
        self, session: CoordinatedSession, on_post: Callable[[bytes], Awaitable[None]]
    ) -> AbstractAsyncContextManager[None]: ...

    async def route_legacy_post(self, session_id: str, body: bytes) -> bool: ...

    async def session_ended(self, session_id: str) -> None: ...

    async def reap_dead_workers(self) -> list[str]: ...


# --- the backend: every store of one worker, in one object ----------------------------------------


class StoreSizes(Protocol):
    """What a backend reads of the endpoint's limits to size its stores (``HttpLimits`` has them
    all: the stores sit below the HTTP transport and import none of it)."""

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


class Backend:
    """Every store one worker keeps, in one object: what an HTTP app receives (``backend=``).

    ``sessions`` (session records), ``events`` (the streams' events), ``coordinator`` (the
    other workers serving the same sessions), ``tasks`` (task records), ``bus`` (list changes
    and resource updates for ``subscriptions/listen``), ``clock`` (the seconds sessions expire
    by: a clock every worker agrees on, wall-clock seconds, when the stores are shared), and
    ``worker_id`` (this worker's name among the others, which its tasks carry; None in process).

    Make one with the parts, or subclass it to build them (``stores.MemoryBackend``,
    ``stores.RedisBackend``); ``stores.backend_from_url`` picks one by the scheme of a URL.
    The rules:

    1. One backend per worker process, built in that process (after a fork, never before:
       a client of a remote store is not shared across processes), sized by the endpoint's
       limits (``StoreSizes``).
    2. The app that receives a backend owns it: ``start()`` runs before the app serves
       (``McpHttpServer.bind``, the ASGI lifespan's startup, or ``McpHttpApp.start``) and may
       raise ``StoreUnavailable``; ``close()`` runs once, at the app's shutdown, after its
       coordinator stopped. Whoever gave it leaves both to the app (a backend built and never
       given, a probe, is closed by its builder).
    3. ``shared``: other workers see the bus and the task store. The app then gives every
       server it serves this bus and a task runtime over this store (``McpServer.use_shared``),
       in place of the server's own: an event or a task kept in one process would not reach
       the others. Not shared, a server keeps its own bus and tasks (they are in this process
       either way), and the servers a session factory builds share one task runtime over
       ``tasks``.
    """

    __slots__ = ("bus", "clock", "coordinator", "events", "sessions", "shared", "tasks", "worker_id")

    def __init__(
        self,
        *,
        sessions: SessionStore,
        events: EventLog,
        coordinator: Coordinator,
        tasks: TaskStore,
        bus: EventBus,
        clock: Callable[[], float] = time.monotonic,
        worker_id: str | None = None,
        shared: bool = False,
    ) -> None:
        self.sessions = sessions
        self.events = events
        self.coordinator = coordinator
        self.tasks = tasks
        self.bus = bus
        self.clock = clock
        self.worker_id = worker_id
        self.shared = shared

    async def start(self) -> None:
        """Connect what needs connecting (``StoreUnavailable`` when it cannot be reached)."""
        return None

    async def close(self) -> None:
        """Release what ``start`` and the stores hold (connections, tasks writing behind)."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shared={self.shared}, worker_id={self.worker_id!r})"
