"""The ASGI application that owns an MCP endpoint: HTTP rules, sessions, limits.

>>> app = McpHttpApp(build_server, path="/mcp")  # doctest: +SKIP
>>> # uvicorn.run(app) or Starlette(routes=[Mount("/mcp", app=McpHttpApp(build_server))])

Order of checks on every request, cheapest first, so a refusal costs little
and allocates nothing: path, Origin/Host (403), method (405), Accept (406),
Content-Type (415), session id (400/404), protocol version (400), body size
(413), body shape (400). Only a well-formed ``initialize`` without a session
id creates a session (503 when ``max_sessions`` are live).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Callable
from typing import Any, Final, TypeAlias

from ...jsonrpc import JsonRpcRequest, McpError, parse_message
from .accept import accepts_json_and_sse
from .asgi import Receive, Scope, Send
from .errors import INTERNAL_ERROR, SERVER_BUSY, HttpError, write_json_rpc_error
from .events import EventBufferFactory
from .limits import DEFAULT_LIMITS, HttpLimits
from .security import OriginPolicy
from .sessions import Clock, MemorySessionStore, Session, SessionStore, new_session_id
from .streams import KeepaliveTicker
from .transport import (
    ClientDisconnected,
    SseTransport,
    is_json_content_type,
    parse_body,
    read_body,
)

__all__ = ["ACCEPTED_PROTOCOL_VERSIONS", "McpHttpApp", "SessionFactory"]

logger = logging.getLogger("mcp_sse_server.http")

SessionFactory: TypeAlias = Callable[[], Any]
"""Returns a fresh McpServer (or an awaitable of one) for each initialize."""

# 2025-06-18 is what we implement. 2025-03-26 introduced this transport and is
# identical on the wire for single messages; the official conformance suite's
# raw requests send it on sessions negotiated at 2025-06-18, so it is served too.
ACCEPTED_PROTOCOL_VERSIONS: Final = frozenset({b"2025-06-18", b"2025-03-26"})

_ALLOW: Final = [(b"allow", b"GET, POST, DELETE")]
_UNDECIDED: Final = "undecided"  # not a verdict the policy gives (those are None or a sentence)

# Header name -> slot in the per-request list; one dict lookup per header, and
# every other header lands in a last slot nobody reads (no branch per header).
_ORIGIN, _HOST, _ACCEPT, _CTYPE, _CLEN, _SESSION, _VERSION, _LAST_ID, _OTHER = range(9)
_WANTED: Final = {
    b"origin": _ORIGIN,
    b"host": _HOST,
    b"accept": _ACCEPT,
    b"content-type": _CTYPE,
    b"content-length": _CLEN,
    b"mcp-session-id": _SESSION,
    b"mcp-protocol-version": _VERSION,
    b"last-event-id": _LAST_ID,
}

# What MCP clients send; any other value is evaluated (and cached) by accepts_json_and_sse.
_USUAL_ACCEPT: Final = b"application/json, text/event-stream"

_NOT_ACCEPTABLE_POST: Final = "Not acceptable: the Accept header must allow both application/json and text/event-stream"
_NOT_ACCEPTABLE_GET: Final = "Not acceptable: the Accept header must allow text/event-stream"
_MISSING_SESSION: Final = "Bad request: missing Mcp-Session-Id header; only an initialize request may open a session"
_UNKNOWN_SESSION: Final = "Session not found: it expired, was deleted or never existed; initialize a new one"


class McpHttpApp:
    """ASGI app serving MCP Streamable HTTP; every session gets its own server from ``on_session``.

    ``path`` restricts the endpoint to one path (None serves whatever path it
    is mounted at). ``bind_host`` is the address the server listens on (its
    name is accepted in Host). ``clock`` (monotonic seconds) drives session
    expiry and is injectable for tests.
    """

    def __init__(
        self,
        on_session: SessionFactory,
        *,
        path: str | None = None,
        limits: HttpLimits = DEFAULT_LIMITS,
        bind_host: str | None = None,
        session_store: SessionStore | None = None,
        event_buffer_factory: EventBufferFactory | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.on_session = on_session
        self.path = path
        self.limits = limits
        self.sessions: SessionStore = session_store if session_store is not None else MemorySessionStore()
        store = self.sessions
        self._lookup = store.lookup if type(store) is MemorySessionStore else store.get
        self.clock = clock
        self.policy = OriginPolicy(limits.allowed_origins, limits.allowed_hosts, bind_host)
        self._verdicts = self.policy.verdicts  # read inline; the policy fills it
        self.keepalive = KeepaliveTicker(limits.keepalive_interval)
        self._event_buffer_factory = event_buffer_factory
        self._creating = 0
        self._closing = False
        self._closed = False
        self._reaper: asyncio.Task[None] | None = None
        self._on_transport_end = self._transport_ended  # one bound method shared by every session

    # --- ASGI entry ----------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self._lifespan(receive, send)
            elif scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1000})
            return
        try:
            # Every request's path, in this one coroutine down to the transport.
            if self.path is not None and scope["path"] != self.path:
                raise HttpError(404, f"Not found: the MCP endpoint is {self.path}")
            values: list[bytes | None] = [None] * 9
            slot = _WANTED.get
            for name, value in scope["headers"]:
                values[slot(name, _OTHER)] = value
            refusal = self._verdicts.get((values[_ORIGIN], values[_HOST]), _UNDECIDED)
            if refusal is _UNDECIDED:
                refusal = self.policy.check(values[_ORIGIN], values[_HOST])
            if refusal is not None:
                logger.info("refused a request: %s (Origin %r, Host %r)", refusal, values[_ORIGIN], values[_HOST])
                raise HttpError(403, refusal)
            method = scope["method"]
            if method != "POST":
                if method == "GET":
                    await self._get(scope, receive, send, values)
                elif method == "DELETE":
                    await self._delete(values, send)
                else:
                    raise HttpError(
                        405,
                        f"Method not allowed: {method}; the MCP endpoint takes GET, POST and DELETE",
                        headers=_ALLOW,
                    )
                return
            accept = values[_ACCEPT]
            if accept != _USUAL_ACCEPT and not all(accepts_json_and_sse(accept)):
                raise HttpError(406, _NOT_ACCEPTABLE_POST)
            content_type = values[_CTYPE]
            if content_type != b"application/json" and not is_json_content_type(content_type):
                raise HttpError(415, "Unsupported media type: the body must be application/json")
            session_id = values[_SESSION]
            if session_id is None:
                await self._open_session(scope, receive, send, values[_CLEN])
                return
            session = self._session(session_id, values[_VERSION])
            body = await read_body(receive, self.limits.max_request_bytes, values[_CLEN])
            try:
                message = parse_message(body)
            except McpError as error:
                raise HttpError(400, error.message, error.code) from None
            if type(message) is JsonRpcRequest:
                if self._closing:
                    raise _shutting_down()
                await session.transport.serve_request(message, receive, send)
            else:
                await session.transport.handle_post(scope, receive, send, message)
        except HttpError as error:
            await error.write(send)
        except ClientDisconnected:
            pass
        except Exception:
            # A bug of ours or of a pluggable store: the detail goes to the log only.
            logger.exception("the MCP endpoint failed on %s %s", scope.get("method"), scope.get("path"))
            try:
                await write_json_rpc_error(send, 500, INTERNAL_ERROR, "Internal error")
            except Exception:
                pass  # the response had started; the server closes the connection

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # --- methods -------------------------------------------------------------------

    async def _get(self, scope: Scope, receive: Receive, send: Send, values: list[bytes | None]) -> None:
        if not accepts_json_and_sse(values[_ACCEPT])[1]:
            raise HttpError(406, _NOT_ACCEPTABLE_GET)
        session_id = values[_SESSION]
        if session_id is None:
            raise HttpError(400, "Bad request: a GET stream needs the Mcp-Session-Id header of an initialized session")
        session = self._session(session_id, values[_VERSION])
        if self._closing:
            raise _shutting_down()
        await session.transport.handle_get(scope, receive, send, values[_LAST_ID])

    async def _delete(self, values: list[bytes | None], send: Send) -> None:
        session_id = values[_SESSION]
        if session_id is None:
            raise HttpError(400, "Bad request: DELETE needs the Mcp-Session-Id header of the session to end")
        session = self._session(session_id, values[_VERSION])
        await self._end(session)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    # --- sessions ------------------------------------------------------------------

    def _session(self, session_id: bytes, version: bytes | None) -> Session:
        """The live session for a request (refreshing its idle clock), or HttpError 404/400."""
        session = self._lookup(session_id.decode("latin-1"))
        if session is None or session.closing:
            raise HttpError(404, _UNKNOWN_SESSION)
        now = self.clock()
        if session.expired(now, self.limits.session_idle_timeout, self.limits.session_max_lifetime):
            self._end_soon(session)
            raise HttpError(404, _UNKNOWN_SESSION)
        if version is not None and version not in ACCEPTED_PROTOCOL_VERSIONS:
            raise _bad_version(version)
        session.last_seen = now
        return session

    async def _open_session(self, scope: Scope, receive: Receive, send: Send, content_length: bytes | None) -> None:
        message = parse_body(await read_body(receive, self.limits.max_request_bytes, content_length))
        if type(message) is not JsonRpcRequest or message.method != "initialize":
            raise HttpError(400, _MISSING_SESSION)
        if self._closing:
            raise _shutting_down()
        limit = self.limits.max_sessions
        if len(self.sessions) + self._creating >= limit:
            await self.reap_expired()
            if len(self.sessions) + self._creating >= limit:
                raise HttpError(
                    503,
                    f"Service unavailable: this server already has its maximum of {limit} sessions; try again later",
                    SERVER_BUSY,
                    headers=[(b"retry-after", b"5")],
                )
        session_id = new_session_id()
        transport = SseTransport(
            session_id,
            limits=self.limits,
            event_buffer_factory=self._event_buffer_factory,
            keepalive=self.keepalive,
            on_end=self._on_transport_end,
        )
        self._creating += 1
        try:
            server = self.on_session()
            if inspect.isawaitable(server):
                server = await server
            await server.connect(transport)
        except Exception:
            logger.exception("on_session failed: no session was created")
            raise HttpError(500, "Internal error: the server could not start a session") from None
        finally:
            self._creating -= 1
        session = Session(session_id, transport, server, self.clock())
        self.sessions.add(session)
        self._start_reaper()
        try:
            await transport.handle_post(scope, receive, send, message)
        finally:
            if not transport.initialized:
                # A failed initialize (or a client gone before the reply) leaves nothing behind.
                await self._end(session)

    def _transport_ended(self, transport: SseTransport) -> None:
        # The server side closed the session (McpServer.close(), say): forget it.
        if transport.session_id is not None:
            session = self.sessions.remove(transport.session_id)
            if session is not None:
                session.closing = True

    async def _end(self, session: Session) -> None:
        session.closing = True
        self.sessions.remove(session.id)
        try:
            await session.transport.close()
        except Exception:
            logger.exception("closing session %s failed", session.id[:8])

    def _end_soon(self, session: Session) -> None:
        session.closing = True
        self.sessions.remove(session.id)
        task = asyncio.get_running_loop().create_task(self._end(session))
        _background.add(task)
        task.add_done_callback(_background.discard)

    async def reap_expired(self) -> int:
        """End every session past its idle timeout or lifetime (by ``clock``); returns how many."""
        now = self.clock()
        idle, lifetime = self.limits.session_idle_timeout, self.limits.session_max_lifetime
        expired = [session for session in self.sessions if session.expired(now, idle, lifetime)]
        for session in expired:
            logger.info("session %s expired", session.id[:8])
            await self._end(session)
        return len(expired)

    def _start_reaper(self) -> None:
        if self._reaper is None and not self._closing:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_forever())

    async def _reap_forever(self) -> None:
        try:
            while len(self.sessions):
                await asyncio.sleep(self.limits.reap_interval)
                await self.reap_expired()
        finally:
            self._reaper = None

    @property
    def inflight(self) -> int:
        """Requests in flight across all sessions."""
        return sum(session.transport.inflight for session in self.sessions)

    # --- shutdown --------------------------------------------------------------------

    async def shutdown(self, deadline: float | None = None) -> None:
        """Refuse new sessions and requests, let in-flight ones finish within
        ``deadline`` seconds (``shutdown_deadline`` by default), then end every
        stream and session."""
        if self._closed:
            return
        self._closing = True
        wait = self.limits.shutdown_deadline if deadline is None else deadline
        loop = asyncio.get_running_loop()
        until = loop.time() + wait
        # Polling only happens during shutdown; the request path stays free of bookkeeping.
        while self.inflight and loop.time() < until:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        self._closed = True
        for session in self.sessions:
            await self._end(session)
        self.keepalive.close()
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None


_background: set[asyncio.Task[Any]] = set()


def _bad_version(version: bytes) -> HttpError:
    return HttpError(
        400,
        f"Bad request: unsupported MCP-Protocol-Version {version.decode('latin-1')!r}; this server speaks 2025-06-18",
    )


def _shutting_down() -> HttpError:
    return HttpError(
        503, "Service unavailable: the server is shutting down", SERVER_BUSY, headers=[(b"connection", b"close")]
    )
