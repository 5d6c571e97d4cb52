"""The sessions this process serves over HTTP: find, open, adopt, end, expire, shut down.

Rules (the HTTP side of a session's life; ``session.py`` has the protocol side):

1. A session's record (plain data) is in the ``SessionStore``; its live part,
   the transport and the ``ServerSession``, is a ``LiveSession`` of this process.
2. Only ``open`` creates a session, for a well-formed ``initialize``, or for
   a 2024-11-05 stream whose initialize follows (``legacy_sse.py``); 503 once
   ``max_sessions`` are live. A failed initialize leaves nothing behind.
3. ``lookup`` answers 404 for a session that is unknown, ended, expired, or
   still being initialized on another worker, and refreshes its idle clock at
   most once per ``touch_interval``: a second in process; with a shared store,
   a sixtieth of the idle timeout (at most 30 s), written behind, so the store's
   ``last_seen`` may lag by that much and a shared session expires that much
   later (``idle_timeout`` is the limit plus that grace). In process, a session
   served here is read from its live copy alone: the store holds the same record.
4. ``end`` ends a session for good: its record, its transport, its event log
   and what the coordinator keeps for it. ``release`` only stops serving it
   here: with a shared store, other workers go on serving it.
5. Expired sessions are ended by a reaper task that runs while sessions live.
6. With a shared store (``SharedSessionDirectory``), any worker may serve any
   session: a worker that sees a session first adopts it from its record, its
   copy of the record follows the store's, a changed record is written back,
   and shutting down releases sessions instead of ending them.
8. A shared store's copy is trusted, and a request served from it without
   asking the store, while the store announces every change of its records
   (``SessionStore.changes``) and none was announced for it since it was read.
   A request first yields once to the event loop, so an announcement that
   reached this worker before the request did is taken in first (a DELETE
   answered on another worker is a 404 here at once). A copy that looks
   expired is read again: another worker may have seen the client since.
   A write of a stale copy is refused by the store (``StaleRecord``): the
   change is made again on the store's newer record.
7. On a server that checks bearer tokens, a session is bound to the principal
   of the token that opened it; a request with another principal's token is
   answered 404, as for an unknown session.

``SessionDirectory`` is the in-process case; ``directory_for`` picks one by
``SessionStore.shared``, once, when the app is made.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, Final

from ...engine.background import in_background
from ...engine.jsonrpc import JsonRpcMessage, RequestId
from ...engine.records import RecordChange, SessionRecord
from ...engine.server import McpServer
from ...engine.session import ServerSession
from ...engine.stores import Coordinator, EventLog, RecordFeed, SessionStore, StaleRecord, StoreUnavailable
from .errors import SERVER_BUSY, UNKNOWN_SESSION, HttpError
from .sessions import Clock, new_session_id
from .settings import HttpSettings
from .streams import KeepaliveTicker
from .transport import SseTransport

__all__ = ["LiveSession", "ServerSource", "Serving", "SessionDirectory", "SharedSessionDirectory", "directory_for"]

logger = logging.getLogger("mcp_sse_server.http")

# A session's last activity is written at most this often (seconds) in process (rule 3).
_TOUCH_GRANULARITY: Final = 1.0

# With a shared store: at most once per this fraction of the idle timeout, and at most this long
# (below the Redis store's key expiry slack, 60 s, so a key never outlives its grace unwritten).
_SHARED_TOUCH_FRACTION: Final = 1 / 60
_SHARED_TOUCH_MAX: Final = 30.0

# How many times a change is made again on a record that other workers keep writing (rule 8).
_WRITE_ATTEMPTS: Final = 5


class LiveSession:
    """A session this process serves: its ``record`` (plain data, also in the store),
    its ``transport``, its ``session`` (the ``ServerSession`` that sends to the client) and
    the ``server`` serving it.

    It is also what a ``Coordinator`` asks of a session (``CoordinatedSession``)."""

    __slots__ = ("closing", "record", "server", "session", "transport")

    def __init__(
        self, record: SessionRecord, transport: SseTransport, session: ServerSession, server: McpServer
    ) -> None:
        self.record = record
        self.transport = transport
        self.session = session
        self.server = server
        self.closing = False

    @property
    def session_id(self) -> str:
        return self.record.id

    def runs(self, request_id: RequestId) -> bool:
        return self.transport.runs(request_id)

    def on_message(self, message: JsonRpcMessage) -> None:
        self.transport.deliver(message)

    async def end_cancelled(self, params: dict[str, Any]) -> None:
        await self.transport.end_cancelled(params)

    async def deliver_backlog(self) -> None:
        await self.transport.deliver_backlog()

    async def end_standalone(self) -> None:
        await self.transport.end_standalone()


ServerSource = Callable[[], Awaitable[McpServer]]
"""Returns the ``McpServer`` for a new session (the one shared server, or a fresh one)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Serving:
    """How a directory's sessions are served: the app's settings, given once."""

    servers: ServerSource  # the McpServer of a new session
    coordinator: Coordinator  # the other workers serving these sessions (LocalCoordinator: none)
    settings: HttpSettings  # the limits, and JSON replies (replies that go out whole are application/json)
    keepalive: KeepaliveTicker
    clock: Clock  # seconds, for expiry


class SessionDirectory:
    """The sessions this process serves, by id, over a store of their records (rules above)."""

    shared = False  # other workers never serve these sessions

    def __init__(self, store: SessionStore, events: EventLog, serving: Serving) -> None:
        self.store = store
        self.events = events
        self.servers = serving.servers
        self.coordinator = serving.coordinator
        self.limits = serving.settings.limits
        self.keepalive = serving.keepalive
        self.clock = serving.clock
        self.json_response = serving.settings.json_response
        self.closing = False
        self.touch_interval = self._touch_interval(self.limits.session_idle_timeout)
        self.idle_timeout = self.limits.session_idle_timeout + (self.touch_interval if self.shared else 0.0)
        self._live: dict[str, LiveSession] = {}
        self._creating = 0
        self._reaper: asyncio.Task[None] | None = None

    @staticmethod
    def _touch_interval(idle_timeout: float) -> float:
        """Seconds between two writes of a session's ``last_seen`` (rule 3)."""
        return _TOUCH_GRANULARITY

    @property
    def live(self) -> Mapping[str, LiveSession]:
        """The sessions this process serves now, by id (read-only)."""
        return self._live

    def __iter__(self) -> Iterator[LiveSession]:
        return iter(list(self._live.values()))

    def find(self, session_id: str) -> LiveSession | None:
        """The live session with this id, unless it is closing (for messages routed here)."""
        live = self._live.get(session_id)
        return None if live is None or live.closing else live

    # --- one request ---------------------------------------------------------------------

    async def lookup(self, session_id: bytes, principal: list[str | None] | None = None) -> LiveSession:
        """The live session a request names (its idle clock refreshed), or HttpError 404; also 404
        for a request of another ``principal`` than the one that opened it (rule 7)."""
        key = session_id.decode("latin-1")
        live = self._live.get(key)
        if live is None or live.closing or self.shared:
            live = await self._from_store(key, live)
        now = self.clock()
        record = live.record
        if record.principal != principal:
            raise HttpError(404, UNKNOWN_SESSION)  # as if it did not exist: a session id is no credential
        if record.expired(now, self.idle_timeout, self.limits.session_max_lifetime):
            self._end_soon(live)
            raise HttpError(404, UNKNOWN_SESSION)
        if now - record.last_seen >= self.touch_interval:
            await self.store.touch(record, now)
        return live

    async def check(self, session_id: str, principal: list[str | None] | None = None) -> SessionRecord:
        """The record of a session another worker serves, judged as ``lookup`` judges it (HttpError
        404 for one unknown, ended, expired or of another ``principal``), its idle clock refreshed;
        nothing of it is served here (a 2024-11-05 POST on its way to the worker holding its stream)."""
        record = await self.store.get(session_id)
        now = self.clock()
        if (
            record is None
            or record.principal != principal
            or record.expired(now, self.idle_timeout, self.limits.session_max_lifetime)
        ):
            raise HttpError(404, UNKNOWN_SESSION)
        if now - record.last_seen >= self.touch_interval:
            await self.store.touch(record, now)
        return record

    async def _from_store(self, key: str, live: LiveSession | None) -> LiveSession:
        """The session as the store has it. In process, a session served here is only read from
        its live copy (the store holds the same record), so this runs for sessions not served
        here; with a shared store, for every request (another worker may have changed or ended it)."""
        record = await self.store.get(key)
        if record is None:
            if live is not None and not live.closing:
                self._end_soon(live)  # ended by another worker (DELETE, expiry): this copy goes too
            raise HttpError(404, UNKNOWN_SESSION)
        if live is None:
            if record.revision is None:  # still being initialized, on another worker
                raise HttpError(404, UNKNOWN_SESSION)
            return await self._adopt(record)
        if live.closing:
            raise HttpError(404, UNKNOWN_SESSION)
        if live.record is not record:
            self._follow(live, record)
        return live

    def _follow(self, live: LiveSession, record: SessionRecord) -> None:
        """The store returned a record other than the live one (only a shared store does)."""

    # --- opening ---------------------------------------------------------------------------

    async def open(self, principal: list[str | None] | None = None, *, resumable: bool = True) -> LiveSession:
        """A new session for an ``initialize`` (the caller serves it, then ``opened``), bound to
        the ``principal`` of the request's token, if the server checks tokens. ``resumable``
        False: its streams never resume (a 2024-11-05 stream's session, opened before its
        initialize: ``legacy_sse.py``)."""
        limit = self.limits.max_sessions
        if await self.store.count() + self._creating >= limit:
            await self.reap_expired()
            if await self.store.count() + self._creating >= limit:
                raise HttpError(
                    503,
                    f"Service unavailable: this server already has its maximum of {limit} sessions; try again later",
                    SERVER_BUSY,
                    headers=[(b"retry-after", b"5")],
                )
        now = self.clock()
        record = SessionRecord(new_session_id(), now, now, principal=principal)
        transport = self._transport(record, resumable)
        self._creating += 1
        try:
            server = await self.servers()
            session = await server.connect(transport, record=record)
        except Exception:
            logger.exception("could not start a session: no session was created")
            raise HttpError(500, "Internal error: the server could not start a session") from None
        finally:
            self._creating -= 1
        await self.store.create(record)
        live = LiveSession(record, transport, session, server)
        self._watch_record(session)
        await self._serve_here(live)
        return live

    async def opened(self, live: LiveSession) -> None:
        """The initialize of a new session was answered: keep it, or forget it if it failed."""
        if not live.transport.initialized:
            # A failed initialize (or a client gone before the reply) leaves nothing behind.
            await self.end(live)
        else:
            await self.store.save(live.record)

    def _watch_record(self, session: ServerSession) -> None:
        """Where a session's changed record goes (only a shared store needs to hear)."""

    async def _adopt(self, record: SessionRecord) -> LiveSession:
        """Serve here a session this process did not open (another worker did): a local
        transport and session resumed from the record, without a visible handshake."""
        transport = self._transport(record)
        try:
            server = await self.servers()
            session = await server.connect(transport, record=record)
            session.resume()
            self._watch_record(session)
        except Exception:
            logger.exception("could not resume session %s on this worker", record.id[:8])
            raise HttpError(500, "Internal error: the server could not resume the session") from None
        live = self._live.get(record.id)
        if live is None:  # (another request of the session may have adopted it meanwhile)
            live = LiveSession(record, transport, session, server)
            await self._serve_here(live)
        return live

    async def _serve_here(self, live: LiveSession) -> None:
        self._live[live.record.id] = live
        coordinator = self.coordinator
        await coordinator.start(self.find)
        ids: Iterator[RequestId] | None = coordinator.request_ids()
        if ids is not None:
            live.session.connection.name_requests(ids)
        self._start_reaper()

    def _transport(self, record: SessionRecord, resumable: bool = True) -> SseTransport:
        return SseTransport(
            record.id,
            limits=self.limits,
            event_log=self.events,
            keepalive=self.keepalive,
            on_end=self._transport_ended,
            record=record,
            peers=self.coordinator.peers(record.id),
            shared_log=self.shared,
            json_response=self.json_response,
            resumable=resumable,
        )

    # --- ending ----------------------------------------------------------------------------

    def _transport_ended(self, transport: SseTransport) -> None:
        # The server side closed the session (ServerSession.close(), say): forget it.
        if transport.session_id is None:
            return
        live = self._live.pop(transport.session_id, None)
        if live is not None and not live.closing:
            live.closing = True
            in_background(self._forget(transport.session_id))

    async def _forget(self, session_id: str) -> None:
        await self.store.delete(session_id)
        await self.coordinator.session_ended(session_id)

    async def end(self, live: LiveSession) -> None:
        """End a session for good: its record, its streams, what the coordinator keeps of it."""
        live.closing = True
        session_id = live.record.id
        if self._live.get(session_id) is live:
            del self._live[session_id]
        try:
            await self.store.delete(session_id)
            await live.transport.close()
            await self.coordinator.session_ended(session_id)
        except Exception:
            logger.exception("closing session %s failed", session_id[:8])

    async def release(self, live: LiveSession) -> None:
        """Stop serving a session here without ending it (its record stays in the store)."""
        live.closing = True
        if self._live.get(live.record.id) is live:
            del self._live[live.record.id]
        try:
            await live.transport.release()
        except Exception:
            logger.exception("releasing session %s failed", live.record.id[:8])

    def _end_soon(self, live: LiveSession) -> None:
        live.closing = True
        in_background(self.end(live))

    async def reap_expired(self) -> int:
        """End every session past its idle timeout or lifetime (by ``clock``); returns how many."""
        expired = await self.store.expired(self.clock(), self.idle_timeout, self.limits.session_max_lifetime)
        for session_id in expired:
            logger.info("session %s expired", session_id[:8])
            live = self._live.get(session_id)
            if live is not None:
                await self.end(live)
            else:
                await self.store.delete(session_id)
                await self.coordinator.session_ended(session_id)
        return len(expired)

    def _start_reaper(self) -> None:
        if self._reaper is None and not self.closing:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_forever())

    async def _reap_forever(self) -> None:
        try:
            while self._live:
                await asyncio.sleep(self.limits.reap_interval)
                await self.reap_expired()
        finally:
            self._reaper = None

    async def shutdown(self) -> None:
        """Stop serving every session (ending them, or releasing them to other workers)."""
        self.closing = True
        for live in self:
            await self._let_go(live)
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None

    async def _let_go(self, live: LiveSession) -> None:
        await self.end(live)


class SharedSessionDirectory(SessionDirectory):
    """The sessions this worker serves of those every worker shares through the store (rule 6)."""

    shared = True

    @staticmethod
    def _touch_interval(idle_timeout: float) -> float:
        return min(idle_timeout * _SHARED_TOUCH_FRACTION, _SHARED_TOUCH_MAX)

    def _follow(self, live: LiveSession, record: SessionRecord) -> None:
        """Bring this worker's copy up to date with the store's record, in place (the transport
        and the ServerSession hold the same object); another worker may have changed it."""
        copy = live.record
        level, visibility = copy.log_level, copy.visibility
        for field in dataclasses.fields(SessionRecord):
            value = getattr(record, field.name)
            if getattr(copy, field.name) != value:  # (equal values stay: the session may hold them too)
                setattr(copy, field.name, value)
        if copy.log_level != level or copy.visibility != visibility:
            live.session.record_followed()

    async def opened(self, live: LiveSession) -> None:
        await super().opened(live)
        if live.transport.initialized:
            # The client's notifications/initialized may reach another worker: past its initialize,
            # the session is served here as ready (as an adopted copy is).
            live.session.ready = True

    def __init__(self, store: SessionStore, events: EventLog, serving: Serving) -> None:
        super().__init__(store, events, serving)
        self._feed: RecordFeed | None = None
        self._fresh: set[str] = set()  # sessions whose copy here is the store's record (rule 8)
        self._on_record_change = self._save_soon  # (one bound method for every session, not one each)

    async def lookup(self, session_id: bytes, principal: list[str | None] | None = None) -> LiveSession:
        key = session_id.decode("latin-1")
        feed = self._feed
        if feed is None:
            feed = await self._watch()
        elif key in self._fresh and feed.trusted:
            await asyncio.sleep(0)  # the feed takes in what this worker already received (rule 8)
            live = self._live.get(key)
            if live is not None and not live.closing and key in self._fresh and feed.trusted:
                record, now = live.record, self.clock()
                if record.principal != principal:
                    raise HttpError(404, UNKNOWN_SESSION)  # (as SessionDirectory.lookup answers)
                if not record.expired(now, self.idle_timeout, self.limits.session_max_lifetime):
                    if now - record.last_seen >= self.touch_interval:
                        await self.store.touch(record, now)
                    return live
        announced = None if feed is None else feed.announced
        live = await super().lookup(session_id, principal)
        if feed is not None and feed.trusted and feed.announced == announced and not live.closing:
            self._fresh.add(live.record.id)  # (nothing announced while it was read: this copy is the record)
        return live

    async def _watch(self) -> RecordFeed | None:
        """Subscribe to the store's record changes (until then, and if that fails, every request
        reads the store; the next request tries again)."""
        feed = self.store.changes()
        if feed is None:
            return None
        try:
            await feed.start(self._record_changed)
        except StoreUnavailable as error:
            logger.warning("cannot subscribe to session record changes (records are read each time): %s", error)
            await feed.aclose()
            return None
        if self._feed is not None:  # (another request subscribed meanwhile)
            await feed.aclose()
            return self._feed
        self._feed = feed
        return feed

    def _record_changed(self, session_id: str | None, version: int | None) -> None:
        if session_id is None:
            self._fresh.clear()
            return
        live = self._live.get(session_id)
        if version is None or live is None or live.record.version < version:
            self._fresh.discard(session_id)  # (a version the copy has is this worker's own write)

    def _watch_record(self, session: ServerSession) -> None:
        session.on_record_change = self._on_record_change

    def _save_soon(self, record: SessionRecord, change: RecordChange) -> None:
        """Write a changed record back to the shared store (log level, subscriptions)."""
        in_background(self._write_back(record, change))

    async def _write_back(self, record: SessionRecord, change: RecordChange) -> None:
        """Save ``record``; a stale copy (another worker wrote the record since it was read) takes
        the store's record with ``change`` made again on it, and is saved again (rule 8)."""
        for _ in range(_WRITE_ATTEMPTS):
            try:
                await self.store.save(record)
                return
            except StoreUnavailable as error:
                self._fresh.discard(record.id)
                logger.warning("session %s: a change of its record was not written: %s", record.id[:8], error)
                return
            except StaleRecord:
                self._fresh.discard(record.id)
                current = await self.store.get(record.id)
                if current is None:
                    return  # ended meanwhile: nothing to write back
                change(current)
                live = self._live.get(record.id)
                if live is not None and live.record is record:
                    self._follow(live, current)  # (in place: ``record`` is now the newer one, changed)
                else:
                    record = current
        logger.warning("session %s: its record kept changing elsewhere; a change was not written", record.id[:8])

    async def end(self, live: LiveSession) -> None:
        self._fresh.discard(live.record.id)
        await super().end(live)

    async def release(self, live: LiveSession) -> None:
        self._fresh.discard(live.record.id)
        await super().release(live)

    async def shutdown(self) -> None:
        await super().shutdown()
        feed, self._feed = self._feed, None
        self._fresh.clear()
        if feed is not None:
            await feed.aclose()

    async def _let_go(self, live: LiveSession) -> None:
        await self.release(live)  # the session lives on: other workers serve it

    async def reap_expired(self) -> int:
        """Also end the copies served here of sessions another worker ended (a DELETE there, an
        expiry it reaped first): their GET streams and calls stop within one sweep."""
        reaped = await super().reap_expired()
        copies = [session_id for session_id, live in self._live.items() if not live.closing]
        if copies:
            kept = await self.store.present(copies)
            for session_id in copies:
                live = self._live.get(session_id)
                if session_id not in kept and live is not None and not live.closing:
                    logger.info("session %s ended on another worker", session_id[:8])
                    await self.end(live)
                    reaped += 1
        return reaped


def directory_for(store: SessionStore, events: EventLog, serving: Serving) -> SessionDirectory:
    """The directory of the sessions in ``store``: shared with other workers when the store is."""
    kind = SharedSessionDirectory if store.shared else SessionDirectory
    return kind(store, events, serving)
